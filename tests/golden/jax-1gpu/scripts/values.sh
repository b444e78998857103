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
# Former LUST image, ROCm 6.2.0, Python 3.12, JAX 0.4.28 [EBC, PYPI]
image='/appl/local/containers/easybuild-sif-images/lumi-jax-rocm-6.2.0-python-3.12-jax-0.4.28-dockerhash-1441a4bce06f.sif'
# The image's known issues, named by scripts/lib/fault.py when a job hangs with no rank to blame ('': none).
image_known_issues=''
# (The image's path names no environment variable to check.)
image_variable=''
# Every step runs through this command, the binds and the image.
container_command=('singularity' 'exec')
# This image keeps Python in a conda env that run.sh activates first. [EBC-PT]
activate_variable='WITH_CONDA'
# (The image needs no modules.)
# Each step: `load NAME`, `use DIRECTORY`, or `load-or-use NAME DIRECTORY`.
modules=()
# Real roots of symlinked file systems (Singularity does not follow symlinks in
# bind paths) and what this image generation needs. [EBC-PT], [WS-09]
# BINDS=... sbatch ... binds others.
binds='/pfs,/scratch,/projappl,/project,/flash,/appl'

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

# Experiment tracking with Weights & Biases (scripts/lib/python/runlog.py, rank 0): every job of a run
# logs into one tracked run, its id kept in RUN_DIR/tracking.json. TRACKING=none sbatch ...
# leaves a job out of it.
tracking='wandb'
# W&B logs offline into RUN_DIR/wandb (README: wandb sync from a login node). WANDB_MODE=online
# sbatch ... logs to the server, with WANDB_API_KEY from your environment (never the project's files).
tracking_defaults=('WANDB_MODE=offline')

# Billing, for the job report's GPU-hours: the rate of one node as each job file's own #SBATCH lines
# ask for it (the job multiplies by its nodes; sbatch --nodes counts, other options given to
# sbatch on the command line do not).
# profile: max(ceil(cores/8), ceil(mem/64GB), GPUs) x 0.5 GPU-hours per hour on each node [UG-bill, TM-Slurm]
billing_profile='0.5 GPU-hours'
# smoke: max(ceil(cores/8), ceil(mem/64GB), GPUs) x 0.5 GPU-hours per hour on each node [UG-bill, TM-Slurm]
billing_smoke='0.5 GPU-hours'
# sweep: max(ceil(cores/8), ceil(mem/64GB), GPUs) x 0.5 GPU-hours per hour on each node [UG-bill, TM-Slurm]
billing_sweep='0.5 GPU-hours'
# train: max(ceil(cores/8), ceil(mem/64GB), GPUs) x 0.5 GPU-hours per hour on each node [UG-bill, TM-Slurm]
billing_train='0.5 GPU-hours'
# Energy, for the job report: the directory of the nodes' energy counters (joules), read on every node at each
# job's start and end, outside the container (scripts/lib/nodes.sh) [HPE-PM, AS-1385]; '': the site's data names none,
# and the report says 'not measured'. ENERGY_COUNTERS=/path sbatch ... reads another.
energy_counters='/sys/cray/pm_counters'

