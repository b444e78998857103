"""TEST PROBE, not a training script: the behavioural tests copy this file over a generated
project's src/<package>/train.py and smoke_test.py, then submit the project's real job files.
Each process the job starts runs it in place of the training script and writes one JSON
record of the world it was given, then exits 0. It imports nothing heavy, so a job of 16
ranks costs well under a second of CPU.

Records go to $PROBE_DIR/<job id>-<step id>-<pid>.json (PROBE_DIR is exported before sbatch or
salloc and reaches the process through sbatch's environment, the host side and the stand-in
container, as any user variable would).

What a rank "is" is recorded raw (the environment) and as the framework would read it:
PyTorch and DeepSpeed read RANK/LOCAL_RANK/WORLD_SIZE (env:// rendezvous); JAX's
jax.distributed.initialize() reads SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID
(jax/_src/clusters/slurm_cluster.py). The GCD a rank uses is the LOCAL_RANK-th visible device
(torch.device("cuda", local_rank), JAX's local_device_ids=[SLURM_LOCALID]).

DataLoader workers follow the example scripts' rule: the CPUs the job gives each rank
(LUMI_SCAFFOLD_CPUS_PER_RANK, exported by scripts/lib/run.sh) minus one. Examples generated before
that variable existed used SLURM_CPUS_PER_TASK - 1; the probe falls back to that rule so a
project from an older template is judged by what its own example would do.
"""

from __future__ import annotations

import json
import os
import socket
import sys

PREFIXES = ("NCCL_", "FI_", "MIOPEN_", "RCCL_", "HSA_", "TORCH", "HF_", "SLURM_", "SINGULARITY",
            "LUMI_SCAFFOLD_", "FAKE_", "PROBE_", "MASTER_", "OMP_", "GROUP_", "ROLE_")
NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "ROCR_VISIBLE_DEVICES",
         "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "PYTHONNOUSERSITE",
         "VIRTUAL_ENV", "PROJECT_DIR", "PATH", "TOKENIZERS_PARALLELISM", "WITH_CONDA")


def as_int(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def listing(directory: str | None) -> dict[str, int] | None:
    """Files under the data directory (relative name -> size), None when there is none."""
    if not directory or not os.path.isdir(directory):
        return None
    found = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, directory)] = os.path.getsize(path)
    return found


def main() -> None:
    env = os.environ
    affinity = sorted(os.sched_getaffinity(0))
    per_rank = as_int(env.get("LUMI_SCAFFOLD_CPUS_PER_RANK"))
    if per_rank is None:  # examples from templates before LUMI_SCAFFOLD_CPUS_PER_RANK
        per_rank = as_int(env.get("SLURM_CPUS_PER_TASK"), len(affinity))
    visible = [d for d in env.get("ROCR_VISIBLE_DEVICES", "").split(",") if d]
    local_rank = as_int(env.get("LOCAL_RANK"), 0)
    slurm_local = as_int(env.get("SLURM_LOCALID"), 0)
    record = {
        "argv": sys.argv[1:],
        "output": env.get("RUN_DIR"),  # (the job gives its world in the environment, never as arguments)
        "data": env.get("DATA_DIR"),
        "data_files": listing(env.get("DATA_DIR")),
        "node": env.get("SLURMD_NODENAME") or socket.gethostname(),
        "pid": os.getpid(),
        "affinity": affinity,
        "workers": max(per_rank - 1, 0),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": sys.base_prefix,
        "cwd": os.getcwd(),
        "torch": {  # env:// rendezvous (PyTorch DDP, DeepSpeed)
            "rank": as_int(env.get("RANK"), 0),
            "local_rank": local_rank,
            "world": as_int(env.get("WORLD_SIZE"), 1),
            "gcd": visible[local_rank % len(visible)] if visible else None,
        },
        "jax": {  # jax.distributed.initialize() on Slurm
            "rank": as_int(env.get("SLURM_PROCID"), 0),
            "local_rank": slurm_local,
            "world": as_int(env.get("SLURM_NTASKS"), 1),
            "gcd": visible[slurm_local % len(visible)] if visible else None,
        },
        "env": {k: v for k, v in env.items() if k.startswith(PREFIXES) or k in NAMES},
    }
    directory = env.get("PROBE_DIR")
    if not directory:
        raise SystemExit("probe: PROBE_DIR is not set")
    name = f"{env.get('SLURM_JOB_ID', 'nojob')}-{env.get('SLURM_STEP_ID', 'nostep')}-{os.getpid()}.json"
    with open(os.path.join(directory, name + ".tmp"), "w", encoding="utf-8") as handle:
        json.dump(record, handle, sort_keys=True)
    os.replace(os.path.join(directory, name + ".tmp"), os.path.join(directory, name))
    # One write per line: under `python -u` print() writes the text and its newline apart, and
    # torchrun's workers share one stdout, so another rank's line could land between the two
    # (a CI run's log: "probe: rank 1/4 ... on nid005000rank 2/4 node ...").
    sys.stdout.write(f"probe: rank {record['torch']['rank']}/{record['torch']['world']} slurm {record['jax']['rank']}"
                     f"/{record['jax']['world']} on {record['node']}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
