"""Known issues of images and env settings (catalogue data), for new and existing projects.

:func:`notices` are the warnings at the end of copy and update and in ``doctor``: legacy,
removed or observed images, torchrun without CPU binding, and the known issues below.

An image or an env setting may carry :class:`~lumi_scaffold.models.KnownIssue` entries. A
new project leaves out the settings an issue affects (scripts/values.sh says why), and the
end of copy and update, ``doctor`` and ``explain`` name the issues that affect a project's
image and shape, with the way out: ``lumi-scaffold update`` (with ``-d container=...`` where the
image itself is affected). Existing projects are judged by the catalogue installed now,
since an issue is often reported after the project was made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .models import ContainerImage, EnvSetting, KnownIssue
from .plugin_data import PluginData, validate_plugin_data

__all__ = ["affected_image_issues", "as_plugin_data", "nodes_of", "notices", "project_issues", "shared_node_notes",
           "split_env"]


def split_env(settings: Iterable[EnvSetting], nodes: int, generation: str) -> tuple[list[EnvSetting], list[dict[str, str]]]:
    """The settings a project exports, and those a known issue leaves out (name, value, why, source)."""
    kept, left_out = [], []
    for setting in settings:
        issue = next((i for i in setting.known_issues if i.affects(nodes, generation)), None)
        if issue is None:
            kept.append(setting)
        else:
            left_out.append(dict(name=setting.name, value=setting.value, why=f"{issue.title}; {issue.instead}",
                                 source=issue.source))
    return kept, left_out


def affected_image_issues(image: ContainerImage | None, nodes: int) -> list[KnownIssue]:
    """The image's known issues a job on ``nodes`` nodes may hit."""
    return [i for i in image.known_issues if i.affects(nodes, "")] if image else []


def nodes_of(data: PluginData) -> int:
    """The training job's nodes (schema 2's recorded options are read once, by the model's
    upgrade); 1 where the project records no shapes (0.1 and 0.2)."""
    train = data.job.shapes.get("train")
    return train.nodes if train else 1


def as_plugin_data(plugin_data: PluginData | Mapping[str, Any]) -> PluginData:
    """The model itself, or a recorded dict validated into it (the ``lumi_notices`` Jinja
    global passes the answer as Copier holds it: already validated by its question)."""
    return plugin_data if isinstance(plugin_data, PluginData) else validate_plugin_data(dict(plugin_data))


def _way_out(cat: Any, image: ContainerImage, nodes: int) -> ContainerImage | None:
    """The image to move to: the replacement, else the recommended one, else any offered
    image, the first that no known issue affects in this shape; never an observed image
    (seen in use, not announced by the site)."""
    candidates = [cat.containers.get(image.replaced_by or ""), cat.recommended_image(image.site, image.framework),
                  *cat.images(image.site, image.framework)]
    return next((c for c in candidates if c is not None and c.id != image.id and c.status not in ("removed", "observed")
                 and not affected_image_issues(c, nodes)), None)


def _line(issue: KnownIssue, what: str, fix: str) -> str:
    condition = f" {issue.conditional}" if issue.conditional else ""
    return f"Known issue [{issue.source}] {what}{condition}: {issue.title}. Instead: {issue.instead}. Fix: {fix}"


def project_issues(data: PluginData, cat: Any) -> list[str]:
    """One line per known issue that affects a project with this ``plugin_data``, as the
    catalogue knows them now."""
    generation = data.container.generation
    nodes = nodes_of(data)
    shape = f"{nodes} nodes" if nodes > 1 else "1 node"
    out = []
    image = cat.containers.get(data.container.id)
    for issue in affected_image_issues(image, nodes):
        target = _way_out(cat, image, nodes)
        fix = (f"lumi-scaffold update -d container={target.id}" if target else
               "no image in the catalogue is free of it for this shape; watch the source for a fixed release")
        out.append(_line(issue, f"affects image {image.id} on {shape}", fix))
    site = cat.sites.get(data.site.name)
    framework = cat.frameworks.get(data.framework.name)
    settings = {s.name: s for s in [*(site.env if site else []), *(framework.env if framework else [])]}
    for recorded in data.env:
        setting = settings.get(recorded.name)
        if setting is None or recorded.scope == "off":
            continue
        for issue in setting.known_issues:
            if issue.affects(nodes, generation):
                what = (f"affects {setting.name}={recorded.value} (image_env in scripts/values.sh; scripts/lib/run.sh "
                        f"before 0.4) with a {generation} image")
                out.append(_line(issue, what, "lumi-scaffold update (the catalogue now leaves the setting out)"))
                break
    return out