# How the training and profiling ranks start (make_step in scripts/lib/job.sh):
# One task per GPU with 7 cores each, placed by Slurm: CPU masks only make sense
# on whole nodes. [TM-Bind]
launcher='srun'
# srun's options for the training step beyond the job's.
srun_options=()
# srun's --cpu-bind for the training step ('' for none).
cpu_bind=''
# (Not used by the srun launcher.)
numa_binding=''
# Ranks each task starts.
ranks_per_task='1'
# 0: JAX (jax.distributed) finds its peers itself (jax.distributed.initialize() auto-detects Slurm (SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID)).
rendezvous='0'
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
# NCCL_NET_GDR_LEVEL=PHB: let RCCL use GPU-direct RDMA between GCD and NIC [WS-09, WS-2026]
# HSA_FORCE_FINE_GRAIN_PCIE=1: fine-grained PCIe memory, recommended with the RCCL OFI plugin [WS-2026]
# FI_MR_CACHE_MONITOR=userfaultfd: libfabric memory-registration cache monitor (userfaultfd avoids hangs seen in LAIF images; kdreg2 is announced as the default) [WS-2026, AIG-PR118]
# FI_CXI_DISABLE_HOST_REGISTER=1: HPE RCCL tuning for the CXI provider [WS-2026]
# FI_CXI_DEFAULT_CQ_SIZE=131072: larger completion queue avoids CXI queue overruns at scale [WS-2026]
# FI_CXI_RX_MATCH_MODE=hybrid: allow software matching when hardware match entries run out [WS-2026]
# FI_CXI_DEFAULT_TX_SIZE=2048: HPE RCCL tuning for the CXI provider [WS-2026]
image_env=('NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3' 'NCCL_NET_GDR_LEVEL=PHB' 'HSA_FORCE_FINE_GRAIN_PCIE=1' 'FI_MR_CACHE_MONITOR=userfaultfd' 'FI_CXI_DISABLE_HOST_REGISTER=1' 'FI_CXI_DEFAULT_CQ_SIZE=131072' 'FI_CXI_RX_MATCH_MODE=hybrid' 'FI_CXI_DEFAULT_TX_SIZE=2048')
# (No setting is known to be bad with this image: a job refuses none.)
env_refused=()
# MIOpen's kernel cache: its default under $HOME fails on Lustre (file locks). [WS-ref], [EBC-PT]
# One directory per node in node-local storage; every rank makes it.
kernel_cache_env=('MIOPEN_USER_DB_PATH=/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}' 'MIOPEN_CUSTOM_CACHE_DIR=/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}')
# Framework caches off $HOME, in the project's cache area. [AIG], [WS-03]
cache_env=('HF_HOME=/scratch/project_465000000/${USER}/cache/hf_home')
# Another name RCCL_DEBUG_FILES=1 answers to (its name before lumi-scaffold 0.3).
debug_files_alias='LUMI_RCCL_DEBUG'

# The network check: none for this site.
net_check=''
net_check_fast=''
net_check_tcp=''
net_check_final=''
net_check_fix=''

# The network preflight (jobs/preflight.sbatch): none in a one-node project.
preflight_all_reduce_perf=()
preflight_options=()
preflight_benchmark=''
preflight_benchmark_args=()
preflight_framework=''
preflight_reference=''
preflight_reference_size=''
preflight_reference_tolerance=''
preflight_reference_nodes=''
preflight_reference_column=''
preflight_reference_args=''
preflight_reference_shape=''
preflight_reference_source=''
preflight_reference_image=''
preflight_reference_env=()
preflight_mpi=()

# Profiling (jobs/profile.sbatch): none in this project.
profiler=''
profile_rank=''
profiler_command=()
profiler_env=()

# Sweeps (scripts/sweep.py submits jobs/sweep.sbatch, sweep_job in scripts/lib/job.sh): one trial
# of the training per line of a sweep file, each a task of a Slurm job array on the sweep's shape.
# What one trial is billed when it runs to its time limit, by billing_sweep's rule ('': no rule).
sweep_at_limit='0.5'
sweep_time_limit='01:00:00'
sweep_unit='GPU-hours'
# Why the partition takes no sweep ('': it takes job arrays, and jobs/sweep.sbatch runs).
sweep_refused=''

# Compiler caches that survive jobs: MIOpen's kernel cache.
# During a job it lives in node-local /tmp (RAM, counted in the job's memory),
# where scripts/lib/run.sh points the framework; scripts/lib/caches.sh carries each from job to job.
# The archives, one directory per image: KERNEL_CACHE_STORE/<image file name without .sif>/<name>.tar
# (KERNEL_CACHE_STORE=... sbatch ... keeps them elsewhere).
kernel_cache_store='/scratch/project_465000000/${USER}/cache/kernels/demo'
# Each cache's name and its node-local directory (the same directories as scripts/lib/run.sh's).
kernel_cache_dirs=('miopen=/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}')

# Pre-staging (scripts/lib/prestage.sh): off.
prestage_memory_percent=''
prestage_shared_tmp_kb=''
prestage_shared_tmp=''
prestage_fix=''

# The venv (scripts/setup-venv.sh), on top of the image's Python: the framework (JAX (jax.distributed)) and
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
venv_framework=('jax' 'jaxlib' 'numpy' 'pandas' 'scipy')

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
