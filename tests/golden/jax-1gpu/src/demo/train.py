"""Distributed training example for demo (JAX, one process per GCD).

Under srun every task calls jax.distributed.initialize(), which reads the Slurm
variables itself (coordinator = first node of the step, port derived from the job id,
one local device per task from SLURM_LOCALID). Gradients are averaged across all
processes every step. Without GPUs it runs on the CPU, so it can be tested anywhere.

Data: --data DIR reads *.npz shards with arrays ``x`` (float32) and ``y`` (int64);
without it the script trains on synthetic data. Parameters are saved to --output.
"""

from __future__ import annotations

import argparse
import glob
import os
import time

import jax
import jax.numpy as jnp
import numpy as np


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="directory of *.npz shards (x, y); synthetic data if omitted")
    parser.add_argument("--output", default="outputs", help="where parameters are saved")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64, help="per-process batch size")
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--seconds-per-step", type=float, default=0.0, help="throttle (to test time limits)")
    return parser.parse_args()


def initialize() -> None:
    if int(os.environ.get("SLURM_NTASKS", os.environ.get("WORLD_SIZE", "1"))) <= 1:
        return
    try:  # CPU runs need a cross-process collective implementation (newer JAX only)
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except (AttributeError, ValueError, KeyError):
        pass
    jax.distributed.initialize()


def load_dataset(data_dir: str | None, rank: int, world: int) -> tuple[np.ndarray, np.ndarray]:
    if data_dir:
        shards = sorted(glob.glob(os.path.join(data_dir, "*.npz")))
        if not shards:
            raise SystemExit(f"--data {data_dir}: no *.npz shards found")
        arrays = [np.load(path) for path in shards]
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


def average_across_processes(grads):
    if jax.process_count() == 1:
        return grads
    from jax.experimental import multihost_utils

    gathered = multihost_utils.process_allgather(grads)
    return jax.tree_util.tree_map(lambda g: jnp.mean(g, axis=0), gathered)


def main() -> None:
    args = parse_args()
    initialize()
    rank, world = jax.process_index(), jax.process_count()
    print(f"rank {rank}/{world} devices {jax.local_devices()} cpus {sorted(os.sched_getaffinity(0))}", flush=True)
    x, y = load_dataset(args.data, rank, world)
    if rank == 0:
        print(f"data: {len(x)} samples per process from {args.data or 'synthetic data'}", flush=True)
    params = init_params(jax.random.PRNGKey(0), x.shape[1], int(y.max()) + 1)
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    update = jax.jit(lambda p, g: jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g))
    profile_dir = os.environ.get("LUMI_SCAFFOLD_PROFILE_DIR")
    rng = np.random.default_rng(rank)
    for step in range(1, args.steps + 1):
        if profile_dir and step == 3:
            jax.profiler.start_trace(profile_dir)
        index = rng.integers(0, len(x), args.batch_size)
        loss, grads = grad_fn(params, x[index], y[index])
        params = update(params, average_across_processes(grads))
        if profile_dir and step == 7:
            jax.profiler.stop_trace()
        if args.seconds_per_step:
            time.sleep(args.seconds_per_step)
        if rank == 0 and (step % 20 == 0 or step == args.steps):
            print(f"step {step} loss {float(loss):.4f}", flush=True)
        if rank == 0 and (step % args.checkpoint_every == 0 or step == args.steps):
            save(args.output, step, params)
    if rank == 0:
        print(f"done: {args.steps} steps on {world} process(es)", flush=True)


def save(output: str, step: int, params) -> None:
    os.makedirs(output, exist_ok=True)
    path = os.path.join(output, f"params-{step:08d}.npz")
    with open(path + ".tmp", "wb") as handle:
        np.savez(handle, **{k: np.asarray(v) for k, v in params.items()})
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
