"""Distributed training example for {{ project_name }} (PyTorch DDP).

Runs one process per GPU under srun (RANK, LOCAL_RANK and WORLD_SIZE come from
scripts/lib/run.sh, MASTER_ADDR and MASTER_PORT from scripts/lib/job.sh) or under torchrun
(which sets all of them). On a machine without GPUs it trains on the CPU with
the gloo backend, so the same script can be tested anywhere.

Data: the *.npz shards in DATA_DIR, with arrays ``x`` (float32, N x features) and ``y``
(int64, N); where DATA_DIR has none, synthetic data. Checkpoints go to CHECKPOINT_DIR
(in the run directory, the same for every job of a run) every --checkpoint-every steps;
training resumes from the newest one, and only the newest --keep-checkpoints are kept. The script exits 0 once it has trained --steps steps. At
Slurm's time-limit warning every rank stops at the same step, rank 0 saves it, and the
script exits with runlog.TIME_LIMIT_EXIT: the next job of the run resumes from that step.

Rank 0 reports each job's steps, throughput, step times, data wait and GPU-hours, and logs
the metrics to the project's tracker (scripts/lib/python/runlog.py).
"""

from __future__ import annotations

import argparse
import gc
import glob
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import runlog  # scripts/lib/python/runlog.py (on the jobs' PYTHONPATH): the job report and tracking
from heartbeat import Heartbeat  # scripts/lib/python/heartbeat.py: progress for the job's watchdog

# The job gives the script its world in the environment (scripts/lib/job.sh), never in its
# arguments: the run directory every job of the run shares (the job report goes there),
# its checkpoints, and the data. Outside a job: ./outputs, and synthetic data.
RUN_DIR = os.environ.get("RUN_DIR", "outputs")
CHECKPOINT_DIR = os.environ.get("CHECKPOINT_DIR", os.path.join(RUN_DIR, "checkpoints"))
DATA_DIR = os.environ.get("DATA_DIR", "")


def shards(data_dir: str) -> list[str]:
    """The *.npz shards (arrays x: float32, N x features; y: int64, N) in DATA_DIR, if any."""
    return sorted(glob.glob(os.path.join(data_dir, "*.npz"))) if data_dir else []


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps in total")
    parser.add_argument("--batch-size", type=int, default=64, help="per-process batch size")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate (SGD)")
    parser.add_argument("--num-workers", type=int, default=default_workers(),
                        help="DataLoader worker processes per rank (default: the rank's CPUs minus one)")
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--keep-checkpoints", type=int, default=3, help="how many of the newest checkpoints to keep")
    parser.add_argument("--seconds-per-step", type=float, default=0.0, help="throttle (to test time limits)")
    return parser.parse_args()



def default_workers() -> int:
    """The CPUs the job gives this rank (scripts/lib/run.sh exports them; under torchrun, the
    rank's share of its task's), minus one for the rank itself."""
    cpus = os.environ.get("LUMI_SCAFFOLD_CPUS_PER_RANK")
    return max((int(cpus) if cpus else len(os.sched_getaffinity(0))) - 1, 0)


def load_dataset(found: list[str], features: int = 32, classes: int = 4) -> TensorDataset:
    if found:
        arrays = [np.load(path) for path in found]
        x = torch.from_numpy(np.concatenate([a["x"] for a in arrays]).astype(np.float32))
        y = torch.from_numpy(np.concatenate([a["y"] for a in arrays]).astype(np.int64))
        return TensorDataset(x, y)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4096, features, generator=generator)
    y = (x[:, :classes].argmax(dim=1)).long()  # a learnable rule
    return TensorDataset(x, y)