def shared_node_notes(data: PluginData, cat: Any) -> list[str]:
    """A line where the training job puts more than one GPU on a partition's shared nodes and
    the partition's data knows what such jobs hit (LUMI small-g [TM-ai-E08]), with whole nodes
    as the way out; judged by the catalogue installed now."""
    site = cat.sites.get(data.site.name)
    part = site.partition(data.partition.name) if site else None
    job = data.job
    if site is None or part is None or part.shared_multi_gpu is None or job.whole_node:
        return []
    train = job.shapes.get("train")
    gpus = train.gpus_per_node * train.nodes if train else job.tasks * job.ranks_per_task
    if gpus <= 1:
        return []
    note = part.shared_multi_gpu
    source = f" [{note.source}]" if note.source else ""
    whole = site.partition(site.whole_node_partition)
    fix = (f" Fix: lumi-scaffold update -d partition={whole.name} -d gpus_per_node={site.node_of(whole.name).gpus} "
           f"(whole nodes, billed as such), or one GPU per job" if whole else " Fix: one GPU per job")
    return [f"jobs/train.sbatch puts {gpus} GPUs on {part.name}'s shared nodes: {note.text}{source}.{fix}"]


def _legacy_only(data: PluginData, cat: Any) -> str:
    """A notice where the project's image is of a legacy generation and so is every image
    the catalogue has for its framework on its site (JAX on LUMI today)."""
    site = cat.sites.get(data.site.name)
    framework = data.framework.name
    generation = site.generation(data.container.generation) if site else None
    if site is None or generation is None or not generation.legacy or data.container.id not in cat.containers:
        return ""
    images = cat.images(site.name, framework)
    if any(not (g := site.generation(i.generation)) or not g.legacy for i in images):
        return ""
    newest = cat.recommended_image(site.name, framework) or images[0]
    title = cat.frameworks[framework].title if framework in cat.frameworks else framework
    note = f"; {generation.note[:1].lower()}{generation.note[1:].rstrip('.')}" if generation.note else ""
    return (f"{title} on {site.display_name or site.name} has only images of a legacy generation ({generation.name}: "
            f"{generation.title}{note}); {newest.id} is the newest. lumi-scaffold update moves the project once the "
            "catalogue has a newer image")


def notices(plugin_data: PluginData | Mapping[str, Any], cat: Any) -> list[str]:
    """Warnings for the end of copy/update and for doctor: legacy or removed images, torchrun
    workers without CPU binding, known issues of the image or the settings for the project's
    shape."""
    data = as_plugin_data(plugin_data)
    out = []
    container = data.container
    current = cat.containers.get(container.id)
    status = current.status if current else container.status
    if status in ("legacy", "removed"):
        target = cat.containers.get((current.replaced_by if current else None) or container.replaced_by)
        advice = f" Move to {target.id} ({target.path}) with: lumi-scaffold update -d container={target.id}" if target else ""
        out.append(f"Container image {container.id} is {status}.{advice}")
    if status == "observed":
        recommended = cat.recommended_image(current.site, current.framework) if current else None
        move = f" or move to the recommended image with: lumi-scaffold update -d container={recommended.id}" if recommended else ""
        out.append(f"Container image {container.id} is observed, not announced: it was seen in public job scripts "
                   f"[{current.source if current else ''}], and {data.site.display_name or 'the site'} "
                   f"has not announced it. Run lumi-scaffold doctor on a login node to check that it is there, and "
                   f"jobs/smoke-test.sbatch before a long job{move}")
    legacy_only = _legacy_only(data, cat)
    out += [legacy_only] if legacy_only else []
    if data.job.binding in ("torchrun-image", "torchrun-own-image"):
        out.append(f"torchrun's workers get no CPU binding with {container.id}: the image is not known to have "
                   "torch.distributed.run --numa-binding (PyTorch 2.9 and later). The srun launcher binds each rank to "
                   "its GPU's cores: lumi-scaffold update -d launcher=srun")
    return out + project_issues(data, cat) + shared_node_notes(data, cat)
