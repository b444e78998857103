# The real Flight Recorder path (make_dumps.py beside this file): one rank of a 2-rank NCCL job on ONE GPU (NCCL_HOSTID differs per
# rank, so NCCL takes the ranks for two hosts and joins them over sockets on lo instead of
# refusing a duplicate GPU). Rank 1 sleeps at step 3 before its all_reduce; rank 0 enters
# all_reduce 3 and waits in it. PG timeout: TIMEOUT_S.
import datetime, os, sys, time, torch, torch.distributed as dist
rank = int(os.environ["RANK"])
gpu = os.environ.get("BACKEND", "nccl") == "nccl"
dist.init_process_group("nccl" if gpu else "gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("TIMEOUT_S", "600"))),
                        **({"device_id": torch.device("cuda:0")} if gpu else {}))
t = torch.ones(1 << 20, device="cuda" if gpu else "cpu")
for step in range(1, 100):
    if rank == 1 and step == 3:
        print(f"rank {rank}: sleeping at step {step}", flush=True)
        time.sleep(10**6)
    dist.all_reduce(t)
    if gpu:
        torch.cuda.synchronize()
    print(f"rank {rank}: step {step} done", flush=True)
    time.sleep(0.5)
