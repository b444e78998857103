"""The questionnaire's logic: choices, defaults, checks and the plugin-data snapshot.

copier.yml stays thin: each question calls ``lumi_choices``, ``lumi_default`` or
``lumi_check`` (see :mod:`lumi_scaffold.copier_ext`), which land here with the
answers given so far. Messages name the question, the value and the fix.

:func:`resolve` computes ``plugin_data``: every value the templates take from plugin
data (container path and generation, binds, env, pins, masks). It is recorded in the
answers file, so ``copier update`` replays the old project exactly and brings in only
what changed in the catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import ValidationError

from ._types import REQUIREMENT, check_abs_path, slurm_time_seconds
from .plugins import Catalogue
from .models import ContainerImage, EnvSetting, Framework, NodeLayout, Partition, Site, StorageArea
from .plugin_data import SCHEMA, ContainerFacts, JobFields, PartitionFacts, PluginData, PluginDataError, SiteFacts
from . import plugin_data as _plugin_data
from . import jobs, settings, sources
from .known_issues import affected_image_issues, project_issues, shared_node_notes, split_env
from .tracking import TRACKERS

__all__ = ["CONTAINER_SPECIAL", "TEST_SITES_ENV", "Placeholder", "check", "choices", "default", "offered_sites", "placeholder_answers",
           "placeholders",
           "resolve", "notices"]

PLUGIN_DATA_SCHEMA = SCHEMA
CONTAINER_SPECIAL = ("recommended", "custom", "cotainr")
_PROJECT_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_ARCHIVE = (".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.xz")
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


# ---------------------------------------------------------------- choices


def choices(name: str, answers: Mapping[str, Any], cat: Catalogue) -> dict[str, Any]:
    """Label -> value choices for a question (labels explain, values are stored)."""
    a = Answers(answers, cat)
    site = a.site
    if name == "site":
        return {fit(f"{n}: {cat.sites[n].title}"): n for n in offered_sites(cat)}
    if name == "framework":
        names = cat.frameworks_for(site.name) if site else []
        return {fit(f"{n}: {cat.frameworks[n].title}{_framework_status(cat, site.name, n) if site else ''}"): n
                for n in names}
    if name == "container":
        return _container_choices(a)
    if name == "partition":
        if not site:
            return {}
        return {fit(f"{p.name}: {p.allocation}, up to {p.max_nodes} nodes, {p.max_walltime}"): p.name
                for p in site.partitions}
    if name == "launcher":
        fw = cat.frameworks.get(str(a.get("framework")))
        labels = {"srun": "srun: one task per GPU (recommended)", "torchrun": "torchrun: one task per node spawning one worker per GPU"}
        if _torchrun_unbound(a):
            labels["torchrun"] = "torchrun: one task per node; no CPU binding with this image (srun binds)"
        return {labels[x]: x for x in (fw.launchers if fw else ["srun"])}
    if name == "data_location":
        if not site:
            return {}
        account = str(a.get("account") or "{account}")
        return {fit(f"{s.name}: {s.resolve(account, site.account.project_of(account))} ({s.note})"): s.name
                for s in site.storage if s.data}
    if name == "profiler":
        return {fit(f"{n}: {cat.profilers[n].title}"): n for n in _profilers(a) if n in cat.profilers}
    if name == "tracking":
        return {fit(f"{n}: {t.title}"): n for n, t in TRACKERS.items()}
    raise KeyError(f"no choices for question {name!r}")


def _torchrun_unbound(a: Answers) -> bool:
    """Whether torchrun's workers would run unbound on whole nodes: the image is not known
    to have torch.distributed.run --numa-binding (legacy images, your own image)."""
    site = a.site
    if site is None:
        return False
    node = site.node_of(_answered_partition(a, site).name)
    image = _image(a)
    bound = jobs.binding("torchrun", jobs.whole_nodes(node, a.int("gpus_per_node", node.gpus)),
                         bool(image and image.numa_binding), own_image=image is None)
    return node.gpus > 1 and bound in ("torchrun-image", "torchrun-own-image")


def _framework_status(cat: Catalogue, site: str, framework: str) -> str:
    """' (legacy images only)' or ' (your own image)' where the site has no recommended image."""
    if cat.recommended_image(site, framework):
        return ""
    return " (legacy images only)" if cat.images(site, framework) else " (your own image)"


_CONTAINER_LABELS = {
    "custom": "custom: my own .sif file (asked next)",
    "cotainr": "cotainr: build my own image with cotainr (conda environment file)",
}


def _container_choices(a: Answers) -> dict[str, str]:
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
            label = _image_label(image.id, _status_label(image), image.title) if image else _CONTAINER_LABELS[option]
        out[fit(label)] = option
    return out


STATUS_LABELS = {"observed": "observed, not announced"}


def _status_label(image: ContainerImage) -> str:
    """'legacy', or 'legacy; LAIF-I28' for an image with known issues (which shapes they
    affect is named at the end of copy, once the shape is known); an observed image says
    that it is not announced."""
    status = STATUS_LABELS.get(image.status, image.status)
    keys = ", ".join(dict.fromkeys(i.key for i in image.known_issues))
    return f"{status}; {keys}" if keys else status


def _image_label(image_id: str, status: str, title: str) -> str:
    """'id [status]: title'; where that is too wide, the title's leading comma-separated
    parts go first (the id names the image; the versions at the end tell images apart),
    then a closing parenthesis (the release date, which the LAIF ids carry too)."""
    parts = title.split(", ")
    while len(parts) > 1 and len(f"{image_id} [{status}]: {', '.join(parts)}") > LABEL_WIDTH:
        parts.pop(0)
    label = f"{image_id} [{status}]: {', '.join(parts)}"
    if len(label) > LABEL_WIDTH and label.endswith(")") and " (" in label:  # a date the id also carries
        label = label[:label.rindex(" (")]
    return label


LABEL_WIDTH = 74  # a choice with Copier's pointer in front fits 80 columns


def fit(label: str, width: int = LABEL_WIDTH) -> str:
    """``label`` cut at a word to ``width`` characters, ending in '...' where it was cut."""
    if len(label) <= width:
        return label
    cut = label[: width - 3].rsplit(" ", 1)[0].rstrip(" ,;(")
    return cut + "..."


# ---------------------------------------------------------------- defaults


def default(name: str, answers: Mapping[str, Any], cat: Catalogue) -> Any:
    a = Answers(answers, cat)
    site = a.site
    if name == "site":
        offered = offered_sites(cat)
        return "lumi" if "lumi" in offered else next(iter(offered), "")
    if name == "account":
        return site.account.example if site else ""
    if name == "framework":
        names = cat.frameworks_for(site.name) if site else []
        return "pytorch" if "pytorch" in names else (names[0] if names else "")
    if name == "container":
        # No recommended image: the first legacy one where the site has only those (its status
        # is shown and warned about), else the user's own .sif (a site where users pull their own).
        fw = str(a.get("framework"))
        if not site or cat.recommended_image(site.name, fw):
            return "recommended"
        # An observed image (not announced by the site) is never a default.
        legacy = [i for i in cat.images(site.name, fw) if i.status != "observed"]
        return legacy[0].id if legacy else "custom"
    if name == "container_path":
        # In the site's first data area; on LUMI /project/<account>/containers/<project>.sif.
        area = next((s for s in site.storage if s.data), None) if site else None
        root = _resolve(area, site, a) if area and site else "/project"
        return f"{root}/containers/{a.get('project_name')}.sif"
    if name == "gpus_per_node":
        return site.node.gpus if site else 1
    if name == "partition":
        if not site:
            return ""
        whole = jobs.whole_nodes(site.node, a.int("gpus_per_node"))
        return site.whole_node_partition if whole else site.partial_node_partition
    if name == "data_location":
        if not site:
            return ""
        areas = [s.name for s in site.storage if s.data]
        return "scratch" if "scratch" in areas else areas[0]
    if name == "dataset_archive":
        area = site.storage_area(str(a.get("data_location"))) if site else None
        root = _resolve(area, site, a) if area and site else "/data"
        return f"{root}/datasets/{a.get('project_name')}.tar"
    raise KeyError(f"no computed default for question {name!r}")


class Placeholder(NamedTuple):
    """An answer that is still a made-up example: the question, its value, why, and what to give."""

    name: str
    value: str
    why: str
    give: str


def placeholder_answers(answers: Mapping[str, Any], cat: Catalogue) -> list[Placeholder]:
    """Answers that are still made-up examples: the site's example account (unless its jobs
    may use it), and the default (invented) paths of a custom image and of a pre-staged
    dataset archive."""
    a = Answers(answers, cat)
    site, out = a.site, []
    if site and a.get("account") == site.account.example and not site.account.example_works:
        out.append(Placeholder("account", str(a.get("account")), f"{site.display_name or site.name}'s example, not your project",
                               "<your project>"))
    if a.get("container") == "custom" and a.get("container_path") == default("container_path", answers, cat):
        out.append(Placeholder("container_path", str(a.get("container_path")), "a made-up path", "/path/to/your.sif"))
    if a.get("prestage") and a.get("dataset_archive") == default("dataset_archive", answers, cat):
        out.append(Placeholder("dataset_archive", str(a.get("dataset_archive")), "a made-up path", "/path/to/your.tar"))
    return out


def placeholders(answers: Mapping[str, Any], cat: Catalogue) -> list[str]:
    """:func:`placeholder_answers` as ``name=value (why)`` lines."""
    return [f"{p.name}={p.value} ({p.why})" for p in placeholder_answers(answers, cat)]


# ---------------------------------------------------------------- checks


def check(name: str, value: Any, answers: Mapping[str, Any], cat: Catalogue) -> str:
    """An error message for an invalid answer, or '' when the value is fine."""
    a = Answers({**answers, name: value}, cat)
    checker = _CHECKS.get(name)
    return checker(value, a) if checker else ""


def _project_name(value: Any, a: Answers) -> str:
    if not isinstance(value, str) or not _PROJECT_NAME.fullmatch(value) or len(value) > 64:
        return (
            f"{value!r} is not a valid project name. Use lowercase letters, digits and single dashes, "
            "starting with a letter (e.g. vit-pretraining); the Python package name derives from it."
        )
    return ""


def _site(value: Any, a: Answers) -> str:
    offered = offered_sites(a.cat)
    if value in a.cat.sites and value not in offered:
        return f"site {value!r} is for lumi-scaffold's own tests. Set {TEST_SITES_ENV}=1 to use it, or choose one of {offered}."
    if value not in a.cat.sites:
        return f"unknown site {value!r}. Choose one of {offered} or install the site's plugin."
    return ""


def _account(value: Any, a: Answers) -> str:
    site = a.site
    if site and not site.account.matches(str(value)):
        return f"{value!r} is not a {site.name} project account (like {site.account.example}). {site.account.help}"
    return ""


def _framework(value: Any, a: Answers) -> str:
    site = a.site
    if site and value not in a.cat.frameworks_for(site.name):
        have = a.cat.frameworks_for(site.name)
        return (
            f"site {site.name!r} has no container image for framework {value!r} and does not offer it with "
            f"your own image. Choose one of {have}."
        )
    return ""


def _container(value: Any, a: Answers) -> str:
    site, fw = a.site, str(a.get("framework"))
    if site is None or fw not in a.cat.frameworks_for(site.name):
        return ""  # the framework question reports it
    options = a.cat.container_options(site.name, fw)
    if value in options:
        return ""
    if value == "recommended":
        return f"{site.name} has no recommended {fw} image: users bring their own. Use custom (your .sif) or one of {options}."
    if value == "cotainr":
        return f"{site.name} has no cotainr support in the catalogue (no cotainr system to build for). Use one of {options}."
    return f"{value!r} is not a {fw} image for {site.name}. Use one of {options}."


def _file_path(value: Any, a: Answers, name: str, suffixes: tuple[str, ...], what: str) -> str:
    """An absolute path of a file with one of ``suffixes``; the example in the message
    is this project's default, so it names a file system of the chosen site."""
    example = default(name, a.raw, a.cat)
    try:
        check_abs_path(str(value))
    except ValueError as exc:
        return f"{exc}. Give the absolute path of {what}, e.g. {example}."
    if not str(value).endswith(suffixes):
        return f"{value!r} does not end in {' or '.join(suffixes)}. Give the absolute path of {what}, e.g. {example}."
    return ""


