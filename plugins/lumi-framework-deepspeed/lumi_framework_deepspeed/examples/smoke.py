{%- set gpu = {'name': 'amd', 'devices_variable': 'ROCR_VISIBLE_DEVICES'} -%}
{%- if 'lumi_gpu' is filter -%}{%- set gpu = plugin_data | lumi_gpu -%}{%- endif -%}
"""Smoke test: does DeepSpeed import, and how many GPUs{{ ' (GCDs)' if gpu.name == 'amd' }} does PyTorch see in this job?"""

import os

import torch

try:
    import deepspeed
except ImportError as exc:
    raise SystemExit(f"DeepSpeed is not importable in this image: {exc}") from None

print(f"deepspeed {deepspeed.__version__}, torch {torch.__version__}: {torch.cuda.device_count()} GPU(s) visible "
      f"({{ gpu.devices_variable }}={os.environ.get('{{ gpu.devices_variable }}', '')!r})", flush=True)
