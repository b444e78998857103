"""One validation: a value the catalogue accepts when a plugin loads is accepted again when
it reaches plugin_data at render. Before 0.4.0 a site plugin written for 0.2, whose bindings
module was ``singularity/4.1.0-slurm`` (Lmod's name/version), loaded cleanly and then failed
every copy (``container.module: must be a plain name``).

The walk: every field of a plugin_data part that has a field of the same name in the
catalogue model it is made from, plus the fields that are renamed on the way (the table
below), tried with real-world forms and with every string in the shipped data files.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from lumi_scaffold import models, plugin_data

REPO = Path(__file__).resolve().parents[1]

# catalogue model -> the plugin_data part made from it
PARTS = [
    (models.Site, plugin_data.SiteFacts),
    (models.Partition, plugin_data.PartitionFacts),
    (models.ContainerImage, plugin_data.ContainerFacts),
    (models.ContainerGeneration, plugin_data.ContainerFacts),
    (models.Framework, plugin_data.FrameworkFacts),
    (models.StorageArea, plugin_data.Storage),
    (models.Profiler, plugin_data.ProfilerFacts),
    (models.ReadmeSection, plugin_data.Section),
]
# (catalogue model, field) -> (plugin_data part, field): values that change name on the way
RENAMED = [
    ((models.EnvModule, "name"), (plugin_data.ContainerFacts, "module")),
    ((models.BindingsModule, "name"), (plugin_data.ContainerFacts, "module")),
    ((models.EnvModule, "use"), (plugin_data.ContainerFacts, "module_use")),
    ((models.Partition, "slurm_partition"), (plugin_data.JobFields, "smoke_partition")),
    ((models.Partition, "qos"), (plugin_data.JobFields, "smoke_qos")),
    ((models.Partition, "name"), (plugin_data.JobFields, "smoke_partition")),
]
# How a value changes on its way into plugin_data, where it does.
ON_THE_WAY = {
    (models.StorageArea, "path"): lambda path: path.replace("{account}", "project_465000000").replace("{project}", "465000000"),
}
# Forms seen in real plugins and site documentation.
SEEDS = [
    "singularity/4.1.0-slurm", "rocm/6.2.4", "lumi-aif-singularity-bindings", "Local-LAIF", "LUMI/24.03",
    "${WORKDIR}/containers/pytorch.sif", "$MYSOFTWARE/images/x.sif", "/appl/local/laifs/containers/x.sif",
    "normal_gpu", "debug", "gpu.a100", "mi250x-1", "2x-gpu", "GPU", "standard-g", "small-g", "project_465000000",
    "docker://rocm/pytorch:latest", "docker://nvcr.io/nvidia/pytorch:24.05-py3",  # pull addresses (Docker Hub, NGC)
]


def data_strings() -> set[str]:
    """Every string in the shipped catalogue files."""
    from ruamel.yaml import YAML

    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(key)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str) and "\n" not in node and len(node) < 200:
            found.add(node)

    for path in [*(REPO / "lumi_scaffold/default_plugins").glob("*.yaml"), *(REPO / "plugins").rglob("*.yaml")]:
        walk(YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8")))
    return found


def accepts(model: type[BaseModel], name: str, value: Any) -> bool:
    """Whether ``model`` takes ``value`` for field ``name``: its type, and the model's own
    field validators for it (model-wide checks need the other fields and are left out)."""
    field = model.model_fields[name]
    tp = Annotated[tuple([field.annotation, *field.metadata])] if field.metadata else field.annotation
    try:
        value = TypeAdapter(tp).validate_python(value)
    except ValidationError:
        return False
    for decorator in model.__pydantic_decorators__.field_validators.values():
        if name in decorator.info.fields and decorator.info.mode == "after":
            try:
                decorator.func(value)
            except (ValueError, AssertionError):
                return False
    return True


def _shape(tp) -> str:
    """'scalar', 'list' or 'other': only text values and lists of them are compared."""
    for option in typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, __import__("types").UnionType) else [tp]:
        origin = typing.get_origin(option)
        if origin is list:
            return "list" if _shape(typing.get_args(option)[0]) == "scalar" else "other"
        if origin in (dict, typing.Literal) or (isinstance(option, type) and issubclass(option, BaseModel)):
            return "other"
    return "scalar"


def pairs() -> list[tuple[tuple[type, str], tuple[type, str]]]:
    found = []
    for catalogue, part in PARTS:
        for name in sorted(set(catalogue.model_fields) & set(part.model_fields)):
            if _shape(catalogue.model_fields[name].annotation) == _shape(part.model_fields[name].annotation) != "other":
                found.append(((catalogue, name), (part, name)))
    return found + RENAMED


def _id(pair) -> str:
    (cm, cf), (pm, pf) = pair
    return f"{cm.__name__}.{cf}->{pm.__name__}.{pf}"


def test_the_walk_covers_the_fields_that_broke():
    walked = {_id(p) for p in pairs()}
    assert {"EnvModule.name->ContainerFacts.module", "ContainerImage.path->ContainerFacts.path",
            "Partition.slurm_partition->PartitionFacts.slurm_partition", "StorageArea.path->Storage.path",
            "Partition.qos->PartitionFacts.qos"} <= walked
    assert len(walked) > 30


VALUES = sorted(set(SEEDS) | data_strings())


@pytest.mark.parametrize("pair", pairs(), ids=_id)
def test_what_loads_renders(pair):
    (catalogue, cfield), (part, pfield) = pair
    as_list = _shape(part.model_fields[pfield].annotation) == "list"
    change = ON_THE_WAY.get((catalogue, cfield), lambda value: value)

    def given(value):
        return [value] if as_list else value

    loaded = [v for v in VALUES if accepts(catalogue, cfield, given(v))]
    assert loaded, (f"no value loads into {catalogue.__name__}.{cfield}, so this case checks nothing: add a form seen in "
                    "a real plugin or site's documentation to SEEDS")
    refused = [v for v in loaded if not accepts(part, pfield, given(change(v)))]
    assert not refused, (f"{catalogue.__name__}.{cfield} takes at plugin load what plugin_data's "
                         f"{part.__name__}.{pfield} refuses at render: {refused[:5]}")


@pytest.mark.parametrize("module", ["singularity/4.1.0-slurm", "rocm/6.2.4", "Local-LAIF"])
def test_an_lmod_module_is_one_value_at_load_and_render(module):
    assert accepts(models.EnvModule, "name", module) and accepts(plugin_data.ContainerFacts, "module", module)


@pytest.mark.parametrize("name", ["gpu.a100", "normal_gpu", "GPU", "2x-gpu"])
def test_a_slurm_partition_or_qos_is_slurms_spelling(name):
    for field in ("slurm_partition", "qos"):
        assert accepts(models.Partition, field, name) and accepts(plugin_data.PartitionFacts, field, name)
    assert not accepts(models.Partition, "qos", "debug;rm -rf")
