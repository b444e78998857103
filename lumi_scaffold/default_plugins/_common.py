"""Helpers the built-in plugins share: load their YAML data and example files."""

from __future__ import annotations

from pathlib import Path

from lumi_scaffold import ContainerImage, Framework, load_data_file

HERE = Path(__file__).parent


def framework(name: str) -> Framework:
    """The framework in ``<name>.yaml`` with its smoke test and example from examples/."""
    examples = HERE / "examples"
    return load_data_file(
        HERE / f"{name}.yaml",
        Framework,
        smoke_test=(examples / f"{name}_smoke.py").read_text(encoding="utf-8"),
        example=(examples / f"{name}_train.py").read_text(encoding="utf-8"),
    )


def containers(name: str) -> list[ContainerImage]:
    """The images listed in ``<name>-containers.yaml``."""
    return load_data_file(HERE / f"{name}-containers.yaml", ContainerImage, many=True)


def framework_hooks(name: str):
    """The two hook implementations of a built-in framework plugin named ``name``."""
    from lumi_scaffold import hookimpl

    @hookimpl
    def register_frameworks(register):
        register(framework(name))

    @hookimpl
    def register_containers(register):
        for image in containers(name):
            register(image)

    return register_frameworks, register_containers
