"""Smoke test: how many GPUs{{ ' (GCDs)' if (plugin_data | lumi_gpu).name == 'amd' else '' }} does JAX see in this job?"""

import os

import jax

gpus = [d for d in jax.devices() if d.platform == "gpu"]
print(f"jax {jax.__version__}: {len(gpus)} GPU(s) visible "
      f"({{ (plugin_data | lumi_gpu).devices_variable }}={os.environ.get('{{ (plugin_data | lumi_gpu).devices_variable }}', '')!r}); devices {jax.devices()}", flush=True)