def _container_path(value: Any, a: Answers) -> str:
    if a.get("container") != "custom":
        return ""
    return _file_path(value, a, "container_path", (".sif",), "your container image (.sif)")


def _resolve(area: StorageArea, site: Site, a: Answers) -> str:
    """An area's path for the answered account (and the project it belongs to)."""
    account = str(a.get("account"))
    return area.resolve(account, site.account.project_of(account))


def _max_nodes(site: Site) -> int:
    return max(p.max_nodes for p in site.partitions)


def _nodes(value: Any, a: Answers) -> str:
    site = a.site
    n = a.int("nodes", -1)
    top = _max_nodes(site) if site else 1
    if n < 1 or n > top:
        return f"{value!r} nodes is out of range. Use 1 to {top} (the largest partition's limit)."
    return ""


def _shape_refusal(a: Answers, part: Partition, *answers: str, time: str | None = None) -> str:
    """The first of :func:`lumi_scaffold.jobs.refusals` for the answered shape on ``part``
    that one of ``answers`` is at fault for (any, where none are named)."""
    site = a.site
    assert site is not None
    gpus = a.int("gpus_per_node", -1 if a.get("gpus_per_node") is not None else site.node_of(part.name).gpus)
    found = jobs.refusals(site, part, nodes=a.int("nodes", 1), gpus=gpus, time=time)
    return next((r.use() for r in found if not answers or r.answer in answers), "")


