{#- LUMI's sources and wording only in LUMI projects (lumi_cite, lumi-scaffold 0.3; with 0.2 as before). -#}
{%- set lumi = true -%}{%- if 'lumi_cite' is filter -%}{%- set lumi = ('[WS-09]' | lumi_cite) != '' -%}{%- endif -%}
"""Distributed training example for {{ project_name }} (DeepSpeed).

Started like PyTorch DDP: srun runs one process per GPU, scripts/run.sh sets RANK,
LOCAL_RANK and WORLD_SIZE from Slurm, scripts/job-env.sh sets MASTER_ADDR and
MASTER_PORT, and deepspeed.init_distributed() joins them.{% if lumi %} [AIG-05]{% endif %}

The engine (batch size, optimizer, ZeRO stage, bf16) comes from config/ds_config.json:
the jobs pass --deepspeed --deepspeed_config with it{% if lumi %}, as the AI guide does{% endif %}; run by hand,
the script reads it too. Pass --deepspeed_config FILE to use another. Without GPUs DeepSpeed runs on its CPU
accelerator with gloo, so the script can be tried anywhere DeepSpeed is installed;
without DeepSpeed it stops with a message saying so.

--lr sets the optimizer's learning rate (a sweep's trials do: sweeps/example.txt).

Data: --data DIR (or the job's DATA_DIR) reads *.npz shards with arrays ``x`` (float32, N x features) and ``y``
(int64, N); without it the script trains on synthetic data. Checkpoints (DeepSpeed's
format, one directory per tag) go to --output DIR, the run directory shared by every job
of a run; training resumes from the latest, and only the newest --keep-checkpoints are
kept. The script exits 0 once it has trained --steps steps. At Slurm's time-limit warning
every rank stops at the same step and saves it, and the script exits with
runlog.TIME_LIMIT_EXIT: the next job of the run resumes from that step.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

try:  # heartbeat.py: on the jobs' PYTHONPATH (lumi-scaffold 0.5; beside this script before): the job's watchdog
    from heartbeat import Heartbeat
except ImportError:  # a project from lumi-scaffold before 0.3: no watchdog to tell
    Heartbeat = None

try:  # runlog.py, likewise: the job report and tracking (lumi-scaffold 0.4 and later)
    import runlog
except ImportError:  # a project from an older lumi-scaffold: no report, no tracking
    runlog = None

try:
    import deepspeed
    from deepspeed.accelerator import get_accelerator
except ImportError as exc:
    raise SystemExit(
        f"train.py needs DeepSpeed, which this Python cannot import ({exc}).{% if lumi %} The LUMI AI Factory "
        "'full' image ships it; with another image add{% else %} Use an image that ships it, or add{% endif %} deepspeed to requirements.txt and rerun "
        "scripts/setup-venv.sh."
    ) from None

PROJECT_DIR = Path(os.environ.get("PROJECT_DIR") or Path(__file__).resolve().parents[2])


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("DATA_DIR") if glob.glob(os.path.join(os.environ.get("DATA_DIR") or "-", "*.npz")) else None,
                        help="directory of *.npz shards (x, y); default: DATA_DIR (lumi-scaffold 0.5) where it has shards, else synthetic data")
    parser.add_argument("--output", default="outputs", help="checkpoint directory")
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps in total")
    parser.add_argument("--lr", type=float, help="learning rate (default: the optimizer's in the DeepSpeed config)")
    parser.add_argument("--num-workers", type=int, default=default_workers(),
                        help="DataLoader worker processes per rank (default: the rank's CPUs minus one)")
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--keep-checkpoints", type=int, default=3, help="how many of the newest checkpoints to keep")
    parser.add_argument("--seconds-per-step", type=float, default=0.0, help="throttle (to test time limits)")
    deepspeed.add_config_arguments(parser)  # --deepspeed, --deepspeed_config
    args = parser.parse_args()
    # The jobs pass both (train_args in the plugin's deepspeed.yaml); run by hand, default to them.
    args.deepspeed = True
    args.deepspeed_config = args.deepspeed_config or str(PROJECT_DIR / "config" / "ds_config.json")
    return args



def default_workers() -> int:
    """The CPUs the job gives this rank (scripts/run.sh exports them), minus one for the rank itself."""
    cpus = os.environ.get("LUMI_SCAFFOLD_CPUS_PER_RANK")
    return max((int(cpus) if cpus else len(os.sched_getaffinity(0))) - 1, 0)


def load_dataset(data_dir: str | None, features: int = 32, classes: int = 4) -> TensorDataset:
    if data_dir:
        shards = sorted(glob.glob(os.path.join(data_dir, "*.npz")))
        if not shards:
            raise SystemExit(f"--data {data_dir}: no *.npz shards found")
        arrays = [np.load(path) for path in shards]
        x = torch.from_numpy(np.concatenate([a["x"] for a in arrays]).astype(np.float32))
        y = torch.from_numpy(np.concatenate([a["y"] for a in arrays]).astype(np.int64))
        return TensorDataset(x, y)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4096, features, generator=generator)
    return TensorDataset(x, x[:, :classes].argmax(dim=1))  # a rule the model can learn


def setup() -> tuple[int, int]:
    """Join the process group; returns (rank, world size)."""
    world = int(os.environ.setdefault("WORLD_SIZE", "1"))
    if world == 1:  # a plain `python train.py`: a group of one on this host
        for name, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29500")):
            os.environ.setdefault(name, value)
    accelerator = get_accelerator()
    if accelerator.device_name() != "cpu":  # NVIDIA's GPUs, and ROCm's, are DeepSpeed's cuda accelerator
        accelerator.set_device(int(os.environ["LOCAL_RANK"]) % accelerator.device_count())
    # The job's collective timeout, above every allowance of its progress watchdog
    # (scripts/job-env.sh says why): a collective that does not return within it ends the
    # rank with an error (DeepSpeed documentation of deepspeed.init_distributed, timeout;
    # PyTorch documentation of init_process_group, timeout). With
    # TORCH_NCCL_ASYNC_ERROR_HANDLING=1 the rank aborts its communicator and ends on such an
    # error (PyTorch documentation, "PyTorch ProcessGroupNCCL Environment Variables").
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    timeout = timedelta(seconds=int(os.environ.get("LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT", "600")))
    # DeepSpeed makes process groups of its own (deepspeed.comm.new_group calls
    # torch.distributed.new_group without a timeout), which then get the backend's default,
    # not the timeout above (PyTorch's distributed_c10d._new_group_with_tag): make it the
    # default too, where this PyTorch has those names.
    for name in ("default_pg_timeout", "default_pg_nccl_timeout"):
        if isinstance(getattr(torch.distributed.distributed_c10d, name, None), timedelta):
            setattr(torch.distributed.distributed_c10d, name, timeout)
    deepspeed.init_distributed(dist_backend=accelerator.communication_backend_name(), timeout=timeout)
    rank = int(os.environ["RANK"])
    affinity = sorted(os.sched_getaffinity(0))
    print(f"rank {rank}/{world} local_rank {os.environ['LOCAL_RANK']} accelerator {accelerator.device_name()} "
          f"backend {accelerator.communication_backend_name()} cpus {affinity}", flush=True)
    return rank, world


def main() -> None:
    args = parse_args()
    if runlog:
        runlog.check()  # a missing tracker package: one line now, before any rank waits for another
    rank, world = setup()
    dataset = load_dataset(args.data)
    features, classes = dataset.tensors[0].shape[1], int(dataset.tensors[1].max()) + 1
    model = nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, classes))
    config, config_file = None, args.deepspeed_config
    if args.lr is not None:  # the config with this learning rate (a sweep's trial), given as a dict
        with open(args.deepspeed_config) as handle:
            config = json.load(handle)
        config.setdefault("optimizer", {}).setdefault("params", {})["lr"] = args.lr
        args.deepspeed_config = None  # (DeepSpeed takes its config from one place only)
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters(), config=config)
    if rank == 0:
        lr = f", lr {args.lr}" if args.lr is not None else ""
        print(f"data: {len(dataset)} samples from {args.data or 'synthetic data'}; config {config_file}{lr}", flush=True)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(
        dataset,
        batch_size=engine.train_micro_batch_size_per_gpu(),
        sampler=sampler,
        num_workers=max(args.num_workers, 0),
        # {% if lumi %}fork is not safe with Slingshot-11 in DataLoader workers; spawn is. [WS-09]{% else %}DataLoader workers are spawned, not forked (see the end of this file).{% endif %}
        multiprocessing_context="spawn" if args.num_workers > 0 else None,
        persistent_workers=args.num_workers > 0,
    )
    dtype = torch.bfloat16 if engine.bfloat16_enabled() else torch.float16 if engine.fp16_enabled() else torch.float32
    os.makedirs(args.output, exist_ok=True)
    step = start = resume(engine, args.output, rank)
    loss_fn = nn.CrossEntropyLoss()
    profiler = start_profiler()
    epoch = step // max(len(loader), 1)  # a resumed run goes on with the next epoch's order
    heartbeat = Heartbeat() if Heartbeat else None
    if hasattr(heartbeat, "phase"):  # (lumi-scaffold 0.4: phases) the first step may take long (PHASE_TIMEOUT)
        heartbeat.phase("first step")
    log = runlog.RunLog(rank=rank, world=world, output=args.output, start_step=step, last_step=args.steps,
                        samples_per_step=engine.train_batch_size(), config=vars(args),
                        peak_memory=peak_memory) if runlog else None
    stop = False

    def agree(values: list[int]) -> list[int]:  # the maximum over the ranks (runlog.time_to_stop)
        tensor = torch.tensor(values, dtype=torch.int64, device=engine.device)
        deepspeed.comm.all_reduce(tensor, op=deepspeed.comm.ReduceOp.MAX)
        return tensor.tolist()

    while step < args.steps and not stop:
        sampler.set_epoch(epoch)
        waited = time.perf_counter()
        for x, y in loader:
            waited = time.perf_counter() - waited  # the time this step waited for its batch
            x, y = x.to(engine.device, dtype=dtype), y.to(engine.device)
            loss = loss_fn(engine(x).float(), y)
            engine.backward(loss)
            engine.step()
            step += 1
            if heartbeat:
                heartbeat.beat(step)
            if profiler is not None:
                profiler.step()
            if args.seconds_per_step:
                time.sleep(args.seconds_per_step)
            if log:
                log.step(step, data_wait=waited, metrics=lambda: {"loss": loss.item(), "lr": engine.get_lr()[0]})
            if rank == 0 and (step % 20 == 0 or step == args.steps):
                print(f"step {step} loss {loss.item():.4f}", flush=True)
            if step % args.checkpoint_every == 0:
                with phase(heartbeat, "checkpoint"):
                    save(engine, args.output, step, rank, args.keep_checkpoints)
            if step >= args.steps:
                break
            if log and hasattr(log, "time_to_stop") and log.time_to_stop(step, agree):  # the time-limit warning
                stop = True
                break
            waited = time.perf_counter()
        epoch += 1
    if step > start and step % args.checkpoint_every:  # (a multiple was saved in the loop)
        with phase(heartbeat, "checkpoint"):
            save(engine, args.output, step, rank, args.keep_checkpoints)
    if profiler is not None:
        profiler.stop()
    if rank == 0 and stop:
        print(f"time limit: stopped at step {step} on every rank, saved it; the next job resumes from it", flush=True)
    elif rank == 0:
        print(f"done: {step} steps on {world} process(es)", flush=True)
    if log:
        log.finish(finished=step >= args.steps)
    if stop:  # (every rank has saved: save() ends with a barrier)
        runlog.RunLog.exit_at_time_limit()  # (not 0: the chain goes on, the next job resumes)


def phase(heartbeat, name: str):
    """``with phase(heartbeat, "checkpoint"):`` tells the job's watchdog that this part may be
    silent for long (PHASE_TIMEOUT); nothing where heartbeat.py has no phases (before 0.4)."""
    return heartbeat.phase(name) if hasattr(heartbeat, "phase") else contextlib.nullcontext()


def peak_memory() -> int | None:
    """This process's peak device memory in bytes (None on DeepSpeed's CPU accelerator)."""
    accelerator = get_accelerator()
    return accelerator.max_memory_allocated() if accelerator.device_name() != "cpu" else None


def save(engine, output: str, step: int, rank: int, keep: int) -> None:
    """Every rank writes its part (ZeRO shards its optimizer state); `latest` names the tag.
    Once every rank has written it, rank 0 removes the oldest tags beyond ``keep``."""
    engine.save_checkpoint(output, tag=f"step-{step:08d}", client_state={"step": step})
    deepspeed.comm.barrier()
    if rank == 0:
        for old in sorted(glob.glob(os.path.join(output, "step-*")))[:-max(keep, 1)]:
            shutil.rmtree(old, ignore_errors=True)


def resume(engine, output: str, rank: int) -> int:
    if not os.path.exists(os.path.join(output, "latest")):
        return 0
    path, state = engine.load_checkpoint(output)
    step = int((state or {}).get("step", 0)) if path else 0
    if rank == 0 and path:
        print(f"resumed from {path} at step {step}", flush=True)
    return step


def start_profiler():
    """torch.profiler on the rank scripts/run-profile.sh selected (LUMI_SCAFFOLD_PROFILE_DIR set)."""
    out = os.environ.get("LUMI_SCAFFOLD_PROFILE_DIR")
    if not out:
        return None
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    # A handful of steps: traces over ~2 GB do not open in Perfetto.{% if lumi %} [AIG-06]{% endif %}
    prof = profile(activities=activities, schedule=schedule(wait=2, warmup=2, active=4, repeat=1),
                   on_trace_ready=tensorboard_trace_handler(out))
    prof.start()
    return prof


if __name__ == "__main__":
    # Workaround for pytorch/pytorch#119845{% if lumi %} with Slingshot{% endif %}; set before any worker starts.{% if lumi %} [WS-09]{% endif %}
    torch.multiprocessing.set_start_method("spawn")
    main()