def setup() -> tuple[int, int, int, torch.device]:
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():  # {{ (plugin_data | lumi_gpu).gpu_word }}
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        backend = "nccl"  # {{ (plugin_data | lumi_gpu).collectives }} on {{ plugin_data.site.display_name }}
    else:
        device = torch.device("cpu")
        backend = "gloo"
    if world > 1:
        # The job's collective timeout, above every allowance of its progress watchdog
        # (scripts/lib/job.sh says why): a collective that does not return within it ends the
        # rank with an error; PyTorch's default is 10 minutes for NCCL and 30 for other
        # backends (PyTorch documentation of init_process_group, timeout). With
        # TORCH_NCCL_ASYNC_ERROR_HANDLING=1 the rank aborts its communicator and ends on such
        # an error (PyTorch documentation, "PyTorch ProcessGroupNCCL Environment Variables";
        # its default is 3: the rank ends, the communicator is not aborted).
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
        dist.init_process_group(backend=backend, init_method="env://", rank=rank, world_size=world,
                                timeout=collective_timeout())
    affinity = sorted(os.sched_getaffinity(0))
    print(f"rank {rank}/{world} local_rank {local_rank} device {device} backend {backend} cpus {affinity}", flush=True)
    return rank, world, local_rank, device


def collective_timeout() -> timedelta:
    """The job's collective timeout (scripts/lib/job.sh), made the default of the process
    groups created later too: dist.new_group() without timeout= takes the backend's default
    (distributed_c10d.default_pg_timeout, or default_pg_nccl_timeout for NCCL), not the
    timeout given to init_process_group (PyTorch's distributed_c10d._new_group_with_tag)."""
    timeout = timedelta(seconds=int(os.environ.get("LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT", "600")))
    for name in ("default_pg_timeout", "default_pg_nccl_timeout"):  # (where this PyTorch has them)
        if isinstance(getattr(dist.distributed_c10d, name, None), timedelta):
            setattr(dist.distributed_c10d, name, timeout)
    return timeout


def newest_checkpoint() -> str | None:
    """The newest checkpoint in CHECKPOINT_DIR (or, for a run begun before lumi-scaffold 0.5, in RUN_DIR)."""
    found = sorted(glob.glob(os.path.join(CHECKPOINT_DIR, "checkpoint-*.pt"))) or sorted(
        glob.glob(os.path.join(RUN_DIR, "checkpoint-*.pt")))
    return found[-1] if found else None


def main() -> None:
    args = parse_args()
    runlog.check()  # a missing tracker package: one line now, before any rank waits for another
    rank, world, _, device = setup()
    finished = train(args, rank, world, device)
    if world > 1:
        if not finished:
            dist.barrier()  # (rank 0 has saved the step every rank stopped at)
        # DDP and the process group hold each other: collect them now, while the interpreter
        # is whole. Left to the exit, gloo's threads can no longer take the GIL and abort.
        gc.collect()
        dist.destroy_process_group()
    if not finished:
        runlog.RunLog.exit_at_time_limit()  # (not 0: the chain goes on, the next job resumes)