def _answered_partition(a: Answers, site: Site) -> Partition:
    """The answered partition, else the one the default would be for these answers."""
    part = site.partition(str(a.get("partition"))) or site.partition(default("partition", a.raw, a.cat))
    assert part is not None  # the default is one of the site's partitions
    return part


def _gpus(value: Any, a: Answers) -> str:
    site = a.site
    return _shape_refusal(a, _answered_partition(a, site), "gpus_per_node") if site else ""


def _partition(value: Any, a: Answers) -> str:
    site = a.site
    if not site:
        return ""
    part = site.partition(str(value))
    if part is None:
        return f"unknown partition {value!r} on {site.name}. Use one of {[p.name for p in site.partitions]}."
    return _shape_refusal(a, part)


def _walltime(value: Any, a: Answers) -> str:
    try:
        seconds = slurm_time_seconds(str(value))
    except ValueError as exc:
        return str(exc) + "."
    if seconds <= 0:
        return f"{value!r} is zero. Give a positive time such as 01:00:00."
    site = a.site
    part = site.partition(str(a.get("partition"))) if site else None
    return _shape_refusal(a, part, "walltime", time=str(value)) if part else ""


def _supported_by_framework(field: str, noun: str):
    """A check that the answer is one of the framework's ``field`` (launchers, profilers)."""

    def checker(value: Any, a: Answers) -> str:
        fw = a.cat.frameworks.get(str(a.get("framework")))
        allowed = getattr(fw, field) if fw else []
        if fw and value not in allowed:
            return f"{fw.name} does not support {noun} {value!r}. Use one of {allowed}."
        return ""

    return checker


