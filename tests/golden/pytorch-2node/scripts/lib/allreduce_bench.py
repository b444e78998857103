# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""All-reduce bandwidth between the job's GPUs, printed like rccl-tests' all_reduce_perf.

jobs/preflight.sbatch runs it, one process per GPU, where the image has no all_reduce_perf,
with the project's --framework: torch (torch.distributed's all_reduce) or jax (psum over one
mesh of every process's device). On GPUs the all-reduce goes through RCCL (its logs show the
network); without GPUs on the CPU (gloo), so it can be tested anywhere.

For each message size: the slowest process's mean time per all-reduce, algbw = size / time
and busbw = algbw * 2 (n - 1) / n (n processes), rccl-tests' bus bandwidth for all-reduce,
comparable across process counts. Options as all_reduce_perf's: -b/-e first and last message
size (1M, 1G), -f factor between sizes (2), -n timed and -w warm-up iterations per size (20,
5), -d the element type (float: 32 bits, half: 16).
"""

from __future__ import annotations

import argparse
import os
import socket
import time


def size(text: str) -> int:
    """1M, 512K, 1G or bytes (powers of 1024, as all_reduce_perf reads them)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=sorted(FRAMEWORKS), required=True,
                        help="torch.distributed or JAX (jobs/preflight.sbatch gives the project's)")
    parser.add_argument("-b", "--minbytes", type=size, default=size("1M"))
    parser.add_argument("-e", "--maxbytes", type=size, default=size("1G"))
    parser.add_argument("-f", "--stepfactor", type=int, default=2)
    parser.add_argument("-n", "--iters", type=int, default=20)
    parser.add_argument("-w", "--warmup_iters", type=int, default=5)
    parser.add_argument("-d", "--datatype", choices=sorted(ELEMENT_BYTES), default="float")
    return parser.parse_args()


ELEMENT_BYTES = {"float": 4, "half": 2}  # rccl-tests' names


def sizes(args: argparse.Namespace) -> list[int]:
    out, nbytes, element = [], args.minbytes, ELEMENT_BYTES[args.datatype]
    while nbytes <= args.maxbytes:
        out.append(nbytes - nbytes % element)  # whole elements
        nbytes *= max(args.stepfactor, 2)
    return out


HOST = os.environ.get("SLURMD_NODENAME") or socket.gethostname()  # Slurm's node name where there is one
HEADER = ("#\n#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)")


def table(args: argparse.Namespace, n: int, me: int, head: str, measure) -> None:
    """all_reduce_perf's table, printed by process 0; ``measure(nbytes, count)``: (the slowest
    process's mean seconds per all-reduce, the wrong elements of all), on every process."""
    if me == 0:
        print(head + "\n" + HEADER, flush=True)
    total = []
    for nbytes in sizes(args):
        seconds, wrong = measure(nbytes, nbytes // ELEMENT_BYTES[args.datatype])
        algbw = nbytes / seconds / 1e9
        total.append(algbw * 2 * (n - 1) / n)  # busbw
        if me == 0:
            print(f"{nbytes:12d}  {nbytes // ELEMENT_BYTES[args.datatype]:12d}  {args.datatype:>8s}     sum      -1  "
                  f"{seconds * 1e6:7.1f}  {algbw:6.2f}  {total[-1]:6.2f}  {wrong:5d}", flush=True)
    if me == 0:
        print(f"# Avg bus bandwidth    : {sum(total) / max(len(total), 1):.4f}", flush=True)


def run_jax(args: argparse.Namespace) -> None:
    import jax
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    try:  # jax.shard_map from JAX 0.6; jax.experimental.shard_map before
        from jax import shard_map
    except ImportError:
        from jax.experimental.shard_map import shard_map

    try:  # CPU runs need a cross-process collective implementation (newer JAX only)
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except (AttributeError, ValueError, KeyError):
        pass
    jax.distributed.initialize()  # finds the Slurm step itself (coordinator, process id)
    n, me = jax.device_count(), jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("i",))
    sharding = NamedSharding(mesh, PartitionSpec("i"))
    reduce = jax.jit(shard_map(lambda x: jax.lax.psum(x, "i"), mesh=mesh,
                               in_specs=PartitionSpec("i"), out_specs=PartitionSpec("i")))
    # One line per process, as all_reduce_perf prints one per rank.
    print(f"#  Rank {me:2d} Group  0 Pid {os.getpid():6d} on {HOST:>10s} device {jax.local_devices()[0]}",
          flush=True)
    multihost_utils.sync_global_devices("ranks")

    def measure(nbytes: int, count: int) -> tuple[float, int]:
        dtype = np.float16 if args.datatype == "half" else np.float32
        # Device d holds d + 1 everywhere: after the sum every element is n (n + 1) / 2.
        x = jax.make_array_from_callback((n, count), sharding, lambda idx: np.full((1, count), idx[0].start + 1, dtype))
        for _ in range(max(args.warmup_iters, 1)):
            y = reduce(x)
        y.block_until_ready()
        wrong = sum(int(np.count_nonzero(np.asarray(s.data) != n * (n + 1) / 2)) for s in y.addressable_shards)
        multihost_utils.sync_global_devices("start")
        start = time.perf_counter()
        for _ in range(args.iters):
            y = reduce(x)
        y.block_until_ready()
        seconds = (time.perf_counter() - start) / args.iters
        return (float(np.max(multihost_utils.process_allgather(np.array([seconds])))),
                int(np.sum(multihost_utils.process_allgather(np.array([wrong])))))

    table(args, n, me, f"# all-reduce benchmark (JAX {jax.__version__}, {jax.default_backend()}), {n} device(s)", measure)


def run_torch(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    # One process per GPU under srun: the rank from torch's variables or Slurm's.
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    n = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))
    if torch.cuda.is_available():  # ROCm GPUs appear as cuda devices
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        backend = "nccl"  # RCCL
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend=backend, init_method="env://", rank=rank, world_size=n)
    lines: list[str | None] = [None] * n
    dist.all_gather_object(lines, f"#  Rank {rank:2d} Group  0 Pid {os.getpid():6d} on {HOST:>10s} device {device}")

    def measure(nbytes: int, count: int) -> tuple[float, int]:
        dtype = torch.float16 if args.datatype == "half" else torch.float32
        # Rank r holds r + 1 everywhere: after the sum every element is n (n + 1) / 2.
        x = torch.full((count,), float(rank + 1), dtype=dtype, device=device)
        dist.all_reduce(x)
        wrong = torch.tensor([int((x != n * (n + 1) / 2).sum())], dtype=torch.float64, device=device)
        for _ in range(args.warmup_iters):
            dist.all_reduce(x)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(x)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = torch.tensor([(time.perf_counter() - start) / args.iters], dtype=torch.float64, device=device)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)  # the slowest rank's
        dist.all_reduce(wrong)
        return float(seconds.item()), int(wrong.item())

    table(args, n, rank, f"# all-reduce benchmark (torch {torch.__version__}, backend {backend}), {n} process(es)\n"
          + "\n".join(str(line) for line in lines), measure)
    dist.destroy_process_group()


FRAMEWORKS = {"torch": run_torch, "jax": run_jax}


def main() -> None:
    args = parse_args()
    FRAMEWORKS[args.framework](args)


if __name__ == "__main__":
    main()