def train(args: argparse.Namespace, rank: int, world: int, device: torch.device) -> bool:
    """Trains up to --steps; False when it stopped early, at the time-limit warning."""
    found = shards(DATA_DIR)
    dataset = load_dataset(found)
    if rank == 0:
        where = f"{len(found)} shard(s) in {DATA_DIR}" if found else f"synthetic data (no *.npz in DATA_DIR={DATA_DIR or '<unset>'})"
        print(f"data: {len(dataset)} samples from {where}", flush=True)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        sampler=sampler,
        num_workers=max(args.num_workers, 0),
        # {% if '[WS-09]' | lumi_cite %}fork is not safe with Slingshot-11 in DataLoader workers; spawn is. [WS-09]{% else %}DataLoader workers are spawned, not forked (see the end of this file).{% endif %}
        multiprocessing_context="spawn" if args.num_workers > 0 else None,
        persistent_workers=args.num_workers > 0,
    )
    features, classes = dataset.tensors[0].shape[1], int(dataset.tensors[1].max()) + 1
    model = nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    step = 0
    os.makedirs(CHECKPOINT_DIR, exist_ok=True)
    checkpoint = newest_checkpoint()
    if checkpoint:
        state = torch.load(checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        if rank == 0:
            print(f"resumed from {checkpoint} at step {step}", flush=True)
    ddp = DistributedDataParallel(model) if world > 1 else model
    loss_fn = nn.CrossEntropyLoss()
    profiler = start_profiler()
    epoch = step // max(len(loader), 1)  # a resumed run goes on with the next epoch's order
    if rank == 0:
        print(f"{max(args.num_workers, 0)} DataLoader worker(s) per rank", flush=True)
    start = step
    heartbeat = Heartbeat()
    heartbeat.phase("first step")  # until its heartbeat: the first step may take long (PHASE_TIMEOUT)
    log = runlog.RunLog(rank=rank, world=world, output=RUN_DIR, start_step=step, last_step=args.steps,
                        samples_per_step=args.batch_size * world, config=vars(args),
                        peak_memory=torch.cuda.max_memory_allocated if torch.cuda.is_available() else None)
    stop = False

    def agree(values: list[int]) -> list[int]:  # the maximum over the ranks (runlog.time_to_stop)
        if world == 1:
            return values
        tensor = torch.tensor(values, dtype=torch.int64, device=device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.tolist()

    while step < args.steps and not stop:
        sampler.set_epoch(epoch)
        waited = time.perf_counter()
        for x, y in loader:
            waited = time.perf_counter() - waited  # the time this step waited for its batch
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(ddp(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            heartbeat.beat(step)
            if profiler is not None:
                profiler.step()
            if args.seconds_per_step:
                time.sleep(args.seconds_per_step)
            log.step(step, data_wait=waited, metrics=lambda: {"loss": loss.item(), "lr": optimizer.param_groups[0]["lr"]})
            if rank == 0 and (step % 20 == 0 or step == args.steps):
                print(f"step {step} loss {loss.item():.4f}", flush=True)
            if rank == 0 and step % args.checkpoint_every == 0:
                with heartbeat.phase("checkpoint"):  # the other ranks wait in their next step meanwhile
                    save(step, model, optimizer, args.keep_checkpoints)
            if step >= args.steps:
                break
            if log.time_to_stop(step, agree):  # Slurm's time-limit warning: every rank stops here
                stop = True
                break
            waited = time.perf_counter()
        epoch += 1
    if rank == 0:
        if step > start and step % args.checkpoint_every:  # (a multiple was saved in the loop)
            with heartbeat.phase("checkpoint"):
                save(step, model, optimizer, args.keep_checkpoints)
        if stop:
            print(f"time limit: stopped at step {step} on every rank, saved it; the next job resumes from it", flush=True)
        else:
            print(f"done: {step} steps on {world} process(es)", flush=True)
    if profiler is not None:
        profiler.stop()
    log.finish(finished=step >= args.steps)
    return step >= args.steps


def save(step: int, model: nn.Module, optimizer: torch.optim.Optimizer, keep: int) -> None:
    path = os.path.join(CHECKPOINT_DIR, f"checkpoint-{step:08d}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path + ".tmp")
    os.replace(path + ".tmp", path)  # never leave a half-written checkpoint behind
    for old in sorted(glob.glob(os.path.join(CHECKPOINT_DIR, "checkpoint-*.pt")))[:-max(keep, 1)]:
        os.remove(old)


def start_profiler():
    """torch.profiler on the rank scripts/lib/run-profile.sh selected (LUMI_SCAFFOLD_PROFILE_DIR set)."""
    out = os.environ.get("LUMI_SCAFFOLD_PROFILE_DIR")
    if not out:
        return None
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    # A few steps only: Perfetto struggles with traces over ~2 GB.{{ ' [AIG-06]' | lumi_cite }}
    prof = profile(activities=activities, schedule=schedule(wait=2, warmup=2, active=4, repeat=1),
                   on_trace_ready=tensorboard_trace_handler(out))
    prof.start()
    return prof


if __name__ == "__main__":
    # Workaround for pytorch/pytorch#119845{% if '[WS-09]' | lumi_cite %} with Slingshot{% endif %}; must run before any worker starts.{{ ' [WS-09]' | lumi_cite }}
    torch.multiprocessing.set_start_method("spawn")
    main()