def _profilers(a: Answers) -> list[str]:
    """The framework's profilers that work in the chosen image (all of them for your own image)."""
    fw = a.cat.frameworks.get(str(a.get("framework")))
    names = fw.profilers if fw else ["none"]
    image = _image(a)
    return [n for n in names if image is None or image.profilers is None or n in image.profilers or n == "none"]


def _profiler(value: Any, a: Answers) -> str:
    message = _supported_by_framework("profilers", "profiler")(value, a)
    if message:
        return message
    allowed, image = _profilers(a), _image(a)
    if value not in allowed and image is not None:
        return (f"{value!r} does not work in image {image.id} ({image.title}). Use one of {allowed}"
                f"{' (rocprofv3 replaces rocprof)' if value == 'rocprof' and 'rocprofv3' in allowed else ''}.")
    return ""


def _data_location(value: Any, a: Answers) -> str:
    site = a.site
    areas = [s.name for s in site.storage if s.data] if site else []
    if site and value not in areas:
        return f"{value!r} is not a data area on {site.name}. Use one of {areas}."
    return ""


def _dataset_archive(value: Any, a: Answers) -> str:
    if not a.get("prestage"):
        return ""
    return _file_path(value, a, "dataset_archive", _ARCHIVE, "the dataset packed with tar")


