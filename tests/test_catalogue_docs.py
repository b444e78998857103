"""docs/catalogue.md documents every field the shipped YAML data uses, in the section of
the model the field belongs to (nested models are described inside their owner's section)."""

from __future__ import annotations

import re

import pytest

from lumi_scaffold import models
from lumi_scaffold.datafile import _model_at, _yaml

from .helpers import REPO

DATA = {  # file pattern -> the model its entries are
    "lumi_scaffold/default_plugins/lumi.yaml": models.Site,
    "lumi_scaffold/default_plugins/pytorch.yaml": models.Framework,
    "lumi_scaffold/default_plugins/jax.yaml": models.Framework,
    "lumi_scaffold/default_plugins/profilers.yaml": models.Profiler,
    "lumi_scaffold/default_plugins/*-containers.yaml": models.ContainerImage,
    "plugins/lumi-site-frontier/lumi_site_frontier/frontier.yaml": models.Site,
    "plugins/lumi-site-leonardo/lumi_site_leonardo/leonardo.yaml": models.Site,
    "plugins/lumi-framework-deepspeed/lumi_framework_deepspeed/deepspeed.yaml": models.Framework,
    "plugins/lumi-framework-deepspeed/lumi_framework_deepspeed/containers.yaml": models.ContainerImage,
}


def _fields_used(data, model) -> set[tuple[str, str]]:
    """(model name, field) for every mapping key that is a model field, at any depth."""
    used: set[tuple[str, str]] = set()

    def walk(node, loc):
        owner = _model_at(model, loc)
        if isinstance(node, dict):
            for key, value in node.items():
                if owner is not None:
                    used.add((owner.__name__, key))
                walk(value, (*loc, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, (*loc, index))

    for item in data if isinstance(data, list) else [data]:
        walk(item, ())
    return used


def _sections() -> dict[str, str]:
    text = (REPO / "docs" / "catalogue.md").read_text()
    return dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", text, re.M | re.S))


@pytest.mark.parametrize(("pattern", "model"), list(DATA.items()), ids=list(DATA))
def test_every_field_the_data_uses_is_documented(pattern, model):
    paths = sorted(REPO.glob(pattern))
    assert paths, pattern
    section = _sections()[model.__name__]
    for path in paths:
        used = _fields_used(_yaml().load(path.read_text()), model)
        assert used, path
        undocumented = sorted(f"{owner}.{field}" for owner, field in used if f"`{field}`" not in section)
        assert undocumented == [], f"{path.name}: not in docs/catalogue.md's {model.__name__} section"


def test_the_walk_finds_nested_fields():
    used = _fields_used({"name": "x", "env": [{"name": "A", "why": "w"}], "versions": {"torch": "1"}}, models.Framework)
    assert ("EnvSetting", "why") in used and ("Framework", "env") in used
    assert not any(field == "torch" for _owner, field in used)  # a dict's keys are data, not fields
