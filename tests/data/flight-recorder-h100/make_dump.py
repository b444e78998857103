"""A real NCCL collective timeout on one GPU: the GPU is kept busy by a sleep kernel, so
the next all_reduce cannot start before the process group's timeout."""
import datetime, os, sys, time
import torch
import torch.distributed as dist

torch.cuda.set_device(0)
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "12"))),
                        device_id=torch.device("cuda", 0))
x = torch.ones(1 << 20, device="cuda")
for _ in range(4):
    dist.all_reduce(x)
torch.cuda.synchronize()
print("warm collectives done", flush=True)
torch.cuda._sleep(int(4e11))          # ~200 s of GPU time at ~2 GHz
dist.all_reduce(x)
print("all_reduce enqueued", flush=True)
time.sleep(100)
print("still alive after 100 s", flush=True)