def _profile_rank(value: Any, a: Answers) -> str:
    if a.get("profiler") in (None, "none"):
        return ""
    ranks = a.int("nodes", 1) * a.int("gpus_per_node", 1)
    r = a.int("profile_rank", -1)
    if not 0 <= r < ranks:
        return f"rank {value!r} does not exist: the job has {ranks} ranks (0 to {ranks - 1})."
    return ""


def _extra_requirements(value: Any, a: Answers) -> str:
    for item in split_requirements(value):
        if not REQUIREMENT.match(item):
            return f"{item!r} is not a pip requirement like name or name==1.2 (separate several with spaces or commas)."
    return ""


def _tracking(value: Any, a: Answers) -> str:
    if value not in TRACKERS:
        return f"{value!r} is not a tracker: use one of {', '.join(TRACKERS)}."
    return ""


def split_requirements(value: Any) -> list[str]:
    return [part for part in re.split(r"[\s,]+(?![=<>!~])", str(value or "").strip()) if part]


_CHECKS = {
    "project_name": _project_name,
    "site": _site,
    "account": _account,
    "framework": _framework,
    "container": _container,
    "container_path": _container_path,
    "nodes": _nodes,
    "gpus_per_node": _gpus,
    "partition": _partition,
    "walltime": _walltime,
    "launcher": _supported_by_framework("launchers", "launcher"),
    "data_location": _data_location,
    "dataset_archive": _dataset_archive,
    "profiler": _profiler,
    "profile_rank": _profile_rank,
    "extra_requirements": _extra_requirements,
    "tracking": _tracking,
    # Computed, never asked; checked when it arrives with --data or from an answers file.
    "plugin_data": lambda value, a: _plugin_data.check(value),
}


def check_all(answers: Mapping[str, Any], cat: Catalogue) -> list[str]:
    """Every problem with a complete set of answers, as 'question=value: message' lines."""
    problems = []
    for name in _CHECKS:
        if name in answers:
            message = check(name, answers[name], answers, cat)
            if message:
                problems.append(f"{name}={answers[name]!r}: {message}")
    return problems


# ---------------------------------------------------------------- plugin data


def _image(a: Answers) -> ContainerImage | None:
    site, fw, choice = a.site, str(a.get("framework")), a.get("container")
    if site is None or choice in ("custom", "cotainr"):
        return None
    if choice in (None, "recommended"):
        return a.cat.recommended_image(site.name, fw)
    return a.cat.containers.get(str(choice))


def resolve(answers: Mapping[str, Any], cat: Catalogue) -> dict[str, Any]:
    """plugin_data for these answers, as the JSON-able dict the answers file records
    ({} before the site and framework are known)."""
    data = build_plugin_data(answers, cat)
    return data.dump() if data is not None else {}


def _part(name: str, build: Any, *args: Any, **kwargs: Any) -> Any:
    """``build(*args)``, one part of plugin_data. The answers were checked and the catalogue
    validated before, so a value that does not fit plugin_data's rules comes from a plugin
    (or an answer the checks let through): say which field, in one line."""
    try:
        return build(*args, **kwargs)
    except ValidationError as exc:
        raise PluginDataError(_plugin_data.one_line_message(
            exc, None, f"plugin_data.{name}" if name else "plugin_data",
            fix="report it to the plugin that supplies this value (lumi-scaffold plugins lists them)")) from None


