"""The choices of each question: label -> value, from the answers given so far. The labels
are whole here (``lumi-scaffold reference questions`` shows them so); the questionnaire cuts
them to 80 columns (:func:`lumi_scaffold.questions.choices`), so a label says its cost first.

Each function is named in its question's entry of :data:`lumi_scaffold.questions.QUESTIONS`
(copier.yml's ``lumi_choices``); the labels explain, the values are stored.
"""

from __future__ import annotations

from typing import Any

from . import jobs
from .defaults import Answers, answered_partition, chosen_image, offered_sites
from .labels import CONTAINER_LABELS, framework_status, image_label, status_label
from .tracking import TRACKERS

__all__ = ["container_choices", "data_location_choices", "framework_choices", "launcher_choices", "partition_choices",
           "gpu_vendor", "offered_profilers", "profiler_choices", "profilers", "site_choices", "tracking_choices"]


def site_choices(a: Answers) -> dict[str, str]:
    return {f"{n}: {a.cat.sites[n].title}": n for n in offered_sites(a.cat)}


def framework_choices(a: Answers) -> dict[str, str]:
    site, cat = a.site, a.cat
    names = cat.frameworks_for(site.name) if site else []
    return {f"{n}: {cat.frameworks[n].title}{framework_status(cat, site.name, n) if site else ''}": n for n in names}


def container_choices(a: Answers) -> dict[str, str]:
    site, fw = a.site, str(a.get("framework"))
    if site is None:
        return {}
    out: dict[str, str] = {}
    for option in a.cat.container_options(site.name, fw):
        image = a.cat.containers.get(option)
        recommended = a.cat.recommended_image(site.name, fw)
        if option == "recommended" and recommended is not None:
            label = f"recommended: follow the catalogue (now {recommended.id})"
        else:
            label = image_label(image.id, status_label(image), image.title) if image else CONTAINER_LABELS[option]
        out[label] = option
    return out


def partition_choices(a: Answers) -> dict[str, str]:
    parts = a.site.partitions if a.site else []
    return {f"{p.name}: {p.allocation}, up to {p.max_nodes} nodes, {p.max_walltime}": p.name for p in parts}


def launcher_choices(a: Answers) -> dict[str, str]:
    fw = a.cat.frameworks.get(str(a.get("framework")))
    labels = {"srun": "srun: one task per GPU (recommended)", "torchrun": "torchrun: one task per node spawning one worker per GPU"}
    if _torchrun_unbound(a):
        labels["torchrun"] = "torchrun: one task per node; no CPU binding with this image (srun binds)"
    return {labels[x]: x for x in (fw.launchers if fw else ["srun"])}


def data_location_choices(a: Answers) -> dict[str, str]:
    site = a.site
    if not site:
        return {}
    account = str(a.get("account") or "{account}")
    return {f"{s.name}: {s.resolve(account, site.account.project_of(account))} ({s.note})": s.name
            for s in site.storage if s.data}


def profiler_choices(a: Answers) -> dict[str, str]:
    return {f"{n}: {a.cat.profilers[n].title}": n for n in profilers(a) if n in a.cat.profilers}


def tracking_choices(a: Answers) -> dict[str, str]:
    return {f"{n}: {t.title}": n for n, t in TRACKERS.items()}


def profilers(a: Answers) -> list[str]:
    """The framework's profilers that work in the chosen image (all of them for your own image)
    and profile the site's GPUs."""
    fw = a.cat.frameworks.get(str(a.get("framework")))
    names = offered_profilers(fw, a.site) if fw else ["none"]
    image = chosen_image(a)
    return [n for n in names if (image is None or image.profilers is None or n in image.profilers or n == "none")
            and _for_the_gpus(a, n)]


def offered_profilers(fw: Any, site: Any) -> list[str]:
    """The framework's profilers, then the site's own (``Site.profilers``) it lacks."""
    own = list(site.profilers) if site is not None else []
    return [*fw.profilers, *(p for p in own if p not in fw.profilers)]


def gpu_vendor(a: Answers) -> str | None:
    """The vendor of the answered partition's GPUs (None before a site is chosen)."""
    site = a.site
    return site.node_of(answered_partition(a, site).name).gpu_vendor if site is not None else None


def _for_the_gpus(a: Answers, profiler: str) -> bool:
    p, theirs = a.cat.profilers.get(profiler), gpu_vendor(a)
    return p is None or p.gpu_vendor is None or theirs is None or theirs == p.gpu_vendor


def _torchrun_unbound(a: Answers) -> bool:
    """Whether torchrun's workers would run unbound on whole nodes: the image is not known
    to have torch.distributed.run --numa-binding (legacy images, your own image)."""
    site = a.site
    if site is None:
        return False
    node = site.node_of(answered_partition(a, site).name)
    image = chosen_image(a)
    bound = jobs.binding("torchrun", jobs.whole_nodes(node, a.int("gpus_per_node", node.gpus)),
                         bool(image and image.numa_binding), own_image=image is None)
    return node.gpus > 1 and bound in ("torchrun-image", "torchrun-own-image")
