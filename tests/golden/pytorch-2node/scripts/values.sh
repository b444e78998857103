#!/bin/bash
# This project's values, read by scripts/lib/job.sh and scripts/lib/run.sh (the jobs' library,
# the same in every project) and by the Python helpers in scripts/lib/. lumi-scaffold writes
# this file from .copier-answers.yml: `lumi-scaffold update -d NAME=VALUE` changes an
# answer and this file with it. Variables named as ${NAME} in a value are expanded where
# the value is used, in the job. Override a value for one job from the environment
# instead (SIF=..., BINDS=..., DATA_DIR=..., README.md says which).
# shellcheck disable=SC2034,SC2016  # the scripts that source this file read every name, and expand ${NAME}
{

# LUMI: LUMI-G (MI250X, Slingshot-11, Singularity).
site='LUMI'
project_name='demo'
package='demo'
# A job starts from no modules but the ones loaded below (module purge).
module_reset='purge'
# Node-local temporary storage (RAM, counted in the job's memory): each job's TMPDIR, staged data and kernel caches.
node_tmp='/tmp'
# AMD GPUs: Slurm gives each task its GPUs in ROCR_VISIBLE_DEVICES, collectives run on RCCL,
# and rocm-smi shows the GPUs (scripts/attach.sh --smi).
gpu_vendor='amd'
gpu_devices_variable='ROCR_VISIBLE_DEVICES'
gpu_monitor='rocm-smi'
collectives='RCCL'

# The container image (SIF=/path/to/image.sif sbatch ... uses another).
# LAIF lumi-multitorch full, ROCm 7.0, torch 2.10 (2026-05-13) [WS-2026, LAIF-R]
image='/appl/local/laifs/containers/lumi-multitorch-u24r70f21m50t210-20260513_121430/lumi-multitorch-full-u24r70f21m50t210-20260513_121430.sif'
# The image's known issues, named by scripts/lib/fault.py when a job hangs with no rank to blame ('': none).
image_known_issues=''
# (The image's path names no environment variable to check.)
image_variable=''
# Every step runs through this command, the binds and the image.
container_command=('singularity' 'run')
# (The image's Python needs no activation.)
activate_variable=''
# lumi-aif-singularity-bindings: sets SINGULARITY_BIND for the workspaces, /appl and /var/spool/slurmd [TM-Cont, WS-06-2026, UG-PR315]
# Where LUMI has the Local-LAIF module, it makes lumi-aif-singularity-bindings loadable; where it has not (yet),
# `module use` its directory does. Which form the site documents may change (UNCONFIRMED):
# either works here.
# Each step: `load NAME`, `use DIRECTORY`, or `load-or-use NAME DIRECTORY`.
modules=('load-or-use Local-LAIF /appl/local/laifs/modules' 'load lumi-aif-singularity-bindings')
# Real roots of symlinked file systems (Singularity does not follow symlinks in
# bind paths) and what this image generation needs. [EBC-PT], [WS-09]
# BINDS=... sbatch ... binds others.
binds='/pfs'

# Data and outputs: never under $HOME (README.md). DATA_DIR=..., OUTPUT_ROOT=... and
# RUN_NAME=... sbatch ... override them.
# (The storage paths name no environment variables.)
storage_variables=()
dataset_dir='/scratch/project_465000000/datasets/demo'
output_root='/scratch/project_465000000/${USER}/demo/outputs'
# Every job of one run writes into OUTPUT_ROOT/RUN_NAME and resumes from there.
run_name='demo'
# 1: scripts/lib/prestage.sh extracts dataset_archive into node_tmp on every node.
prestage='0'
dataset_archive=''
# 1: the jobs restore the kernel caches from the project's cache area when they start
# and save them when training ends (scripts/lib/caches.sh; KEEP_KERNEL_CACHES=0: off).
kernel_caches='1'

# Experiment tracking with TensorBoard (scripts/lib/python/runlog.py, rank 0): every job of a run
# logs into one tracked run, its id kept in RUN_DIR/tracking.json. TRACKING=none sbatch ...
# leaves a job out of it.
tracking='tensorboard'
# (Nothing to set for it.)
tracking_defaults=()

# Billing, for the job report's GPU-hours: the rate of one node as each job file's own #SBATCH lines
# ask for it (the job multiplies by its nodes; sbatch --nodes counts, other options given to
# sbatch on the command line do not).
# preflight: 4 GPU-hours per node-hour, whole nodes [UG-bill]
billing_preflight='4 GPU-hours'
# profile: 4 GPU-hours per node-hour, whole nodes [UG-bill]
billing_profile='4 GPU-hours'
# smoke: max(ceil(cores/8), ceil(mem/64GB), GPUs) x 0.5 GPU-hours per hour on each node [UG-bill, TM-Slurm]
billing_smoke='0.5 GPU-hours'
# sweep: 4 GPU-hours per node-hour, whole nodes [UG-bill]
billing_sweep='4 GPU-hours'
# train: 4 GPU-hours per node-hour, whole nodes [UG-bill]
billing_train='4 GPU-hours'
# Energy, for the job report: the directory of the nodes' energy counters (joules), read on every node at each
# job's start and end, outside the container (scripts/lib/nodes.sh) [HPE-PM, AS-1385]; '': the site's data names none,
# and the report says 'not measured'. ENERGY_COUNTERS=/path sbatch ... reads another.
energy_counters='/sys/cray/pm_counters'

# How the training and profiling ranks start (make_step in scripts/lib/job.sh):
# One task per GPU, each bound with --cpu-bind=mask_cpu to its GPU's 7 cores
# (the site's masks, local rank i -> GPU i). [AIG-05], [TM-Bind]
launcher='srun'
# srun's options for the training step beyond the job's.
srun_options=()
# srun's --cpu-bind for the training step ('' for none).
cpu_bind='verbose,mask_cpu:0x00fe000000000000,0xfe00000000000000,0x0000000000fe0000,0x00000000fe000000,0x00000000000000fe,0x000000000000fe00,0x000000fe00000000,0x0000fe0000000000'
# (Not used by the srun launcher.)
numa_binding=''
# Ranks each task starts.
ranks_per_task='1'
# 1: the jobs set MASTER_ADDR and MASTER_PORT for torch.distributed's rendezvous. [WS-09], [AIG-05]
rendezvous='1'
# 1: CHAIN=N sbatch jobs/train.sbatch queues the run's next jobs.
chains='1'
chains_refused=''
# Seconds before the time limit at which Slurm warns the training job.
signal_lead='300'
profile_signal_lead='300'

# The progress watchdog's default limits (watch_progress in scripts/lib/job.sh), each from the job's
# time limit: (percent of it, floor in seconds, seconds per node added to the floor, cap in seconds).
# A job file or the environment may set one in seconds (0: off): PROGRESS_TIMEOUT=600 sbatch ...
startup_timeout=('6' '180' '2' '1800')
progress_timeout=('3' '60' '0' '1200')
phase_timeout=('6' '180' '0' '3600')
output_timeout=('20' '300' '0' '7200')
# Days a node with evidence against it stays in the node ledger (0: none).
ledger_days='7'
# Where LUMI-G (MI250X, Slingshot-11, Singularity) takes the report of a suspect node (the ledger prints one).
support='https://lumi-supercomputer.eu/user-support/need-help/'

# Inside the container (scripts/lib/run.sh, every rank).
# NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3: RCCL bootstrap over the Slingshot interfaces, not the management network [WS-09, WS-2026]
# HSA_FORCE_FINE_GRAIN_PCIE=1: fine-grained PCIe memory, recommended with the RCCL OFI plugin [WS-2026]
# FI_MR_CACHE_MONITOR=userfaultfd: libfabric memory-registration cache monitor (userfaultfd avoids hangs seen in LAIF images; kdreg2 is announced as the default) [WS-2026, AIG-PR118]
# FI_CXI_DISABLE_HOST_REGISTER=1: HPE RCCL tuning for the CXI provider [WS-2026]
# FI_CXI_DEFAULT_CQ_SIZE=131072: larger completion queue avoids CXI queue overruns at scale [WS-2026]
# (not set) FI_CXI_RDZV_PROTO=alt_read: off: needs the job option --network=disable_rdzv_get (fi_cxi), UNCONFIRMED on LUMI; the 2026 workshop sets it [WS-2026, FI-CXI, OLCF-PT]
# FI_CXI_RX_MATCH_MODE=hybrid: allow software matching when hardware match entries run out [WS-2026]
# (not set) FI_CXI_RDZV_EAGER_SIZE=0: off: one of HPE's rendezvous settings for alt_read, left out with FI_CXI_RDZV_PROTO (the set goes together or not at all) [WS-2026, HPE-RCCL]
# (not set) FI_CXI_RDZV_THRESHOLD=0: off: one of HPE's rendezvous settings for alt_read, left out with FI_CXI_RDZV_PROTO (the set goes together or not at all) [WS-2026, HPE-RCCL]
# (not set) FI_CXI_RDZV_GET_MIN=0: off: HPE says to use it with FI_CXI_RDZV_PROTO=alt_read, left out with it (the set goes together or not at all) [WS-2026, HPE-RCCL]
# FI_CXI_DEFAULT_TX_SIZE=2048: HPE RCCL tuning for the CXI provider [WS-2026]
# TOKENIZERS_PARALLELISM=false: Hugging Face tokenizers would fork threads into DataLoader workers [WS-ref]
# (not set, a known issue with this image) NCCL_NET_GDR_LEVEL: exporting it (PHB or SYS) can make torch.distributed jobs hang with LAIF images (reported on the ROCm 7.0 ones); leave it unset, RCCL detects the level from the PCI topology; the AI Guide dropped it with no loss of speed [LAIF-I30, AIG-PR97]
image_env=('NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3' 'HSA_FORCE_FINE_GRAIN_PCIE=1' 'FI_MR_CACHE_MONITOR=userfaultfd' 'FI_CXI_DISABLE_HOST_REGISTER=1' 'FI_CXI_DEFAULT_CQ_SIZE=131072' 'FI_CXI_RX_MATCH_MODE=hybrid' 'FI_CXI_DEFAULT_TX_SIZE=2048' 'TOKENIZERS_PARALLELISM=false')
# Settings left out above for a known issue with this image, as "NAME=VALUE: why": a job whose
# environment has one stops before it starts anything (KNOWN_ISSUES=ignore sbatch ... starts it),
# and one with another value of NAME is warned of.
env_refused=('NCCL_NET_GDR_LEVEL=PHB: exporting it (PHB or SYS) can make torch.distributed jobs hang with LAIF images (reported on the ROCm 7.0 ones); leave it unset, RCCL detects the level from the PCI topology; the AI Guide dropped it with no loss of speed [LAIF-I30, AIG-PR97]')
# MIOpen's kernel cache: its default under $HOME fails on Lustre (file locks). [WS-ref], [EBC-PT]
# Triton's and TorchInductor's kernel caches, off $HOME, node-local. [AIG-I112]
# One directory per node in node-local storage; every rank makes it.
kernel_cache_env=('MIOPEN_USER_DB_PATH=/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}' 'MIOPEN_CUSTOM_CACHE_DIR=/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}' 'TRITON_CACHE_DIR=/tmp/${USER}-triton-cache-${SLURM_JOB_ID}-${SLURM_NODEID}' 'TORCHINDUCTOR_CACHE_DIR=/tmp/${USER}-inductor-cache-${SLURM_JOB_ID}-${SLURM_NODEID}')
# Framework caches off $HOME, in the project's cache area. [AIG], [WS-03]
cache_env=('TORCH_HOME=/scratch/project_465000000/${USER}/cache/torch_home' 'HF_HOME=/scratch/project_465000000/${USER}/cache/hf_home' 'TORCH_EXTENSIONS_DIR=/scratch/project_465000000/${USER}/cache/torch_extensions_dir')
# Another name RCCL_DEBUG_FILES=1 answers to (its name before lumi-scaffold 0.3).
debug_files_alias='LUMI_RCCL_DEBUG'

# The network check (scripts/lib/collective_net.py): between nodes RCCL must use Slingshot (aws-ofi-rccl plugin, cxi provider); when it
# cannot, it falls back to TCP sockets, several times slower, with no error. [WS-09, LAIF-I28, RCCL-net]
# RCCL_NET_CHECK=0 sbatch ... skips it.
net_check='Slingshot (aws-ofi-rccl plugin, cxi provider)'
net_check_fast='NET/OFI Selected (P|p)rovider is cxi'
net_check_tcp='NET/Socket|Using network Socket|NET/OFI Selected (P|p)rovider is (tcp|sockets)'
# The line after which RCCL keeps its network ('' : the last network line decides).
net_check_final='Using network'
net_check_fix='the image must ship aws-ofi-rccl and see the CXI libraries (binds and modules in scripts/values.sh)'

# The network preflight (jobs/preflight.sbatch, preflight_job in scripts/lib/preflight.sh): one task
# per GPU, each bound to its GPU's cores as the training ranks are (--cpu-bind masks).
# rccl-tests' all_reduce_perf, looked up in the image in this order when the job starts (where LAIF images install it, not on PATH [LAIF-R]);
# ALL_REDUCE_PERF=/path sbatch ... names another, ALL_REDUCE_PERF=none skips it.
preflight_all_reduce_perf=('/usr/libexec/rccl-tests/all_reduce_perf' 'all_reduce_perf')
# all_reduce_perf's options, one option and its value a word (as the reference below)
# (-g 1: one GPU per task); the job's arguments come after them. An option the image's
# all_reduce_perf does not know (an older rccl-tests) is left out, and there is no verdict then.
preflight_options=('-b 2M' '-e 2048M' '-f 2' '-g 1' '-z 1' '-t 1' '-R 1' '-n 80' '-w 5' '-d half')
# Without all_reduce_perf: the project's benchmark (torch.distributed.all_reduce), which prints the same table.
preflight_benchmark='scripts/lib/allreduce_bench.py'
# Its options: the framework, then all_reduce_perf's -b -e -f -n -w -d of the ones above.
preflight_benchmark_args=('--framework' 'torch' '-b' '2M' '-e' '2048M' '-f' '2' '-n' '80' '-w' '5' '-d' 'half')
# The framework, for the job's messages.
preflight_framework='PyTorch (DDP)'
# How the image's MPI programs (all_reduce_perf) get their ranks from srun (none: started without them,
# and a table of one-rank runs is refused).
preflight_mpi=('--mpi=pmi2')

# The preflight's reference: 85 GB/s in-place busbw at 134217728 bytes on 2 nodes, 5 % below allowed
# (2 nodes x 8 GCDs, half, measured with the system ROCm and aws-ofi-rccl outside a container) [RF-RCCL].
# Measured as it was (all_reduce_perf with these options, 2 nodes, with its settings),
# the job prints its share of it and fails below it; otherwise it prints one WARNING line with both figures, no verdict.
# It names no image it was measured in, and a job runs in one: no verdict, its figure beside it.
# GB/s of busbw.
preflight_reference='85'
# The message size in bytes (0: the largest message).
preflight_reference_size='134217728'
# How far below it still passes (a fraction).
preflight_reference_tolerance='0.05'
# The node count it was measured on (0: not known).
preflight_reference_nodes='2'
# The busbw column of all_reduce_perf's table.
preflight_reference_column='in-place'
# all_reduce_perf's options it was measured with ('': not known).
preflight_reference_args='-b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5 -d half'
preflight_reference_shape='2 nodes x 8 GCDs, half, measured with the system ROCm and aws-ofi-rccl outside a container'
preflight_reference_source='RF-RCCL'
# The image it was measured in (its file name; '': none named): a verdict only in that image.
preflight_reference_image=''
# The settings it was measured with: a verdict only where the benchmark ran with each of them.
preflight_reference_env=('NCCL_ENABLE_DMABUF_SUPPORT=1' 'NCCL_NET_GDR_LEVEL=3')

# Profiling (jobs/profile.sbatch): none in this project.
profiler=''
profile_rank=''
profiler_command=()
profiler_env=()

# Sweeps (scripts/sweep.py submits jobs/sweep.sbatch, sweep_job in scripts/lib/job.sh): one trial
# of the training per line of a sweep file, each a task of a Slurm job array on the sweep's shape.
# What one trial is billed when it runs to its time limit, by billing_sweep's rule ('': no rule).
sweep_at_limit='96.0'
sweep_time_limit='12:00:00'
sweep_unit='GPU-hours'
# Why the partition takes no sweep ('': it takes job arrays, and jobs/sweep.sbatch runs).
sweep_refused=''

# Compiler caches that survive jobs: MIOpen's kernel cache, Triton's kernel cache and TorchInductor's cache.
# During a job they live in node-local /tmp (RAM, counted in the job's memory),
# where scripts/lib/run.sh points the framework; scripts/lib/caches.sh carries each from job to job.
# The archives, one directory per image: KERNEL_CACHE_STORE/<image file name without .sif>/<name>.tar
# (KERNEL_CACHE_STORE=... sbatch ... keeps them elsewhere).
kernel_cache_store='/scratch/project_465000000/${USER}/cache/kernels/demo'
# Each cache's name and its node-local directory (the same directories as scripts/lib/run.sh's).
kernel_cache_dirs=('miopen=/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}' 'triton=/tmp/${USER}-triton-cache-${SLURM_JOB_ID}-${SLURM_NODEID}' 'inductor=/tmp/${USER}-inductor-cache-${SLURM_JOB_ID}-${SLURM_NODEID}')

# Pre-staging (scripts/lib/prestage.sh): off.
prestage_memory_percent=''
prestage_shared_tmp_kb=''
prestage_shared_tmp=''
prestage_fix=''

# The venv (scripts/setup-venv.sh), on top of the image's Python: the framework (PyTorch (DDP)) and
# every binary package the image ships (its ROCm builds of other packages) are pinned; its pure-Python
# packages may be upgraded; constraints.txt says how to move one package between the two. A generic
# wheel from PyPI lacks the image's ROCm and Slingshot builds. [AIG-02]
# LAIF images keep their Python in a venv (/opt/venv): the project's venv sees its packages
# through a .pth file.
# --pack: one SquashFS file on the parallel file system instead of thousands. [AIG-02], [UG-stor]
# pip's cache while it installs, off $HOME. [WS-05]
pip_cache='/tmp/${USER}-pip-cache'
# The framework's packages: pinned in the venv at the image's versions, whatever constraints.txt says
# (the venv pins every binary package of the image too, and constraints.txt may take one of those over;
# pure-Python ones may be upgraded). A name the image does not ship changes nothing.
venv_framework=('pytorch-triton' 'pytorch-triton-rocm' 'torch' 'triton' 'triton-rocm')

# scripts/attach.sh --help: what this site's GPUs show, and what an attached step sees.
# rocm-smi's power for busy GPUs ('': no figures).
gpu_power='~300 W one busy GCD, ~500 W both GCDs of an MI250X'
gpu_power_source='AIG-06'
# Where Slurm's overlapping job steps are documented for this site.
overlap_source='[TM-Slurm]'
# Its help's lines on whether an attached step sees the job's GPUs.
attached_gpus=('Such a step sees the job'\''s GPUs without' 'asking for them: LUMI'\''s AI workshop and course watch a running job'\''s GCDs with rocm-smi' 'from a step attached this way. [WS-04], [TM-ai-E08]')

# Building the image with cotainr (container/build.sh): not in this project.
cotainr_image=''
cotainr_modules=()
cotainr_base_image=''
cotainr_system=''
cotainr_srun=()
}
