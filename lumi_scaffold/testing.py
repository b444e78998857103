"""Test helpers for lumi-scaffold and for plugin authors.

``answer_matrix`` lists every combination of the choice answers a catalogue allows
(site, framework, container, launcher, data location, pre-staging, profiler, partition
with a job shape that fits it); ``render_project`` renders one in-process;
``lint_projects`` runs bash -n and shellcheck once over the distinct shell files of many
projects, so a full matrix stays affordable.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import itertools
import multiprocessing
import os
import re
import shutil
import tempfile
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from . import plugins as _plugins
from . import settings
from .answers import read_answers
from .choices import offered_profilers
from .bundle import template_module, template_root
from . import lint
from .lint import ValuesUnion, bash_syntax, check_headers, lint_key, shell_files
from .models import Site
from .tracking import TRACKERS
from .plugins import Catalogue, get_catalogue

__all__ = ["answer_matrix", "job_shapes", "lint_projects", "project_values", "render_many", "render_project",
           "scratch_dir", "template_root", "template_source"]


def template_source(dest: Path | None = None, *, root: Path | None = None) -> Path:
    """A copy of the template without git history (renders faster than a git source):
    ``root``'s (a checkout), this installation's by default."""
    root = root or template_root()
    if root is None:
        raise FileNotFoundError("lumi-scaffold's template is not installed with this lumi_scaffold package: "
                                "install lumi-scaffold from a wheel or a checkout, or set LUMI_SCAFFOLD_TEMPLATE")
    dest = Path(dest or tempfile.mkdtemp(prefix="lumi-template-"))
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(root / "copier.yml", dest / "copier.yml")
    shutil.copytree(root / "project-templates", dest / "project-templates", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))
    return dest


def project_values(project: Path) -> dict[str, Any]:
    """A rendered project's ``scripts/values.sh`` as its jobs read it, each ``${NAME}`` as
    written: ``project_values(p)["modules"] == ["load rocm"]``. Read with the project's own
    ``scripts/lib/project_values.py``, the reader its helpers use."""
    module = template_module("project_values", Path(project) / "scripts" / "lib" / "project_values.py")
    return dict(module.read(Path(project) / "scripts" / "values.sh", raw=True))


def job_shapes(site: Site) -> list[tuple[str, int, int]]:
    """(partition, nodes, gpus_per_node), each shape once: two whole nodes on each
    whole-node partition that allows two (one where it allows one), one node with up to two
    GPUs on each by-resource partition (its fewest nodes, whole, where it has a minimum),
    one whole node on the partial-node partition (which
    adds --exclusive), and, when none of those spans nodes, two nodes' worth of GPUs on the
    first partition that allows two nodes, so a multi-node job is rendered wherever the
    site can run one."""
    full = site.node.gpus
    shapes = []
    for part in site.partitions:
        if part.allocation == "whole-node" or part.min_nodes > 1:
            shapes.append((part.name, max(part.min_nodes, min(2, part.max_nodes)), full))
        else:
            shapes.append((part.name, 1, min(2, full)))
    shapes.append((site.partial_node_partition, 1, full))
    if all(nodes == 1 for _, nodes, _ in shapes):
        shapes += [(part.name, 2, full) for part in site.partitions if part.min_nodes <= 2 <= part.max_nodes][:1]
    return list(dict.fromkeys(shapes))


def answer_matrix(cat: Catalogue | None = None, *, sites: Iterable[str] | None = None,
                  frameworks: Iterable[str] | None = None, **fixed: Any) -> Iterator[dict[str, Any]]:
    """Every combination of the choice answers for the given sites and frameworks (by
    default every site the questionnaire offers: not the test sites unless asked for)."""
    from .questions import offered_sites

    cat = cat or get_catalogue()
    trackers = list(TRACKERS)
    for site_name in sites or offered_sites(cat):
        site = cat.sites[site_name]
        for fw_name in frameworks or cat.frameworks_for(site_name):
            if fw_name not in cat.frameworks_for(site_name):
                continue
            fw = cat.frameworks[fw_name]
            # recommended only where there is a recommended image, cotainr only where the site has it
            containers = cat.container_options(site_name, fw_name, include_removed=False)
            areas = [s.name for s in site.storage if s.data]
            for index, (container, launcher, area, prestage, profiler, shape) in enumerate(itertools.product(
                containers, fw.launchers, areas, (False, True), offered_profilers(fw, site), job_shapes(site)
            )):
                if profiler not in profiler_choices(cat, site_name, fw_name, container):
                    continue  # it does not work in this image
                partition, nodes, gpus = shape
                answers = {
                    "project_name": "demo",
                    "site": site_name,
                    "account": site.account.example,
                    "framework": fw_name,
                    "container": container,
                    "nodes": nodes,
                    "gpus_per_node": gpus,
                    "partition": partition,
                    "launcher": launcher,
                    "data_location": area,
                    "prestage": prestage,
                    "profiler": profiler,
                    # Trackers in turn, not as one more axis (4x the matrix): each meets
                    # every framework, launcher and shape.
                    "tracking": trackers[index % len(trackers)],
                }
                if container == "custom":
                    answers["container_path"] = "/project/containers/custom.sif"
                if profiler != "none":
                    answers["profile_rank"] = nodes * gpus - 1
                yield {**answers, **fixed}


def profiler_choices(cat: Catalogue, site: str, framework: str, container: str) -> list[str]:
    """The profilers the questionnaire offers for this image."""
    from .questions import choices

    return list(choices("profiler", {"site": site, "framework": framework, "container": container}, cat).values())


def render_project(template: Path | str, dest: Path, answers: dict[str, Any], vcs_ref: str | None = None) -> Path:
    """Render one project in-process with ``answers`` and defaults for the rest; ``vcs_ref``:
    the git ref of a template in git (Copier's default: its newest tag; "HEAD" for the
    checkout as it is, uncommitted changes included)."""
    import copier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copier.run_copy(str(template), str(dest), data=answers, defaults=True, unsafe=True, quiet=True,
                        settings=copier.Settings(), vcs_ref=vcs_ref)
    return Path(dest)


@contextlib.contextmanager
def scratch_dir(fallback: Path | None = None, need_bytes: int = 2 * 1024**3) -> Iterator[Path]:
    """A temporary directory in tmpfs (``/dev/shm``) when it is writable and has
    ``need_bytes`` free, else one under ``fallback`` (or the default temp directory);
    removed on exit. Rendering thousands of projects creates tens of thousands of files,
    and creating a file costs ~160 µs on the ext4 of our CI machines against ~19 µs on
    tmpfs (12 ms per project, docs/performance.md)."""
    shm = Path("/dev/shm")
    base = fallback
    try:
        if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > need_bytes:
            base = shm
    except OSError:
        pass
    with tempfile.TemporaryDirectory(dir=base, prefix="lumi-scaffold-") as directory:
        yield Path(directory)


def _render_chunk(job: tuple[str, list[tuple[str, dict[str, Any]]], Callable[[], Any] | None]) -> list[tuple[str, str]]:
    template, items, around = job
    failures = []
    with around() if around else contextlib.nullcontext():
        for dest, answers in items:
            try:
                render_project(template, Path(dest), answers)
            except Exception as exc:  # reported per combination
                failures.append((dest, f"{type(exc).__name__}: {exc}"))
    return failures


def render_many(template: Path | str, root: Path, matrix: list[dict[str, Any]], workers: int = 2) -> list[tuple[str, str]]:
    """Render each answer set into root/<index> with plain Copier, in ``workers``
    processes; returns (dest, error) for failures."""
    return _render_many(template, root, matrix, workers)


def _render_many(template: Path | str, root: Path, matrix: list[dict[str, Any]], workers: int = 2,
                 around: Callable[[], Any] | None = None) -> list[tuple[str, str]]:
    """:func:`render_many`, each worker's renders inside ``around()`` (a context manager
    factory importable by name, so it reaches the workers); the repository's own matrix
    test passes its Copier shortcuts here (tests/copier_shortcuts.py)."""
    items = [(str(root / f"{i:05d}"), answers) for i, answers in enumerate(matrix)]
    chunks = [(str(template), items[i::workers], around) for i in range(workers)]
    if workers == 1:
        return _render_chunk(chunks[0])
    with ProcessPoolExecutor(workers) as pool:
        return [f for result in pool.map(_render_chunk, chunks) for f in result]


def _shellcheck(files: list[Path]) -> list[str]:
    """lint.shellcheck, by a name that is always this function (a worker process gets it by
    name, even where lint.shellcheck is wrapped in the parent: the suite's memo)."""
    return lint.shellcheck(files)


def lint_projects(projects: Iterable[Path], cat: Catalogue | None = None, workers: int = 2,
                  answers: Iterable[Mapping[str, Any]] | None = None) -> list[str]:
    """bash -n + shellcheck on one shell file of each kind that lints alike
    (lumi_scaffold.lint.lint_key; of scripts/values.sh, each distinct line:
    lumi_scaffold.lint.ValuesUnion), #SBATCH checks on every project. ``answers``: each
    project's answers (at least ``site`` and ``partition``) where the caller has them, as
    a render matrix does; otherwise each project's answers file is read (~30 ms with
    ruamel's pure-Python parser), while shellcheck runs."""
    cat = cat or get_catalogue()
    projects = list(projects)
    recorded = None if answers is None else list(answers)
    if recorded is not None and len(recorded) != len(projects):
        raise ValueError(f"lint_projects: {len(projects)} projects but {len(recorded)} answer sets")
    unique: dict[str, Path] = {}
    union = ValuesUnion()
    for project in projects:
        for path in shell_files(project):
            if path.relative_to(project) == Path("scripts/values.sh") and union.add(path):
                continue
            unique.setdefault(lint_key(path), path)
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        lines, where = union.write(Path(scratch))
        files = sorted(unique.values()) + lines
        batches = [files[i::workers] for i in range(workers)]
        with ProcessPoolExecutor(workers) as pool:
            running = [pool.submit(_shellcheck, batch) for batch in batches]
            found = bash_syntax(files)
            for i, project in enumerate(projects):
                given = recorded[i] if recorded is not None else read_answers(project)
                site = str(given.get("site") or "")
                problems += [f"{project}: {p}" for p in check_headers(project, site, cat, answers=given)]
            for batch in running:
                found += batch.result()
    return problems + [ValuesUnion.locate(finding, where) for finding in found]


# ---------------------------------------------------------------- for plugin authors
#
# An isolated catalogue holds the built-in plugins plus the plugins under test, and none
# of the plugins installed in the environment, so a plugin's tests do not depend on what
# else is installed. ``isolated_catalogue`` also makes it the catalogue Copier's extension
# and the CLI see while the block runs, so projects render from it::
#
#     import lumi_site_mycluster
#     from lumi_scaffold.testing import catalogue_fixture, check_conformance
#
#     catalogue = catalogue_fixture(lumi_site_mycluster)
#
#     def test_conformance(catalogue):
#         assert check_conformance(catalogue, "lumi-site-mycluster") == []

__all__ += ["catalogue_fixture", "check_conformance", "check_example", "isolated_catalogue", "plugin_catalogue", "plugin_matrix", "use_catalogue"]


def _named_plugin(item: Any) -> tuple[str, Any, _plugins.PluginInfo]:
    """(name, object, info) for a plugin given as an object, a module path or (name, either)."""
    name = None
    if isinstance(item, tuple):
        name, item = item
    if isinstance(item, str):
        item = importlib.import_module(item)
    label = getattr(item, "__name__", None) or type(item).__qualname__
    ep = None
    if isinstance(item, types.ModuleType):  # use its entry-point name, as when it is installed
        ep = next((e for e in importlib.metadata.entry_points(group=_plugins.ENTRY_POINT_GROUP) if e.value == label), None)
    name = name or (ep.name if ep else label)
    dist = ep.dist if ep is not None else None
    info = _plugins.PluginInfo(name, label, builtin=False, distribution=dist.name if dist else None,
                               version=dist.version if dist else None)
    return name, item, info


def _build(items: Iterable[Any], builtins: Iterable[str] | None, installed: bool):
    pm = _plugins.new_plugin_manager()
    infos, problems = _plugins.load_plugins(pm, installed=installed, builtins=builtins,
                                            extra=[_named_plugin(item) for item in items])
    return pm, _plugins.build_catalogue(pm, infos, problems)


def plugin_catalogue(*items: Any, builtins: Iterable[str] | None = None, installed: bool = False) -> Catalogue:
    """A new catalogue of the built-in plugins plus ``items``.

    Each item is a plugin module or object with ``@hookimpl`` functions, a module path, or
    ``(name, plugin)``. A module is named after its installed entry point when it has one.
    ``builtins`` limits the built-in plugins (e.g. ``["lumi", "profilers"]``);
    ``installed=True`` loads the installed plugins too, as ``get_catalogue()`` does (then
    ``builtins`` is ignored and the LUMI_SCAFFOLD_* switches apply). Problems are in
    ``.problems``.
    """
    return _build(items, builtins, installed)[1]


@contextlib.contextmanager
def use_catalogue(cat: Catalogue, pm: Any = None) -> Iterator[Catalogue]:
    """Make ``cat`` the process-wide catalogue (what Copier's extension, lint and the CLI
    use) until the block ends; the previous one comes back afterwards."""
    with _plugins.catalogue_in_use(cat, pm):
        yield cat


@contextlib.contextmanager
def isolated_catalogue(*items: Any, builtins: Iterable[str] | None = None, installed: bool = False) -> Iterator[Catalogue]:
    """:func:`plugin_catalogue`, made the process-wide catalogue inside the block."""
    pm, cat = _build(items, builtins, installed)
    with use_catalogue(cat, pm):
        yield cat


def catalogue_fixture(*items: Any, scope: str = "module", builtins: Iterable[str] | None = None,
                      installed: bool = False) -> Callable[..., Any]:
    """A pytest fixture yielding an :func:`isolated_catalogue` of ``items``::

        catalogue = catalogue_fixture(my_plugin)   # at module level of a test file
    """
    import pytest

    @pytest.fixture(scope=scope)  # type: ignore[call-overload]  # scope: a pytest scope name (str), pytest checks it
    def isolated_catalogue_fixture() -> Iterator[Catalogue]:
        with isolated_catalogue(*items, builtins=builtins, installed=installed) as cat:
            yield cat

    return isolated_catalogue_fixture


def _registered(cat: Catalogue, plugin_name: str) -> dict[str, list[str]]:
    info = next((p for p in cat.plugins if p.name == plugin_name), None)
    return info.registered if info else {}


def _pairs(cat: Catalogue, plugin_name: str) -> list[tuple[str, str]]:
    """(site, framework) pairs whose projects change because of the plugin."""
    reg = _registered(cat, plugin_name)
    offered = {(s, f) for s in cat.sites for f in cat.frameworks_for(s)}
    pairs = {(s, f) for s, f in offered if s in reg.get("site", []) or f in reg.get("framework", [])}
    for image_id in reg.get("container", []):
        image = cat.containers.get(image_id)
        if image is not None:
            pairs |= {(s, f) for s, f in offered if s == image.site and cat.serves(image, f)}  # runs_on too
    for tf in _plugin_files(cat, plugin_name):
        pairs |= {(s, f) for s, f in offered if (s if tf.owner == "site" else f) == tf.owner_name}
    for profiler in reg.get("profiler", []):
        pairs |= {(s, f) for s, f in offered if profiler in offered_profilers(cat.frameworks[f], cat.sites[s])}
    return sorted(pairs)


def _plugin_files(cat: Catalogue, plugin_name: str) -> list:
    names = set(_registered(cat, plugin_name).get("template file", []))
    return [f for f in cat.files if f.name in names]


def plugin_matrix(cat: Catalogue, plugin_name: str) -> list[dict[str, Any]]:
    """Every answer combination whose project the plugin adds or changes: its sites with
    every framework offered there, its frameworks on every site, its images, the owners
    of its template files, the frameworks that list its profilers."""
    registered = set(_registered(cat, plugin_name).get("container", []))

    def own_or_alias(answers: dict[str, Any]) -> bool:
        # An image a framework gets from the one it runs on (Framework.runs_on) is covered
        # by "recommended"; the base framework's own matrix renders every one of them.
        image = cat.containers.get(str(answers["container"]))
        return image is None or image.id in registered or image.framework == answers["framework"]

    return [a for site, fw in _pairs(cat, plugin_name) for a in answer_matrix(cat, sites=[site], frameworks=[fw])
            if own_or_alias(a)]


def _shown(answers: dict[str, Any]) -> str:
    keys = ("site", "framework", "container", "launcher", "partition", "nodes", "gpus_per_node", "data_location",
            "prestage", "profiler")
    return " ".join(f"{k}={answers[k]}" for k in keys if k in answers)


def _first(lines: list[str], limit: int = 20) -> list[str]:
    return lines if len(lines) <= limit else lines[:limit] + [f"... and {len(lines) - limit} more"]


def check_conformance(catalogue: Catalogue, plugin_name: str, *, template: Path | str | None = None,
                      workers: int = 2, run_examples: bool = True,
                      matrix: Iterable[Mapping[str, Any]] | None = None) -> list[str]:
    """Problems with everything ``plugin_name`` registered in ``catalogue`` ([] if none).

    Checks that the plugin loaded without recorded problems and registered something;
    that its images name a registered site and framework; that each of its frameworks is
    offered on some site and each of its sites offers some framework; that its template
    files belong to a registered site or framework; that every project in
    :func:`plugin_matrix` renders, passes bash -n, shellcheck and the #SBATCH checks, and
    contains the plugin's template files; and then, with ``run_examples`` and no problem
    found so far, that each of its frameworks' example scripts keeps the training-script
    contract (:func:`check_example`).
    ``template`` defaults to $LUMI_SCAFFOLD_TEMPLATE, else the installed template
    (:func:`template_root`: the source checkout or the wheel's copy). ``matrix``: the
    answer sets to render instead of all of :func:`plugin_matrix` (a sample of it, or the
    combinations one test is about); each needs at least ``site`` and ``partition``, and
    what it leaves out takes the questionnaire's default.
    """
    cat = catalogue
    loaded = [p.name for p in cat.plugins]
    out = [f"problem: {p.message}" for p in cat.problems if p.plugin == plugin_name and p.kind != "note"]
    if plugin_name not in loaded:
        return out + [f"plugin {plugin_name!r} is not loaded; loaded plugins: {loaded}"]
    reg = _registered(cat, plugin_name)
    if not reg:
        out.append("registers nothing: no hook of the plugin called register()")
    for image_id in reg.get("container", []):
        image = cat.containers.get(image_id)
        if image is not None and (image.site not in cat.sites or image.framework not in cat.frameworks):
            out.append(f"container {image_id!r}: site {image.site!r} or framework {image.framework!r} is not registered")
    for fw in reg.get("framework", []):
        if fw in cat.frameworks and not any(fw in cat.frameworks_for(s) for s in cat.sites):
            out.append(f"framework {fw!r} is offered on no site: no site has a recommended image for it "
                       "or lists it in own_image_frameworks")
    for site in reg.get("site", []):
        if site in cat.sites and not cat.frameworks_for(site):
            out.append(f"site {site!r} offers no framework: no framework has a recommended image there; "
                       "register one, or set own_image_frameworks to offer frameworks with users' own images")
    for tf in _plugin_files(cat, plugin_name):
        owners = cat.sites if tf.owner == "site" else cat.frameworks
        if tf.owner_name not in owners:
            out.append(f"template file {tf.name!r} belongs to {tf.owner} {tf.owner_name!r}, which is not registered")
    out += _render_and_lint(cat, plugin_name, template, workers, matrix)
    if run_examples and not out:
        for fw in reg.get("framework", []):
            out += [f"framework {fw!r}: example: {line}" for line in check_example(cat, fw, template=template)]
    return out


def check_example(catalogue: Catalogue, framework: str, *, template: Path | str | None = None,
                  python: str | None = None) -> list[str]:
    """Problems of ``framework``'s example script with the training-script contract ([] if
    none; lumi_scaffold.script_contract says what it checks): renders one project of the
    framework and runs its train.py twice on the CPU, one rank, a few steps, with ``python``
    (default: this one). Where a package the framework pins or requires is not installed in
    this Python the script cannot run: a warning says so, and nothing is checked (with
    ``python`` given, it is run whatever this Python has)."""
    from .script_contract import run_example

    fw = catalogue.frameworks[framework]
    names = [re.split(r"[^A-Za-z0-9._-]", p, maxsplit=1)[0] for p in [*fw.pinned_packages, *fw.requirements]]
    missing = [name for name in dict.fromkeys(names) if not _installed(name)]
    if missing and python is None:
        warnings.warn(f"{framework}'s example not run (the training-script contract is not checked): "
                      f"{', '.join(missing)} not installed in this Python", stacklevel=2)
        return []
    sites = [s for s in catalogue.sites if framework in catalogue.frameworks_for(s)]
    matrix = [a for a in answer_matrix(catalogue, sites=sites, frameworks=[framework])
              if not a["prestage"] and a["profiler"] == "none"]
    if not matrix:
        return [f"no project of {framework!r} to render the example in"]
    template = template or settings.template() or template_source()
    with tempfile.TemporaryDirectory(prefix="lumi-example-") as scratch, use_catalogue(catalogue):
        project = render_project(template, Path(scratch) / "project", matrix[0])
        return run_example(project, project_values(project), python=python)


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _render_and_lint(cat: Catalogue, plugin_name: str, template: Path | str | None, workers: int,
                     matrix: Iterable[Mapping[str, Any]] | None = None) -> list[str]:
    """check_conformance's renders and lints: of ``matrix`` (answer sets) where given, else of
    plugin_matrix(cat, plugin_name)."""
    matrix = plugin_matrix(cat, plugin_name) if matrix is None else [dict(a) for a in matrix]
    if not matrix:
        return []
    template = template or settings.template()
    if template is None:
        if template_root() is None:
            return ["cannot render: this lumi_scaffold has no template (neither a source checkout nor a wheel "
                    "with lumi_scaffold/_template); pass template= or set LUMI_SCAFFOLD_TEMPLATE "
                    "(a checkout of lumi-scaffold, or gh:<your-org>/lumi-scaffold)"]
        template = template_source()
    if multiprocessing.get_start_method() != "fork":
        workers = 1  # spawned workers would not see the catalogue swapped in below
    files = _plugin_files(cat, plugin_name)
    root = Path(tempfile.mkdtemp(prefix="lumi-conformance-"))
    projects = {f"{i:05d}": (root / f"{i:05d}", a) for i, a in enumerate(matrix)}
    try:
        with use_catalogue(cat):
            failed = dict(render_many(template, root, matrix, workers=workers))
            out = [f"does not render ({_shown(a)}): {failed[str(p)]}" for p, a in projects.values() if str(p) in failed]
            rendered = [(p, a) for p, a in projects.values() if str(p) not in failed]
            lint = (lint_projects([p for p, _ in rendered], cat, workers=workers, answers=[a for _, a in rendered])
                    if rendered else [])
        for line in lint:  # name the answers rather than the temporary directory
            rel = line.replace(f"{root}/", "")
            answers = projects.get(rel[:5], (None, None))[1]
            out.append(f"{rel}  [{_shown(answers)}]" if answers else rel)
        for project, answers in rendered:
            owners = {"site": answers["site"], "framework": answers["framework"]}
            out += [f"{tf.directory}/{tf.name} missing ({_shown(answers)})"
                    for tf in files if owners[tf.owner] == tf.owner_name and not (project / tf.directory / tf.name).is_file()]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return _first(out)
