"""Smoke test: does DeepSpeed import, and how many GPUs (GCDs) does PyTorch see in this job?"""

import os

import torch

try:
    import deepspeed
except ImportError as exc:
    raise SystemExit(f"DeepSpeed is not importable in this image: {exc}") from None

print(f"deepspeed {deepspeed.__version__}, torch {torch.__version__}: {torch.cuda.device_count()} GPU(s) visible "
      f"(ROCR_VISIBLE_DEVICES={os.environ.get('ROCR_VISIBLE_DEVICES', '')!r})", flush=True)
