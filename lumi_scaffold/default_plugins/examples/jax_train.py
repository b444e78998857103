"""Distributed training example for {{ project_name }} (JAX, one process per {{ 'GCD' if (plugin_data | lumi_gpu).name == 'amd' else 'GPU' }}).

Under srun every task calls jax.distributed.initialize(), which reads the Slurm
variables itself (coordinator = first node of the step, port derived from the job id,
one local device per task from SLURM_LOCALID). All processes' devices form one mesh; the
batch is split across it and the parameters are replicated, so the gradient of the mean
loss is reduced on the devices (an all-reduce through {{ (plugin_data | lumi_gpu).collectives }} on GPUs), never copied through
host memory. Without GPUs it runs on the CPU, so it can be tested anywhere.

Data: the *.npz shards in DATA_DIR, with arrays ``x`` (float32) and ``y`` (int64); where
DATA_DIR has none, synthetic data. Parameters and the step are saved to CHECKPOINT_DIR (in
the run directory, the same for every job of a run) every --checkpoint-every steps; training resumes from the newest save, and only the newest --keep-checkpoints are
kept. The script exits 0 once it has trained --steps steps. At Slurm's time-limit warning
every process stops at the same step, process 0 saves it, and the script exits with
runlog.TIME_LIMIT_EXIT: the next job of the run resumes from that step.

Process 0 reports each job's steps, throughput, step times, data wait and GPU-hours, and
logs the metrics to the project's tracker (scripts/lib/python/runlog.py).
"""

from __future__ import annotations

import argparse
import functools
import glob
import inspect
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

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
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64, help="per-process batch size")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate (SGD)")
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--keep-checkpoints", type=int, default=3, help="how many of the newest saves to keep")
    parser.add_argument("--seconds-per-step", type=float, default=0.0, help="throttle (to test time limits)")
    return parser.parse_args()



def initialize() -> None:
    if int(os.environ.get("SLURM_NTASKS", os.environ.get("WORLD_SIZE", "1"))) <= 1:
        return
    try:  # CPU runs need a cross-process collective implementation (newer JAX only)
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except (AttributeError, ValueError, KeyError):
        pass
    # The job's timeout for this (all processes must join within it), above every allowance
    # of its progress watchdog (scripts/lib/job.sh); JAX's default is 300 s (JAX
    # documentation of jax.distributed.initialize, initialization_timeout). It covers
    # joining only: a collective in a step has no timeout, the watchdog ends a hang there.
    timeout = int(os.environ.get("LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT", "300"))
    if "initialization_timeout" in inspect.signature(jax.distributed.initialize).parameters:
        jax.distributed.initialize(initialization_timeout=timeout)
    else:  # (older JAX)
        jax.distributed.initialize()


def load_dataset(found: list[str], rank: int, world: int) -> tuple[np.ndarray, np.ndarray]:
    if found:
        arrays = [np.load(path) for path in found]
        x = np.concatenate([a["x"] for a in arrays]).astype(np.float32)
        y = np.concatenate([a["y"] for a in arrays]).astype(np.int64)
    else:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((4096, 32)).astype(np.float32)
        y = x[:, :4].argmax(axis=1).astype(np.int64)
    return x[rank::world], y[rank::world]  # each process trains on its own shard


def init_params(key, features: int, classes: int, hidden: int = 64):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (features, hidden)) * 0.1,
        "b1": jnp.zeros(hidden),
        "w2": jax.random.normal(k2, (hidden, classes)) * 0.1,
        "b2": jnp.zeros(classes),
    }


def loss_fn(params, x, y):
    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"] + params["b2"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


def train_step(params, x, y, lr):
    """One SGD step (learning rate ``lr``) on the global batch: the mean loss over every
    process's rows, so its gradient is already averaged across processes (XLA inserts the
    all-reduce)."""
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss


def global_batch(sharding: NamedSharding, local: np.ndarray) -> jax.Array:
    """This process's rows as its part of the global batch, one slice per local device."""
    devices = [d for d in sharding.mesh.devices.flat if d.process_index == jax.process_index()]
    parts = [jax.device_put(part, device) for part, device in zip(np.split(local, len(devices)), devices)]
    shape = (local.shape[0] * jax.process_count(), *local.shape[1:])
    return jax.make_array_from_single_device_arrays(shape, sharding, parts)


def replicated(sharding: NamedSharding, tree):
    """Host values (the same on every process) as arrays replicated on every device."""
    return jax.tree_util.tree_map(
        lambda value: jax.make_array_from_callback(np.shape(value), sharding, lambda index: np.asarray(value)[index]),
        tree)


def host(tree):
    """A replicated tree back on this host (every device holds all of it)."""
    return jax.tree_util.tree_map(lambda a: np.asarray(a.addressable_data(0)), tree)


