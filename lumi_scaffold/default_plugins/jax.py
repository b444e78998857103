"""Built-in framework plugin: jax (framework data in jax.yaml, LUMI images in jax-containers.yaml)."""

from ._common import framework_hooks

register_frameworks, register_containers = framework_hooks("jax")
