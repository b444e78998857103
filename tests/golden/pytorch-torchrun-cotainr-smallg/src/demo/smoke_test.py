"""Smoke test: how many GPUs (GCDs) does PyTorch see in this job?"""

import os

import torch

print(f"torch {torch.__version__}: {torch.cuda.device_count()} GPU(s) visible "
      f"(ROCR_VISIBLE_DEVICES={os.environ.get('ROCR_VISIBLE_DEVICES', '')!r})", flush=True)
for index in range(torch.cuda.device_count()):
    print(f"  {index}: {torch.cuda.get_device_name(index)}", flush=True)