def main() -> None:
    args = parse_args()
    runlog.check()  # a missing tracker package: one line now, before any process waits for another
    initialize()
    rank, world = jax.process_index(), jax.process_count()
    print(f"rank {rank}/{world} devices {jax.local_devices()} cpus {sorted(os.sched_getaffinity(0))}", flush=True)
    found = shards(DATA_DIR)
    x, y = load_dataset(found, rank, world)
    if rank == 0:
        where = f"{len(found)} shard(s) in {DATA_DIR}" if found else f"synthetic data (no *.npz in DATA_DIR={DATA_DIR or '<unset>'})"
        print(f"data: {len(x)} samples per process from {where}", flush=True)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rows, same = NamedSharding(mesh, PartitionSpec("data")), NamedSharding(mesh, PartitionSpec())
    step_fn = jax.jit(functools.partial(train_step, lr=args.lr), in_shardings=(same, rows, rows), out_shardings=(same, same))
    start, saved = resume()
    if saved is None:  # the same key on every process: the same start
        saved = jax.tree_util.tree_map(np.asarray, init_params(jax.random.PRNGKey(0), x.shape[1], int(y.max()) + 1))
    elif rank == 0:
        print(f"resumed from {CHECKPOINT_DIR} at step {start}", flush=True)
    params = replicated(same, saved)
    profile_dir = os.environ.get("LUMI_SCAFFOLD_PROFILE_DIR")
    rng = np.random.default_rng([rank, start])  # a resumed run draws new batches
    batch = args.batch_size - args.batch_size % len(jax.local_devices()) or len(jax.local_devices())
    heartbeat = Heartbeat()
    heartbeat.phase("first step")  # until its heartbeat: the first step compiles (PHASE_TIMEOUT)
    log = runlog.RunLog(rank=rank, world=world, output=RUN_DIR, start_step=start, last_step=args.steps,
                        samples_per_step=batch * world, config=vars(args), peak_memory=peak_memory)
    step, stop = start, False
    for step in range(start + 1, args.steps + 1):
        if profile_dir and step == start + 3:
            jax.profiler.start_trace(profile_dir)
        waited = time.perf_counter()
        index = rng.integers(0, len(x), batch)
        inputs, labels = global_batch(rows, x[index]), global_batch(rows, y[index])
        waited = time.perf_counter() - waited  # the time this step waited for its batch
        params, loss = step_fn(params, inputs, labels)
        # A heartbeat marks a finished step: step_fn returns as soon as the step is queued
        # (JAX's asynchronous dispatch), so wait for its result first.
        loss.block_until_ready()
        heartbeat.beat(step)
        if profile_dir and step == min(start + 7, args.steps) and step >= start + 3:  # also for short runs
            jax.profiler.stop_trace()
        if args.seconds_per_step:
            time.sleep(args.seconds_per_step)
        log.step(step, data_wait=waited, metrics=lambda: {"loss": float(host(loss)), "lr": args.lr})
        if rank == 0 and (step % 20 == 0 or step == args.steps):
            print(f"step {step} loss {float(host(loss)):.4f}", flush=True)
        if rank == 0 and (step % args.checkpoint_every == 0 or step == args.steps):
            with heartbeat.phase("checkpoint"):  # the other processes wait in their next step meanwhile
                save(step, host(params), args.keep_checkpoints)
        if step < args.steps and log.time_to_stop(step, agree):  # Slurm's time-limit warning
            stop = True
            break
    checksum = sum(float(np.abs(v).sum()) for v in host(params).values())
    print(f"rank {rank}: parameter checksum {checksum:.6f}", flush=True)
    if rank == 0 and stop:
        if step % args.checkpoint_every:  # (a multiple was saved in the loop)
            with heartbeat.phase("checkpoint"):
                save(step, host(params), args.keep_checkpoints)
        print(f"time limit: stopped at step {step} on every process, saved it; the next job resumes from it", flush=True)
    elif rank == 0:
        print(f"done: {args.steps} steps on {world} process(es)", flush=True)
    log.finish(finished=not stop)
    if stop:
        if world > 1:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices("saved")  # (process 0 has saved the step)
        runlog.RunLog.exit_at_time_limit()  # (not 0: the chain goes on, the next job resumes)


def agree(values: list[int]) -> list[int]:
    """The maximum of ``values`` over all processes (runlog.time_to_stop), every process at once."""
    if jax.process_count() == 1:
        return values
    from jax.experimental import multihost_utils

    gathered = np.asarray(multihost_utils.process_allgather(np.asarray(values, dtype=np.int32)))
    return [int(v) for v in gathered.reshape(-1, len(values)).max(axis=0)]


def peak_memory() -> int | None:
    """This process's peak device memory in bytes (None where the device does not say: CPUs)."""
    stats = jax.local_devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def resume():
    """(step, parameters) of the newest save in CHECKPOINT_DIR (or, for a run begun before
    lumi-scaffold 0.5, in RUN_DIR), or (0, None)."""
    found = sorted(glob.glob(os.path.join(CHECKPOINT_DIR, "params-*.npz"))) or sorted(
        glob.glob(os.path.join(RUN_DIR, "params-*.npz")))
    if not found:
        return 0, None
    with np.load(found[-1]) as saved:
        params = {k: saved[k] for k in saved.files if k != "step"}
        return int(saved["step"]), params


def save(step: int, params, keep: int) -> None:
    os.makedirs(CHECKPOINT_DIR, exist_ok=True)
    path = os.path.join(CHECKPOINT_DIR, f"params-{step:08d}.npz")
    with open(path + ".tmp", "wb") as handle:
        np.savez(handle, step=step, **params)
    os.replace(path + ".tmp", path)  # never leave a half-written save behind
    for old in sorted(glob.glob(os.path.join(CHECKPOINT_DIR, "params-*.npz")))[:-max(keep, 1)]:
        os.remove(old)


if __name__ == "__main__":
    main()
