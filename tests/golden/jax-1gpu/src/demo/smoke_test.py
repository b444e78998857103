"""Smoke test: how many GPUs (GCDs) does JAX see in this job?"""

import os

import jax

gpus = [d for d in jax.devices() if d.platform == "gpu"]
print(f"jax {jax.__version__}: {len(gpus)} GPU(s) visible "
      f"(ROCR_VISIBLE_DEVICES={os.environ.get('ROCR_VISIBLE_DEVICES', '')!r}); devices {jax.devices()}", flush=True)
