"""lumi-scaffold framework plugin: DeepSpeed on the PyTorch images of every site.

Registers the framework (deepspeed.yaml, with the smoke test and example training script
from examples/), which runs on the images sites register for PyTorch (runs_on: pytorch),
the retired entry of the LUMI image it used to copy (containers.yaml), and
config/ds_config.json, the engine configuration the example reads.
"""

from pathlib import Path

from lumi_scaffold import ContainerImage, Framework, TemplateFile, hookimpl, load_data_file

__version__ = "0.3.0"
LUMI_SCAFFOLD_API = "1.2"  # Framework.runs_on (lumi-scaffold 0.4)
HERE = Path(__file__).parent


def _text(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


@hookimpl
def register_frameworks(register):
    register(load_data_file(HERE / "deepspeed.yaml", Framework,
                            smoke_test=_text("examples/smoke.py"), example=_text("examples/train.py")))


@hookimpl
def register_containers(register):
    for image in load_data_file(HERE / "containers.yaml", ContainerImage, many=True):
        register(image)


@hookimpl
def register_template_files(register):
    register(TemplateFile(owner="framework", owner_name="deepspeed", directory="config",
                          name="ds_config.json", content=_text("ds_config.json"), source="AIG-05"))