def build_plugin_data(answers: Mapping[str, Any], cat: Catalogue) -> PluginData | None:
    """The validated :class:`PluginData` for these answers, built part by part below."""
    a = Answers(answers, cat)
    site = a.site
    fw = cat.frameworks.get(str(a.get("framework")))
    if site is None or fw is None:
        return None
    nodes = a.int("nodes", 1)
    account = str(a.get("account"))
    group = site.account.project_of(account)  # the project the account belongs to, for {project} in paths
    part = _answered_partition(a, site)
    image = _image(a)
    container = _part("container", _container_facts, a, site, image, multi=nodes > 1)
    cache_area = site.storage_area(site.cache_area)
    assert cache_area is not None  # the site model checks cache_area names an area
    user_dir = cache_area.user_dir(account, group)
    profiler = cat.profilers.get(str(a.get("profiler") or "none")) or cat.profilers["none"]
    data_area = site.storage_area(str(a.get("data_location"))) or next(s for s in site.storage if s.data)
    project = str(a.get("project_name"))
    tracking = _tracking_facts(site, str(a.get("tracking") or "none"))
    return _part(
        "", PluginData,
        schema=PLUGIN_DATA_SCHEMA,
        package=project.replace("-", "_"),
        plugins=dict(sorted(cat.plugin_versions().items())),
        site=_part("site", _site_facts, site, site.node_of(part.name), multi=nodes > 1),
        partition=_part("partition", _partition_facts, part, nodes),
        job=_part("job", _job_fields, a, site, part, container, fw),
        container=container,
        pins=dict(sorted(image.versions.items())) if image else {},  # your own image: versions unknown
        framework=dict(name=fw.name, title=fw.title, needs_master_addr=fw.needs_master_addr,
                                 distributed_init=fw.distributed_init, pinned_packages=fw.pinned_packages,
                                 train_args=fw.train_args),
        **_env(site, fw, nodes, container.generation),
        caches=[dict(name=v, value=f"{user_dir}/cache/{v.lower()}") for v in fw.cache_vars],
        **_kernel_caches(site, fw, f"{user_dir}/cache/kernels/{project}"),
        data_dir=data_area.resolve(account, group),
        dataset_dir=f"{data_area.resolve(account, group)}/datasets/{project}",
        output_root=f"{user_dir}/{project}/outputs",
        storage=[dict(name=s.name, path=s.resolve(account, group), note=s.note) for s in site.storage],
        **_placement(site, account, group),
        profiler=dict(name=profiler.name, title=profiler.title, kind=profiler.kind,
                               command=profiler.command, env=profiler.env, view=profiler.view),
        tracking=tracking,
        requirements=sorted(r for r in dict.fromkeys(fw.requirements + (image.requirements if image else [])
                                                     + [tracking["package"] if tracking else ""]
                                                     + split_requirements(a.get("extra_requirements"))) if r),
        readme=[s.model_dump() for s in site.readme + fw.readme],
    )


def _tracking_facts(site: Site, name: str) -> dict[str, Any] | None:
    """The tracker the jobs log to, and how the site's users look at its runs (None: none)."""
    if name == "none" or name not in TRACKERS:
        return None
    viewer = next((v for v in site.tracking_viewers if v.name == name), None)
    # The site's viewer may need a version of the tracker's package (LUMI's MLflow app).
    return dict(name=name, title=TRACKERS[name].title, package=(viewer.package if viewer else "") or TRACKERS[name].package,
                viewer=viewer.text if viewer else "", source=viewer.source if viewer else "")


def _placement(site: Site, account: str, group: str | None) -> dict[str, Any]:
    """Where the project's checkout belongs (the user's directory in the site's project
    area) and the home area it should stay out of, where the site names them."""
    area = site.storage_area(site.project_area) if site.project_area else None
    home = next((s for s in site.storage if s.kind == "home"), None)
    return {
        "project_area": dict(name=area.name, path=area.user_dir(account, group), note=area.note) if area else None,
        "home_area": dict(name=home.name, path=home.resolve(account, group), note=home.note) if home else None,
    }


def _env(site: Site, fw: Framework, nodes: int, generation: str) -> dict[str, Any]:
    """The settings run.sh exports (their known issues stay in the catalogue), and those a
    known issue leaves out for this image and shape. A framework's settings are shared by
    every site: their sources as lumi_cite leaves them."""
    settings = [e for e in site.env + [_cited_for(e, site.name) for e in fw.env] if e.scope == "all" or nodes > 1]
    kept, left_out = split_env(settings, nodes, generation)
    return {"env": [e.model_copy(update={"known_issues": []}) for e in kept], "env_left_out": left_out}


def _cited_for(setting: EnvSetting, site: str) -> EnvSetting:
    return setting.model_copy(update={"source": sources.field_for_site(setting.source, site)})


