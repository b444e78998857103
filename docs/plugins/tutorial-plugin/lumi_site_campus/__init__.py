"""lumi-scaffold site plugin for the campus GPU cluster (the plugin tutorial's result)."""

from pathlib import Path

from lumi_scaffold import ContainerImage, Site, hookimpl, load_data_file

HERE = Path(__file__).parent


@hookimpl
def register_sites(register):
    register(load_data_file(HERE / "campus.yaml", Site))


@hookimpl
def register_containers(register):
    register(ContainerImage(
        id="campus-pytorch-2.10",
        site="campus",
        framework="pytorch",
        title="PyTorch 2.10 for ROCm, built by the cluster team",
        path="/opt/images/pytorch-2.10.sif",
        generation="site",
        status="recommended",
        versions={"torch": "2.10.*"},
    ))
