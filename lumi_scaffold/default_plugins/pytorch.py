"""Built-in framework plugin: pytorch (framework data in pytorch.yaml, LUMI images in pytorch-containers.yaml)."""

from ._common import framework_hooks

register_frameworks, register_containers = framework_hooks("pytorch")
