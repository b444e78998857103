"""Plugin loading and the catalogue built from what plugins register.

Built-in plugins (LUMI, PyTorch, JAX, profilers) are registered first, then every
entry point in the ``lumi_scaffold`` group, each in its own try/except: one broken
plugin is reported by name and the others still load. The manager and catalogue are
built once per process (Copier builds a Jinja environment several times per update).

Environment switches: ``LUMI_SCAFFOLD_PLUGINS`` and ``LUMI_SCAFFOLD_DISABLE_PLUGINS``
(:mod:`lumi_scaffold.settings`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pluggy
from pydantic import BaseModel, ValidationError

from . import hookspecs, settings
from .datafile import error_messages
from .errors import DataFileError, PluginProblem
from .models import ContainerImage, Framework, Profiler, Site, Source, TemplateFile
from .requirements import requirement_clash

__all__ = [
    "DEFAULT_PLUGINS",
    "Catalogue",
    "PluginInfo",
    "build_catalogue",
    "catalogue_in_use",
    "describe_error",
    "get_catalogue",
    "get_plugin_manager",
    "load_plugins",
    "new_plugin_manager",
    "reset",
]

ENTRY_POINT_GROUP = "lumi_scaffold"
ENV_LOAD = settings.PLUGINS
ENV_DISABLE = settings.DISABLE_PLUGINS

DEFAULT_PLUGINS = {
    "lumi": "lumi_scaffold.default_plugins.lumi",
    "pytorch": "lumi_scaffold.default_plugins.pytorch",
    "jax": "lumi_scaffold.default_plugins.jax",
    "profilers": "lumi_scaffold.default_plugins.profilers",
}

# hook name -> (kind shown to users, model, catalogue attribute, key attribute)
KINDS: dict[str, tuple[str, type[Any], str, str]] = {
    "register_sites": ("site", Site, "sites", "name"),
    "register_frameworks": ("framework", Framework, "frameworks", "name"),
    "register_profilers": ("profiler", Profiler, "profilers", "name"),
    "register_containers": ("container", ContainerImage, "containers", "id"),
    "register_template_files": ("template file", TemplateFile, "files", "name"),
    "register_sources": ("source", Source, "sources", "key"),
}
KIND_ATTRS = {kind: attr for kind, _model, attr, _key in KINDS.values()}


@dataclass
class PluginInfo:
    """What ``lumi-scaffold plugins`` shows about one plugin."""

    name: str
    module: str
    builtin: bool
    distribution: str | None = None
    version: str | None = None
    hooks: list[str] = field(default_factory=list)
    registered: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Catalogue:
    """Everything the plugins registered, validated and cross-checked."""

    sites: dict[str, Site] = field(default_factory=dict)
    frameworks: dict[str, Framework] = field(default_factory=dict)
    profilers: dict[str, Profiler] = field(default_factory=dict)
    containers: dict[str, ContainerImage] = field(default_factory=dict)
    files: list[TemplateFile] = field(default_factory=list)
    sources: dict[str, Source] = field(default_factory=dict)
    plugins: list[PluginInfo] = field(default_factory=list)
    problems: list[PluginProblem] = field(default_factory=list)
    provenance: dict[tuple[str, str], str] = field(default_factory=dict)
    # (framework, image id): an image of the framework it runs on whose requirements
    # conflict with its own (_cross_check, requirements.requirement_clash), not offered for it.
    refused_images: set[tuple[str, str]] = field(default_factory=set)
    # Whether a copy has printed ``problems`` (copier_ext): once per catalogue, not once per
    # Copier worker (an update runs three).
    problems_printed: bool = field(default=False, compare=False, repr=False)

    def images(self, site: str, framework: str, *, include_removed: bool = False) -> list[ContainerImage]:
        """The images offered for ``framework`` on ``site``: its own, then those of the
        framework it runs on (``Framework.runs_on``) that ship every package it pins."""
        own = [c for c in self.containers.values()
               if c.site == site and c.framework == framework and (include_removed or c.status != "removed")]
        fw = self.frameworks.get(framework)
        if fw is None or not fw.runs_on or fw.runs_on not in self.frameworks:
            return own
        taken = {c.id for c in own}
        return own + [c for c in self.images(site, fw.runs_on, include_removed=include_removed)
                      if c.id not in taken and c.framework == fw.runs_on and set(fw.pinned_packages) <= set(c.versions)
                      and (framework, c.id) not in self.refused_images]

    def recommended_image(self, site: str, framework: str) -> ContainerImage | None:
        """The framework's own recommended image on ``site``, else the one of the framework it runs on."""
        return next((c for c in self.images(site, framework) if c.status == "recommended"), None)

    def serves(self, image: ContainerImage, framework: str) -> bool:
        """Whether ``image`` is offered for ``framework`` (its own, or its base framework's)."""
        return any(c.id == image.id for c in self.images(image.site, framework, include_removed=True))

    def frameworks_for(self, site: str) -> list[str]:
        """Frameworks offered on ``site``: those with an image there (recommended, or only
        legacy ones), and those the site runs from a user's own image
        (``Site.own_image_frameworks``)."""
        s = self.sites.get(site)
        return [f for f in self.frameworks if self.images(site, f) or (s is not None and s.runs_own_image(f))]

    def container_options(self, site: str, framework: str, *, include_removed: bool = True) -> list[str]:
        """The ``container`` answers for a site and framework, in the order offered:
        ``recommended`` (only when the site has a recommended image), the image ids,
        ``custom`` (the user's .sif) and ``cotainr`` (only where the site supports it)."""
        s = self.sites.get(site)
        if s is None or framework not in self.frameworks_for(site):
            return []
        options = ["recommended"] if self.recommended_image(site, framework) else []
        options += [c.id for c in self.images(site, framework, include_removed=include_removed)]
        return options + ["custom"] + (["cotainr"] if s.cotainr else [])

    def plugin_versions(self) -> dict[str, str]:
        return {p.name: p.version or "builtin" for p in self.plugins}

    def plugin_of_file(self, file: TemplateFile) -> str:
        """The plugin that registered ``file`` ("?" for one not in the catalogue)."""
        return self.provenance.get(("template file", _file_key(file)), "?")