def _kernel_caches(site: Site, fw: Framework, store: str) -> dict[str, Any]:
    """Compiler caches kept in node-local tmp during a job (MIOpen's where the site sets its
    directory, Triton's and TorchInductor's where the framework compiles with torch.compile)
    and their archives' directory in the project's cache area, which carries them from job
    to job."""
    caches = []
    if site.miopen_cache:
        caches.append(dict(name="miopen", title="MIOpen's kernel cache", path=site.miopen_cache))
    if fw.triton_cache:
        for name, title in (("triton", "Triton's kernel cache"), ("inductor", "TorchInductor's cache")):
            caches.append(dict(name=name, title=title,
                               path=f"{site.node_local_tmp.rstrip('/')}/${{USER}}-{name}-cache-${{SLURM_JOB_ID}}-${{SLURM_NODEID}}"))
    return {"kernel_caches": caches, "kernel_cache_store": store if caches else ""}


def _site_facts(site: Site, node: NodeLayout, multi: bool) -> SiteFacts:
    """The site, with the nodes of the job's partition."""
    return SiteFacts(
        name=site.name, title=site.title, display_name=site.display_name or site.name,
        runtime=site.container_runtime, module_reset=site.module_reset or "",
        rccl_check=site.rccl_check if multi else None,
        allreduce_reference=site.allreduce_reference if multi else None,
        gpus_per_node=node.gpus, gpu_type=node.gpu_type, cpus_per_gpu=node.cpus_per_gpu, cpu_masks=node.cpu_masks,
        mem_per_gpu_gb=node.mem_per_gpu_gb, mem_per_node_gb=node.mem_per_node_gb,
        node_local_tmp=site.node_local_tmp, node_local_tmp_note=site.node_local_tmp_note,
        bind_roots=site.bind_roots, miopen_cache=site.miopen_cache or "",
        memory_follows_gpus=site.memory_follows_gpus, gpu_numa=node.gpu_numa, gpu_nic=node.gpu_nic,
        interconnect=site.interconnect, reserved_cores=node.reserved_cores,
        reserved_cores_note=node.reserved_cores_note, gpu_power=node.gpu_power,
        rccl_debug_alias=site.rccl_debug_alias or "",
    )


def _partition_facts(part: Partition, nodes: int) -> PartitionFacts:
    return PartitionFacts(
        name=part.name, slurm_partition=part.slurm_name, qos=part.qos or "", allocation=part.allocation,
        max_walltime=part.walltime_limit(nodes), purpose=part.purpose, chains=part.chains, arrays=part.arrays,
        billing=part.billing,
        source=part.source,
    )


def _container_facts(a: Answers, site: Site, image: ContainerImage | None, multi: bool) -> ContainerFacts:
    if image is not None:
        generation = site.generation(image.generation)
        assert generation is not None  # the catalogue checks each image's generation
        facts: dict[str, Any] = dict(
            id=image.id, title=image.title, path=image.path, status=image.status,
            replaced_by=image.replaced_by or "", source=image.source, numa_binding=image.numa_binding,
            # Names whose exact version string the catalogue does not know (a wildcard never does).
            versions_unconfirmed=sorted(set(image.versions_unconfirmed) | {n for n, v in image.versions.items() if "*" in v}),
            pull_from=image.pull_from or "",
            known_issues=[dict(key=i.key, title=i.title, instead=i.instead, conditional=i.conditional)
                          for i in affected_image_issues(image, 2 if multi else 1)],
        )
    else:
        facts = _own_image(a, site)
        # A cotainr build runs as its base image's generation (LUMI: a LAIF image).
        generation = site.cotainr_generation if facts["status"] == "cotainr" else site.own_generation
    modules = generation.load_modules
    # Template versions before `modules` load one module: the bindings module, else the last.
    single = next((m for m in modules if m.sets_binds), modules[-1] if modules else None)
    return ContainerFacts(
        **facts,
        generation=generation.name,
        run_verb=generation.run_verb,
        activate_var=generation.activate_var or "",
        module_use=single.use or "" if single else "",
        module=single.name if single else "",
        modules=modules,
        binds=list(dict.fromkeys(generation.binds + (generation.multi_node_binds if multi else []))),
        mpi_srun_options=generation.mpi_srun_options if multi else [],
        relative=facts["path"].startswith("container/"),
    )


