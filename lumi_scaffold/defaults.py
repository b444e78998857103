"""The answers given so far, and the defaults computed from them.

:class:`Answers` is the typed view of the answers that the choices, defaults and checks of
:mod:`lumi_scaffold.questions` and the assembly of plugin_data (:mod:`lumi_scaffold.assemble`)
read; the ``default_*`` functions compute the default of a question (copier.yml's
``lumi_default``), each named in the question's entry of :data:`lumi_scaffold.questions.QUESTIONS`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from . import jobs, settings
from .models import ContainerImage, Partition, Site, StorageArea
from .plugins import Catalogue

__all__ = ["CONTAINER_SPECIAL", "TEST_SITES", "TEST_SITES_ENV", "Answers", "answered_partition", "chosen_image",
           "offered_sites"]

CONTAINER_SPECIAL = ("recommended", "custom", "cotainr")
# Sites that exist for lumi-scaffold's own tests (plugins/lumi-site-local): offered only
# when this variable is 1 (tests/conftest.py sets it).
TEST_SITES = frozenset({"local"})
TEST_SITES_ENV = settings.TEST_SITES


def offered_sites(cat: Catalogue) -> list[str]:
    """The sites the questionnaire offers: all but the test sites, unless they are asked for."""
    with_tests = settings.test_sites()
    return [name for name in cat.sites if with_tests or name not in TEST_SITES]


class Answers:
    """Typed view of the answers given so far (missing ones are None)."""

    def __init__(self, answers: Mapping[str, Any], catalogue: Catalogue) -> None:
        self.raw = answers
        self.cat = catalogue

    def get(self, name: str) -> Any:
        value = self.raw.get(name)
        return None if _is_undefined(value) else value

    @property
    def site(self) -> Site | None:
        return self.cat.sites.get(str(self.get("site")))

    def int(self, name: str, fallback: int = 0) -> int:
        try:
            return int(self.get(name))
        except (TypeError, ValueError):
            return fallback


def _is_undefined(value: Any) -> bool:
    return value is None or type(value).__name__.endswith("Undefined")


def default_site(a: Answers) -> str:
    """The first site offered: the built-in plugins register first (LUMI), installed ones after."""
    return next(iter(offered_sites(a.cat)), "")


def default_account(a: Answers) -> str:
    return a.site.account.example if a.site else ""


def default_framework(a: Answers) -> str:
    """The site's first framework, in the catalogue's order (PyTorch, then JAX, then installed ones)."""
    names = a.cat.frameworks_for(a.site.name) if a.site else []
    return names[0] if names else ""


def default_container(a: Answers) -> str:
    """No recommended image: the first legacy one where the site has only those (its status
    is shown and warned about), else the user's own .sif (a site where users pull their own)."""
    site, fw = a.site, str(a.get("framework"))
    if not site or a.cat.recommended_image(site.name, fw):
        return "recommended"
    # An observed image (not announced by the site) is never a default.
    legacy = [i for i in a.cat.images(site.name, fw) if i.status != "observed"]
    return legacy[0].id if legacy else "custom"


def default_container_path(a: Answers) -> str:
    """In the site's first data area; on LUMI /project/<account>/containers/<project>.sif."""
    site = a.site
    area = next((s for s in site.storage if s.data), None) if site else None
    root = _resolve(area, site, a) if area and site else "/project"
    return f"{root}/containers/{a.get('project_name')}.sif"


def default_gpus_per_node(a: Answers) -> int:
    return a.site.node.gpus if a.site else 1


def default_partition(a: Answers) -> str:
    site = a.site
    if not site:
        return ""
    whole = jobs.whole_nodes(site.node, a.int("gpus_per_node"))
    return site.whole_node_partition if whole else site.partial_node_partition


# The wall time offered where the partition names none (and allows it).
DEFAULT_WALLTIME = "01:00:00"


def default_walltime(a: Answers) -> str:
    """The partition's ``default_walltime``, else one hour, or the partition's limit for this
    many nodes where that is shorter (a 30-minute debug QOS gets 00:30:00)."""
    from ._types import slurm_time_normal, slurm_time_seconds

    site = a.site
    if not site:
        return DEFAULT_WALLTIME
    part = answered_partition(a, site)
    if part.default_walltime:
        return slurm_time_normal(part.default_walltime)
    limit = part.walltime_limit(max(a.int("nodes"), 1))
    return slurm_time_normal(limit) if slurm_time_seconds(limit) < slurm_time_seconds(DEFAULT_WALLTIME) else DEFAULT_WALLTIME


def default_data_location(a: Answers) -> str:
    if not a.site:
        return ""
    areas = [s.name for s in a.site.storage if s.data]
    return "scratch" if "scratch" in areas else areas[0]


def default_dataset_archive(a: Answers) -> str:
    site = a.site
    area = site.storage_area(str(a.get("data_location"))) if site else None
    root = _resolve(area, site, a) if area and site else "/data"
    return f"{root}/datasets/{a.get('project_name')}.tar"


def _resolve(area: StorageArea, site: Site, a: Answers) -> str:
    """An area's path for the answered account (and the project it belongs to)."""
    account = str(a.get("account"))
    return area.resolve(account, site.account.project_of(account))


def answered_partition(a: Answers, site: Site) -> Partition:
    """The answered partition, else the one the default would be for these answers."""
    part = site.partition(str(a.get("partition"))) or site.partition(default_partition(a))
    assert part is not None  # the default is one of the site's partitions
    return part


def chosen_image(a: Answers) -> ContainerImage | None:
    """The catalogue image of the answers (None: the user's own, or no site yet)."""
    site, fw, choice = a.site, str(a.get("framework")), a.get("container")
    if site is None or choice in ("custom", "cotainr"):
        return None
    if choice in (None, "recommended"):
        return a.cat.recommended_image(site.name, fw)
    return a.cat.containers.get(str(choice))


def split_requirements(value: Any) -> list[str]:
    """The extra_requirements answer as a list of requirement specifiers."""
    return [part for part in re.split(r"[\s,]+(?![=<>!~])", str(value or "").strip()) if part]