def _file_key(file: TemplateFile) -> str:
    return f"{file.owner}/{file.owner_name}/{file.directory}/{file.name}"


def describe_error(exc: BaseException) -> str:
    """``Type: message`` on one line, the whole message (pluggy's PluginValidationError
    gives the reason on its third line)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {'; '.join(lines)}" if lines else type(exc).__name__


def load_plugins(pm: pluggy.PluginManager, *, installed: bool = True, builtins: Iterable[str] | None = None,
                 extra: Iterable[tuple[str, object, PluginInfo]] = ()) -> tuple[list[PluginInfo], list[PluginProblem]]:
    """Register plugins on ``pm`` (one with lumi-scaffold's hookspecs: :func:`new_plugin_manager`)
    and say what loaded and what did not; one broken plugin never stops the others.

    ``installed``: the built-in plugins and every ``lumi_scaffold`` entry point, with the
    LUMI_SCAFFOLD_* switches (what :func:`get_catalogue` loads). Otherwise the built-in
    plugins named in ``builtins`` (None: all of them). Then ``extra``: (name, plugin,
    info) triples, a plugin already registered under its name skipped
    (:mod:`lumi_scaffold.testing` passes the plugins under test)."""
    infos: list[PluginInfo] = []
    problems: list[PluginProblem] = []
    disabled = settings.disabled_plugins() if installed else set()
    wanted = settings.plugins_to_load()

    def register(name: str, load: Callable[[], Any], info: PluginInfo) -> None:
        try:
            plugin = load()
            if pm.get_plugin(name) is plugin:
                return  # already loaded from its entry point
            if (needs := api_problem(plugin)) is not None:
                problems.append(PluginProblem(name, needs))
                return
            pm.register(plugin, name=name)
        except Exception as exc:  # one broken plugin must not stop the others
            problems.append(PluginProblem(name, f"cannot load: {describe_error(exc)}"))
            return
        infos.append(info)

    for name in DEFAULT_PLUGINS if installed or builtins is None else builtins:
        module = DEFAULT_PLUGINS[name]
        if name not in disabled:
            register(name, functools.partial(importlib.import_module, module), PluginInfo(name, module, builtin=True))

    seen: dict[str, str] = {}
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name) if installed else []:
        dist = ep.dist.name if ep.dist else None
        if ep.name in disabled or (wanted is not None and ep.name not in wanted):
            continue
        if ep.name in seen or ep.name in DEFAULT_PLUGINS:
            other = seen.get(ep.name, "lumi-scaffold (built-in)")
            problems.append(
                PluginProblem(ep.name, f"entry point name {ep.name!r} from {dist} is already used by {other}; rename one")
            )
            continue
        seen[ep.name] = dist or "?"
        info = PluginInfo(ep.name, ep.value, builtin=False, distribution=dist, version=ep.dist.version if ep.dist else None)
        register(ep.name, ep.load, info)

    for name, plugin, info in extra:
        register(name, functools.partial(lambda p: p, plugin), info)

    problems += _unknown_hooks(pm, infos)
    for info in infos:
        plugin = pm.get_plugin(info.name)
        info.hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or []) if plugin else []
        problems += _unmarked_hooks(pm, info.name, plugin, info.hooks)
    return infos, problems


API_ATTRIBUTE = "LUMI_SCAFFOLD_API"


def api_problem(plugin: object) -> str | None:
    """Why ``plugin`` cannot load with this SDK's PLUGIN_API, from the version it declares
    (``LUMI_SCAFFOLD_API = "1.1"`` in its module: it needs 1.1 or a later 1.x); None when
    it can, or declares nothing (plugins written for 0.2 do not)."""
    from . import PLUGIN_API, __version__

    declared = getattr(plugin, API_ATTRIBUTE, None)
    if declared is None:
        return None
    have = ".".join(map(str, PLUGIN_API))
    try:
        major, minor = (int(part) for part in str(declared).split("."))
    except ValueError:
        return (f"{API_ATTRIBUTE} = {declared!r} is not a plugin API version. Fix: write MAJOR.MINOR, "
                f"e.g. {API_ATTRIBUTE} = \"{have}\" (this lumi-scaffold's)")
    if major == PLUGIN_API[0] and minor <= PLUGIN_API[1]:
        return None
    newer = (major, minor) > PLUGIN_API
    fix = ("upgrade lumi-scaffold (pipx upgrade lumi-scaffold, or uv tool upgrade lumi-scaffold)" if newer
           else "install a version of the plugin made for this lumi-scaffold")
    return (f"needs plugin API {major}.{minor}, and lumi-scaffold {__version__} has {have}; not loaded. Fix: {fix}")


def _unmarked_hooks(pm: pluggy.PluginManager, name: str, plugin: object, hooks: list[str]) -> list[PluginProblem]:
    """Functions named like hooks that pluggy does not call because they lack ``@hookimpl``
    (or carry another project's marker): the plugin silently registers nothing with them."""
    if plugin is None:
        return []
    candidates = [a for a in dir(plugin) if a.startswith("register_") and callable(getattr(plugin, a, None))]
    # A known hook name is always meant as a hook; other register_* names only when the
    # plugin has no hook at all (they may be the plugin's own helpers).
    unmarked = [a for a in candidates if a not in hooks and (a in KINDS or not hooks)
                and pm.parse_hookimpl_opts(plugin, a) is None]
    if not unmarked:
        return []
    one = len(unmarked) == 1
    effect = "the plugin registers nothing" if not hooks else f"pluggy never calls {'it' if one else 'them'}"
    return [PluginProblem(name, f"{', '.join(unmarked)} {'is' if one else 'are'} not marked @hookimpl, so {effect}. "
                                "Fix: `from lumi_scaffold import hookimpl` and put @hookimpl above each hook function")]


def _unknown_hooks(pm: pluggy.PluginManager, infos: list[PluginInfo]) -> list[PluginProblem]:
    """Report (and unregister) plugins implementing hooks that have no spec: usually a typo."""
    known = sorted(name for name in KINDS)
    problems = []
    for name, caller in list(vars(pm.hook).items()):
        if not isinstance(caller, pluggy.HookCaller) or caller.spec is not None:
            continue
        for impl in caller.get_hookimpls():
            if impl.opts.get("optionalhook"):
                continue
            problems.append(
                PluginProblem(impl.plugin_name, f"implements unknown hook {name!r}; known hooks: {', '.join(known)}")
            )
            pm.unregister(name=impl.plugin_name)
            infos[:] = [i for i in infos if i.name != impl.plugin_name]
    return problems


def new_plugin_manager() -> pluggy.PluginManager:
    """An empty manager that knows lumi-scaffold's hooks."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def make_plugin_manager() -> tuple[pluggy.PluginManager, list[PluginInfo], list[PluginProblem]]:
    """A new manager with built-in and installed plugins loaded (uncached)."""
    pm = new_plugin_manager()
    infos, problems = load_plugins(pm)
    return pm, infos, problems


@functools.cache
def _cached() -> tuple[pluggy.PluginManager, Catalogue]:
    pm, infos, problems = make_plugin_manager()
    return pm, build_catalogue(pm, infos, problems)


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager (built on first use)."""
    return _cached()[0]


def get_catalogue() -> Catalogue:
    """The process-wide catalogue (built on first use)."""
    return _cached()[1]


def reset() -> None:
    """Forget the cached manager and catalogue (tests, or after installing a plugin)."""
    _cached.cache_clear()


@contextlib.contextmanager
def catalogue_in_use(cat: Catalogue, pm: pluggy.PluginManager | None = None) -> Iterator[Catalogue]:
    """Make ``cat`` (and ``pm``, its manager) the process-wide catalogue that
    :func:`get_catalogue` returns until the block ends; the previous one comes back after."""
    global _cached
    manager = pm if pm is not None else pluggy.PluginManager(hookspecs.PROJECT)
    saved = _cached
    _cached = functools.cache(lambda: (manager, cat))
    try:
        yield cat
    finally:
        _cached = saved


def build_catalogue(
    pm: pluggy.PluginManager, infos: Iterable[PluginInfo], problems: Iterable[PluginProblem] = ()
) -> Catalogue:
    """Call every register hook plugin by plugin, validate, dedupe and cross-check."""
    cat = Catalogue(plugins=list(infos), problems=list(problems))
    by_name = {i.name: i for i in cat.plugins}
    owners: dict[tuple[str, str], list[str]] = {}  # (kind, name) -> every plugin that registered it
    for hook_name, (kind, model, attr, key) in KINDS.items():
        for impl in getattr(pm.hook, hook_name).get_hookimpls():  # registration order
            collected = _call_register_hook(impl, kind, model, key, cat.problems)
            if collected is None:
                continue
            for obj in collected:
                if _add(cat, attr, kind, key, obj, impl.plugin_name, owners):
                    info = by_name.get(impl.plugin_name)
                    if info is not None:
                        info.registered.setdefault(kind, []).append(getattr(obj, key))
    _refuse_contested(cat, owners, by_name)
    _cross_check(cat)
    _check_cited_sources(cat)
    return cat


def _call_register_hook(impl, kind: str, model: type[BaseModel], key: str, problems: list) -> list | None:
    """Run one plugin's hook; return its objects, or None (and a problem) if anything failed."""
    collected: list[BaseModel] = []
    failed: list[PluginProblem] = []

    def register(obj: Any) -> None:
        instance = obj if isinstance(obj, model) else None
        if instance is not None:
            # Checked again as data: an instance made with model_construct, or changed after
            # it was made (model_copy), is checked here and not when a project renders (~1 ms
            # in all). 0.2 took instances as they were; 0.3 used one where only a check
            # across fields failed, with a warning that 0.4 would refuse it; 0.4 does.
            obj = obj.model_dump(by_alias=True, round_trip=True)
        if isinstance(obj, dict):
            label = obj.get(key, "?")
            try:
                obj = model.model_validate(obj)
            except ValidationError as exc:
                text = f"{kind} {label!r}: {_validation_text(model, obj, exc)}"
                if instance is not None and all(not e["loc"] for e in exc.errors()):
                    text += (f". Refused since lumi-scaffold 0.4 (0.3 warned and used it). Fix: make the "
                             f"{model.__name__} with {model.__name__}(...) or model_validate, not model_construct "
                             "or model_copy, and correct what the check names")
                failed.append(PluginProblem(impl.plugin_name, text))
                return
        if not isinstance(obj, model):
            failed.append(PluginProblem(impl.plugin_name, f"register() for {kind}s got {type(obj).__name__}, expected {model.__name__} or dict"))
            return
        collected.append(obj)

    args = {"register": register}
    failed_as = f"hook {impl.function.__name__} failed"
    try:
        impl.function(**{name: args[name] for name in impl.argnames})
    except DataFileError as exc:  # every problem of the file, each at its file:line:col
        problems += [PluginProblem(impl.plugin_name, f"{failed_as}: {line}") for line in exc.lines]
        return None
    except Exception as exc:
        problems.append(PluginProblem(impl.plugin_name, f"{failed_as}: {describe_error(exc)}"))
        return None
    problems += failed
    return collected


def _validation_text(model: type[BaseModel], data: Any, exc: ValidationError) -> str:
    parts = []
    for loc, kind, message, value in error_messages(model, data, exc):
        shown = "" if isinstance(value, (dict, list)) or kind == "extra_forbidden" else f" (got {value!r})"
        parts.append(f"{'.'.join(str(p) for p in loc) or '(object)'}: {message}{shown}")
    return "; ".join(parts)


# Kinds whose duplicates refuse every registration of the name: a site or a framework
# decides a whole project, and which plugin loaded first is an accident of entry-point
# names. For profilers and images the first one stays (a plugin cannot take away a
# built-in profiler such as `none`).
CONTESTED_REFUSED = ("site", "framework")


def _add(cat: Catalogue, attr: str, kind: str, key: str, obj: Any, plugin: str,
         owners: dict[tuple[str, str], list[str]]) -> bool:
    """Store ``obj``; False when its name is taken (reported here, or by _refuse_contested)."""
    name = getattr(obj, key)
    if attr == "files":
        cat.files.append(obj)
        cat.provenance[(kind, _file_key(obj))] = plugin
        return True
    store = getattr(cat, attr)
    owners.setdefault((kind, name), []).append(plugin)
    if kind == "source" and name in _bibliography():
        cat.problems.append(PluginProblem(plugin, f"source {name!r} is in lumi-scaffold's own bibliography; yours is "
                                                  "ignored. Fix: cite it as it is, or register it under another key",
                                          kind="warning"))
        return False
    if name in store:
        if kind not in CONTESTED_REFUSED:
            owner = cat.provenance[(kind, name)]
            cat.problems.append(PluginProblem(plugin, f"{kind} {name!r} is already registered by plugin {owner!r}; ignored"))
        return False
    store[name] = obj
    cat.provenance[(kind, name)] = plugin
    return True


def _refuse_contested(cat: Catalogue, owners: dict[tuple[str, str], list[str]], by_name: dict[str, PluginInfo]) -> None:
    """Remove every site and framework that more than one registration claimed, and say so
    to each plugin involved."""
    for (kind, name), plugins in owners.items():
        if kind not in CONTESTED_REFUSED or len(plugins) < 2:
            continue
        getattr(cat, KIND_ATTRS[kind]).pop(name, None)
        cat.provenance.pop((kind, name), None)
        distinct = list(dict.fromkeys(plugins))
        if len(distinct) == 1:
            who, fix = f"plugin {distinct[0]!r} registers it {len(plugins)} times", "register it once"
        else:
            third_party = [p for p in distinct if p not in DEFAULT_PLUGINS] or distinct
            who = f"plugins {' and '.join(map(repr, distinct))} {'both' if len(distinct) == 2 else 'all'} register it"
            fix = f"rename it in one plugin, or leave one out with {ENV_DISABLE}={third_party[-1]}"
        for plugin in distinct:
            info = by_name.get(plugin)
            kept = [n for n in info.registered.get(kind, []) if n != name] if info is not None else []
            if info is not None and kept:
                info.registered[kind] = kept
            elif info is not None:
                info.registered.pop(kind, None)
            cat.problems.append(PluginProblem(
                plugin, f"{kind} {name!r} refused: {who}, and which one a project got would depend on the order "
                        f"plugins load. Fix: {fix}"))


def _drop(cat: Catalogue, kind: str, attr: str, name: str, message: str) -> None:
    plugin = cat.provenance.get((kind, name), "?")
    cat.problems.append(PluginProblem(plugin, f"{kind} {name!r}: {message}"))
    getattr(cat, attr).pop(name, None)


def _jinja_syntax_error(text: str) -> tuple[int, str] | None:
    """(line, message) of the first Jinja syntax error in ``text``, or None. Copier renders
    plugin text with Jinja's default delimiters (copier.yml sets no _envops)."""
    from jinja2 import Environment, TemplateSyntaxError

    try:
        Environment().parse(text)
    except TemplateSyntaxError as exc:
        return exc.lineno, (exc.message or "syntax error").rstrip(".")
    return None


RAW_FIX = "write a literal {{, {% or {# as {% raw %}...{% endraw %}, or close the tag"


def _check_plugin_templates(cat: Catalogue) -> None:
    """Plugin texts that Jinja renders into projects (a framework's example and smoke test,
    template files) are parsed when the plugin loads: a syntax error is refused here, with
    its line, not at the first copy (``plugins --strict`` fails on it)."""
    for framework in list(cat.frameworks.values()):
        for what, script in (("example", "train.py"), ("smoke_test", "smoke_test.py")):
            if error := _jinja_syntax_error(getattr(framework, what)):
                _drop(cat, "framework", "frameworks", framework.name,
                      f"its {what} (the project's {script}), line {error[0]}: {error[1]}. Fix: {RAW_FIX}")
                break
    for file in list(cat.files):
        if error := _jinja_syntax_error(file.content):
            cat.problems.append(PluginProblem(cat.plugin_of_file(file), (
                f"template file {file.directory}/{file.name} (for {file.owner} {file.owner_name!r}), line {error[0]}: "
                f"{error[1]}; not written into projects. Fix: {RAW_FIX}")))
            cat.files.remove(file)


def _bibliography() -> dict[str, Any]:
    from .sources import bibliography

    return bibliography()


def _check_cited_sources(cat: Catalogue) -> None:
    """Each key a plugin cites (``source`` fields of its data, ``[KEY]`` in its files and
    example scripts) is in the bibliography or registered by a plugin; else one note."""
    from .sources import keys_in_data, keys_in_field, keys_in_text

    known = set(_bibliography()) | set(cat.sources)
    cited: dict[str, set[str]] = {}
    for kind, attr in (("site", "sites"), ("framework", "frameworks"), ("container", "containers"),
                       ("profiler", "profilers")):
        for name, obj in getattr(cat, attr).items():
            keys = keys_in_data(obj.model_dump())
            if kind == "framework":
                keys |= keys_in_text(obj.example) | keys_in_text(obj.smoke_test)
            cited.setdefault(cat.provenance.get((kind, name), "?"), set()).update(keys)
    for file in cat.files:
        cited.setdefault(cat.plugin_of_file(file), set()).update(keys_in_text(file.content) | keys_in_field(file.source))
    for plugin, keys in sorted(cited.items()):
        if unknown := sorted(keys - known):
            cat.problems.append(PluginProblem(plugin, (
                f"cites {', '.join(f'[{k}]' for k in unknown)}, which neither lumi-scaffold's bibliography nor any plugin "
                "registers, so projects cannot list it. Fix: register it with register_sources (key, title, url, read)"),
                kind="note"))  # a plugin that worked keeps working: shown, not counted by --strict or conformance


def _cross_check(cat: Catalogue) -> None:
    """Checks that span objects from several plugins; failing objects are dropped."""
    _check_plugin_templates(cat)
    for framework in list(cat.frameworks.values()):
        unknown = [p for p in framework.profilers if p not in cat.profilers]
        if unknown:
            _drop(cat, "framework", "frameworks", framework.name, f"profilers {unknown} are not registered; known: {sorted(cat.profilers)}")
    for offering in list(cat.sites.values()):
        unknown = [p for p in offering.profilers if p not in cat.profilers]
        if unknown:
            _drop(cat, "site", "sites", offering.name, f"profilers {unknown} are not registered; known: {sorted(cat.profilers)}")
    for framework in cat.frameworks.values():
        if framework.runs_on and framework.runs_on not in cat.frameworks:
            cat.problems.append(PluginProblem(cat.provenance.get(("framework", framework.name), "?"), (
                f"framework {framework.name!r} runs on {framework.runs_on!r} images, and no installed plugin registers "
                f"{framework.runs_on!r}: it is offered only with its own images and a user's own image"), kind="note"))
    for image in list(cat.containers.values()):
        site, fw = cat.sites.get(image.site), cat.frameworks.get(image.framework)
        if image.optional and (site is None or fw is None):
            absent = f"site {image.site!r}" if site is None else f"framework {image.framework!r}"
            cat.problems.append(PluginProblem(cat.provenance.get(("container", image.id), "?"), (
                f"container {image.id!r} left out: {absent} is not registered (optional: its plugin is not installed)"),
                kind="note"))
            cat.containers.pop(image.id)
        elif site is None:
            _drop(cat, "container", "containers", image.id, f"site {image.site!r} is not registered; known: {sorted(cat.sites)}")
        elif fw is None:
            _drop(cat, "container", "containers", image.id, f"framework {image.framework!r} is not registered; known: {sorted(cat.frameworks)}")
        elif site.generation(image.generation) is None:
            names = [g.name for g in site.generations]
            _drop(cat, "container", "containers", image.id, f"generation {image.generation!r} is not one of site {site.name!r}'s generations {names}")
        elif missing := [p for p in fw.pinned_packages if p not in image.versions]:
            _drop(cat, "container", "containers", image.id, f"versions lacks {missing}, which framework {fw.name!r} pins")
        elif image.profilers is not None and (odd := [p for p in image.profilers if p not in fw.profilers]):
            _drop(cat, "container", "containers", image.id,
                  f"profilers {odd} are not among framework {fw.name!r}'s profilers {fw.profilers}")
        elif clash := requirement_clash(fw.name, fw.requirements, image.id, image.requirements):
            _drop(cat, "container", "containers", image.id, f"{clash} (framework of plugin {cat.provenance.get(('framework', fw.name), '?')})")
    for fw in cat.frameworks.values():
        for image in [c for c in cat.containers.values() if fw.runs_on and c.framework == fw.runs_on]:
            if clash := requirement_clash(fw.name, fw.requirements, image.id, image.requirements):
                cat.refused_images.add((fw.name, image.id))
                cat.problems.append(PluginProblem(cat.provenance.get(("framework", fw.name), "?"), (
                    f"not offered with container {image.id!r} (plugin {cat.provenance.get(('container', image.id), '?')}): {clash}")))
    for site in cat.sites.values():
        own = site.own_image_frameworks
        if own != "all" and (unknown := [f for f in own if f not in cat.frameworks]):
            cat.problems.append(PluginProblem(
                cat.provenance[("site", site.name)],
                f"site {site.name!r}: own_image_frameworks names {unknown}, which are not registered frameworks; "
                f"known: {sorted(cat.frameworks)} (a typo, or a framework plugin that is not installed)"))
    for image in list(cat.containers.values()):
        target = cat.containers.get(image.replaced_by) if image.replaced_by else None
        if image.replaced_by and (target is None or target.site != image.site or not cat.serves(target, image.framework)):
            _drop(cat, "container", "containers", image.id, f"replaced_by={image.replaced_by!r} is not an image for the same site and framework")
    pairs = sorted({(c.site, c.framework) for c in cat.containers.values()})
    for site_name, fw_name in pairs:
        images = [c for c in cat.images(site_name, fw_name) if c.framework == fw_name]  # its own
        recommended = [c.id for c in images if c.status == "recommended"]
        pair = f"{site_name}/{fw_name}"
        if len(recommended) > 1:
            for image_id in recommended[1:]:
                _drop(cat, "container", "containers", image_id, f"a second recommended image for {pair} (first: {recommended[0]}); mark one legacy")
