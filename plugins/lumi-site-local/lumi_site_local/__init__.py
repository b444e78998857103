"""lumi-scaffold site plugin: a small local Slurm machine with fake GPUs.

The images are CPU builds at /opt/containers/<framework>-cpu.sif; point ``SIF`` at
another file when submitting (``SIF=/path/to/image.sif sbatch jobs/train.sbatch``).
"""

from pathlib import Path

from lumi_scaffold import ContainerImage, Site, hookimpl, load_data_file

__version__ = "0.1.0"
IMAGES = {"pytorch": {"torch": "2.13.0"}, "jax": {"jax": "0.10.2"}}


@hookimpl
def register_sites(register):
    register(load_data_file(Path(__file__).with_name("local.yaml"), Site))


@hookimpl
def register_containers(register):
    for framework, versions in IMAGES.items():
        register(
            ContainerImage(
                id=f"local-{framework}-cpu",
                site="local",
                framework=framework,
                title=f"{framework} CPU build for local tests",
                path=f"/opt/containers/{framework}-cpu.sif",
                generation="plain",
                status="recommended",
                versions=versions,
            )
        )