def _own_image(a: Answers, site: Site) -> dict[str, Any]:
    """Container facts of the user's own image: ``custom`` (a .sif path) or a cotainr build."""
    choice = str(a.get("container"))
    if choice == "cotainr" and site.cotainr:
        return {"id": choice, "title": "cotainr image", "path": f"container/{a.get('project_name')}.sif",
                "status": choice, "cotainr": site.cotainr}
    return {"id": "custom", "title": "custom image", "path": str(a.get("container_path")), "status": "custom"}


def _job_fields(a: Answers, site: Site, part: Partition, container: ContainerFacts, fw: Framework) -> JobFields:
    """The job model (lumi_scaffold.jobs) for these answers."""
    node = site.node_of(part.name)
    smoke = site.partition(site.partial_node_partition)
    assert smoke is not None  # the site model checks its partition names
    request = jobs.Request(
        project=str(a.get("project_name")), account=str(a.get("account")), nodes=a.int("nodes", 1),
        gpus=a.int("gpus_per_node", node.gpus), launcher=str(a.get("launcher") or "srun"),
        # The training job's time limit (copier.yml's default before it is answered).
        walltime=str(a.get("walltime") or "01:00:00"), site=site, part=part, smoke=smoke,
        numa_binding=container.numa_binding, own_image=container.status in ("custom", "cotainr"))
    return JobFields(**jobs.fields(request, container_binds=container.binds, allreduce_bench=_allreduce_bench(fw)))


def _allreduce_bench(fw: Framework) -> str:
    """The framework benchmark the preflight falls back on (the image has no all_reduce_perf):
    JAX's psum, or torch.distributed's all_reduce for frameworks on torch.distributed's
    env:// rendezvous (PyTorch, DeepSpeed); none for others."""
    if fw.name == "jax":
        return "jax"
    return "torch" if fw.needs_master_addr else ""


def _legacy_only(plugin_data: Mapping[str, Any], cat: Catalogue) -> str:
    """A notice where the project's image is of a legacy generation and so is every image
    the catalogue has for its framework on its site (JAX on LUMI today)."""
    site = cat.sites.get(str((plugin_data.get("site") or {}).get("name")))
    framework = str((plugin_data.get("framework") or {}).get("name"))
    container = plugin_data.get("container") or {}
    generation = site.generation(str(container.get("generation"))) if site else None
    if site is None or generation is None or not generation.legacy or container.get("id") not in cat.containers:
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


def notices(plugin_data: Mapping[str, Any], cat: Catalogue) -> list[str]:
    """Warnings for the end of copy/update and for doctor: legacy or removed images, torchrun
    workers without CPU binding, known issues of the image or the settings for the project's
    shape."""
    out = []
    container = plugin_data.get("container") or {}
    current = cat.containers.get(container.get("id", ""))
    status = current.status if current else container.get("status")
    if status in ("legacy", "removed"):
        target = cat.containers.get((current.replaced_by if current else None) or container.get("replaced_by") or "")
        advice = f" Move to {target.id} ({target.path}) with: lumi-scaffold update -d container={target.id}" if target else ""
        out.append(f"Container image {container.get('id')} is {status}.{advice}")
    if status == "observed":
        recommended = cat.recommended_image(current.site, current.framework) if current else None
        move = f" or move to the recommended image with: lumi-scaffold update -d container={recommended.id}" if recommended else ""
        out.append(f"Container image {container.get('id')} is observed, not announced: it was seen in public job scripts "
                   f"[{current.source if current else ''}], and {((plugin_data.get('site') or {}).get('display_name') or 'the site')} "
                   f"has not announced it. Run lumi-scaffold doctor on a login node to check that it is there, and "
                   f"jobs/smoke-test.sbatch before a long job{move}")
    legacy_only = _legacy_only(plugin_data, cat)
    out += [legacy_only] if legacy_only else []
    job = plugin_data.get("job") or {}
    if job.get("binding") in ("torchrun-image", "torchrun-own-image") or (
            "binding" not in job and job.get("whole_node") and job.get("ranks_per_task", 1) > 1 and not job.get("torchrun_binding")):
        out.append(f"torchrun's workers get no CPU binding with {container.get('id')}: the image is not known to have "
                   "torch.distributed.run --numa-binding (PyTorch 2.9 and later). The srun launcher binds each rank to "
                   "its GPU's cores: lumi-scaffold update -d launcher=srun")
    return out + project_issues(plugin_data, cat) + shared_node_notes(plugin_data, cat)

