"""Smoke test: how many GPUs{{ ' (GCDs)' if (plugin_data | lumi_gpu).name == 'amd' else '' }} does PyTorch see in this job?"""

import os
import shutil
import sys

import torch

# The --numa-binding value of jobs/train.sbatch's torchrun ('' where its workers are not bound
# that way). torchrun runs the numactl command inside the image for it and fails without it
# (PyTorch's torch/numa/binding.py), so this test checks before a training job relies on it.
NUMA_BINDING = "{{ plugin_data.job.torchrun_binding if plugin_data.job.binding == 'torchrun-numa' else '' }}"

print(f"torch {torch.__version__}: {torch.cuda.device_count()} GPU(s) visible "
      f"({{ (plugin_data | lumi_gpu).devices_variable }}={os.environ.get('{{ (plugin_data | lumi_gpu).devices_variable }}', '')!r})", flush=True)
for index in range(torch.cuda.device_count()):
    print(f"  {index}: {torch.cuda.get_device_name(index)}", flush=True)
if NUMA_BINDING:
    if shutil.which("numactl") is None:
        sys.exit("numactl is not in the image: jobs/train.sbatch's torchrun --numa-binding needs it. "
                 "Fix: lumi-scaffold update -d launcher=srun (srun binds each rank with CPU masks), "
                 "or use an image that has numactl")
    print(f"numactl: {shutil.which('numactl')} (torchrun --numa-binding in jobs/train.sbatch can bind its workers)",
          flush=True)
