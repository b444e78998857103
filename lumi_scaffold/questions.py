"""The questionnaire's logic: choices, defaults and checks of each question.

copier.yml stays thin: each question calls ``lumi_choices``, ``lumi_default`` or
``lumi_check`` (see :mod:`lumi_scaffold.copier_ext`), which land here with the
answers given so far. Messages name the question, the value and the fix; a job's shape
is checked by :func:`lumi_scaffold.jobs.refusals`, as ``lint`` checks a job file.

What the answers give the templates (``plugin_data``) is assembled in
:mod:`lumi_scaffold.assemble`; the warnings at the end of copy in
:func:`lumi_scaffold.known_issues.notices`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from ._types import REQUIREMENT, check_answer_path, slurm_time_normal, slurm_time_seconds
from .plugins import Catalogue
from .models import Partition, Site
from . import plugin_data as _plugin_data
from . import choices as _choices, defaults, jobs
from .answer_forms import YES, whole_number_problem
from .defaults import (CONTAINER_SPECIAL, TEST_SITES, TEST_SITES_ENV, Answers, answered_partition, chosen_image, offered_sites,
                       split_requirements)
from .labels import LABEL_WIDTH, fit
from .gpu_vendors import VENDORS
from .requirements import conflicts
from .tracking import TRACKERS

__all__ = ["CONTAINER_SPECIAL", "LABEL_WIDTH", "QUESTIONS", "TEST_SITES", "TEST_SITES_ENV", "Answers", "INT_QUESTIONS", "Placeholder", "Question", "When",
           "answered_partition", "check", "check_all", "choices", "chosen_image", "copier_yml", "default", "fit", "normalise", "normalised",
           "offered_choices", "offered_sites", "placeholder_answers", "placeholders", "split_requirements", "unasked"]

_PROJECT_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_ARCHIVE = (".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.xz")


def normalise(name: str, value: Any) -> Any:
    """An answer as the project uses it: text trimmed (a space typed after an account is not
    part of it), a whole number as an int (copier.yml asks it as text), a Slurm time in the
    form the job files write (``90``: ``01:30:00``). The templates, the answers file and
    every check see this (LumiExtension's context)."""
    if not isinstance(value, str):
        return value
    return _normalise_text(name, value)


@functools.lru_cache(maxsize=4096)
def _normalise_text(name: str, value: str) -> Any:
    """:func:`normalise` of a text answer: a pure function of the two, asked for every
    answer in every template context Copier makes (about 40 contexts per project)."""
    value = value.strip()
    if name in INT_QUESTIONS and not whole_number_problem(name, value):
        return int(value)
    if name == "walltime":
        try:
            return slurm_time_normal(value)
        except ValueError:
            return value  # its check says why
    return value


def normalised(answers: Mapping[str, Any]) -> dict[str, Any]:
    """Every answer normalised (:func:`normalise`)."""
    return {name: normalise(name, value) for name, value in answers.items()}


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
    if QUESTIONS["container_path"].asked(a) and a.get("container_path") == default("container_path", answers, cat):
        out.append(Placeholder("container_path", str(a.get("container_path")), "a made-up path", "/path/to/your.sif"))
    if QUESTIONS["dataset_archive"].asked(a) and a.get("dataset_archive") == default("dataset_archive", answers, cat):
        out.append(Placeholder("dataset_archive", str(a.get("dataset_archive")), "a made-up path", "/path/to/your.tar"))
    return out


def placeholders(answers: Mapping[str, Any], cat: Catalogue) -> list[str]:
    """:func:`placeholder_answers` as ``name=value (why)`` lines."""
    return [f"{p.name}={p.value} ({p.why})" for p in placeholder_answers(answers, cat)]


# ---------------------------------------------------------------- checks


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
        # A bare number where the example has a prefix (LUMI: 465001234 for project_465001234).
        prefix = re.match(r"^(.*?)[0-9]*$", site.account.example).group(1)  # type: ignore[union-attr]
        guess = f"{prefix}{value}" if prefix and str(value).isdigit() and site.account.matches(f"{prefix}{value}") else ""
        hint = f" Did you mean {guess}?" if guess else ""
        return f"{value!r} is not a {site.name} project account (like {site.account.example}).{hint} {site.account.help}"
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
        check_answer_path(str(value))
    except ValueError as exc:
        return f"{exc}. Give the absolute path of {what}, e.g. {example}."
    if not str(value).endswith(suffixes):
        return f"{value!r} does not end in {' or '.join(suffixes)}. Give the absolute path of {what}, e.g. {example}."
    return ""


def _container_path(value: Any, a: Answers) -> str:
    return _file_path(value, a, "container_path", (".sif",), "your container image (.sif)")


def _max_nodes(site: Site) -> int:
    return max(p.max_nodes for p in site.partitions)


def _nodes(value: Any, a: Answers) -> str:
    if whole := whole_number_problem("nodes", value):
        return whole
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


def _gpus(value: Any, a: Answers) -> str:
    if whole := whole_number_problem("gpus_per_node", value):
        return whole
    site = a.site
    return _shape_refusal(a, answered_partition(a, site), "gpus_per_node") if site else ""


def _partition(value: Any, a: Answers) -> str:
    site = a.site
    if not site:
        return ""
    part = site.partition(str(value))
    if part is None:
        return f"unknown partition {value!r} on {site.name}. Use one of {[p.name for p in site.partitions]}."
    return _shape_refusal(a, part)


def _walltime(value: Any, a: Answers) -> str:
    if not isinstance(value, str):
        return f"{value!r} is not a Slurm time: give it as text, e.g. 01:00:00."
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


def _profiler(value: Any, a: Answers) -> str:
    fw = a.cat.frameworks.get(str(a.get("framework")))
    offered = _choices.offered_profilers(fw, a.site) if fw else []
    if fw and value not in offered:
        return f"{fw.name} does not support profiler {value!r}{f' at {a.site.name}' if a.site else ''}. Use one of {offered}."
    allowed, image = _choices.profilers(a), chosen_image(a)
    p, theirs, site = a.cat.profilers.get(str(value)), _choices.gpu_vendor(a), a.site
    if value not in allowed and p is not None and p.gpu_vendor and site is not None and theirs != p.gpu_vendor:
        return (f"{value!r} profiles {VENDORS[p.gpu_vendor].title} GPUs; {site.display_name or site.name}'s are "
                f"{VENDORS[str(theirs)].title}'s. Use one of {allowed}.")
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
    return _file_path(value, a, "dataset_archive", _ARCHIVE, "the dataset packed with tar")


def _profile_rank(value: Any, a: Answers) -> str:
    if whole := whole_number_problem("profile_rank", value):
        return whole
    ranks = a.int("nodes", 1) * a.int("gpus_per_node", 1)
    r = a.int("profile_rank", -1)
    if not 0 <= r < ranks:
        return f"rank {value!r} does not exist: the job has {ranks} ranks (0 to {ranks - 1})."
    return ""


def _extra_requirements(value: Any, a: Answers) -> str:
    for item in split_requirements(value):
        if not REQUIREMENT.match(item):
            return f"{item!r} is not a pip requirement like name or name==1.2 (separate several with spaces or commas)."
    fw, image = a.cat.frameworks.get(str(a.get("framework"))), chosen_image(a)
    theirs = [(r, f"framework {fw.name}") for r in fw.requirements] if fw else []
    theirs += [(r, f"image {image.id}") for r in image.requirements] if image else []
    for mine, needed, why in conflicts(split_requirements(value), [r for r, _ in theirs]):
        source = next(s for r, s in theirs if r == needed)
        return (f"{mine} conflicts with {needed}, which the {source} needs ({why}). Leave it out, or give a "
                f"requirement {needed} admits.")
    return ""


def _tracking(value: Any, a: Answers) -> str:
    if value not in TRACKERS:
        return f"{value!r} is not a tracker: use one of {', '.join(TRACKERS)}."
    return ""


# ---------------------------------------------------------------- the questions


class When(NamedTuple):
    """A question asked only where the answer ``answer`` is ``value`` (``equal``), or is not:
    copier.yml's ``when:`` is written from it (:func:`copier_yml`), and Python asks the same
    (a check is skipped, and an answer given with ``-d`` refused, where it is not asked)."""

    answer: str
    value: Any
    equal: bool = True
    needs: str = ""  # what a refusal says the question needs, where ``answer=value`` would not say it

    def __call__(self, a: Answers) -> bool:
        given = a.get(self.answer)
        if given is None:
            return False
        if self.value is True:  # a yes/no answer, as Copier would cast it (``-d prestage=yes``)
            given = given.strip().lower() in YES if isinstance(given, str) else bool(given)
        return (given == self.value) is self.equal

    @property
    def expression(self) -> str:
        """The test as a Jinja expression (``prestage``, ``site == 'lumi'``)."""
        if self.value is True and self.equal:
            return self.answer
        return f"{self.answer} {'==' if self.equal else '!='} {self.value!r}"

    @property
    def jinja(self) -> str:
        return f"{{{{ {self.expression} }}}}"

    @property
    def need(self) -> str:
        return self.needs or f"{self.answer}={'true' if self.value is True else self.value}"


@dataclass(frozen=True)
class Question:
    """One question, whole: copier.yml's entry is written from it (:func:`copier_yml`), after
    Copier's own ``Question`` (copier/_user_data.py). ``kind`` is the answer's type (``int``:
    asked as text so that its check, not Copier, answers ``yes``; the templates get an int);
    ``choices`` (copier.yml's ``lumi_choices``), ``default`` (``lumi_default``) and ``check``
    (``lumi_check``) compute from the answers so far; ``literal`` is copier.yml's default
    where none is computed (a value, or Jinja text); ``when`` is asked only then; a
    ``computed`` question is never asked (its check still refuses a bad value given with
    ``--data`` or read from an answers file)."""

    name: str
    help: str = ""
    choices: Callable[[Answers], dict[str, str]] | None = None
    default: Callable[[Answers], Any] | None = None
    check: Callable[[Any, Answers], str] | None = None
    when: When | None = None
    kind: str = "str"
    literal: Any = None
    computed: bool = False
    comment: str = ""  # written above the entry in copier.yml

    def asked(self, a: Answers) -> bool:
        return self.when is None or self.when(a)


def _registry(*entries: Question) -> Mapping[str, Question]:
    return MappingProxyType({q.name: q for q in entries})


# In the order Copier asks them. Adding a question is one entry here, then
# `python3 scripts/copier-yml` writes copier.yml (tests/test_question_registry.py fails until it is run).
QUESTIONS = _registry(
    Question("project_name", "Project name (lowercase letters, digits, dashes); names the Python package", check=_project_name,
             literal="{{ _folder_name | lower | replace('_', '-') | regex_replace('[^a-z0-9-]', '') "
                     "| regex_replace('^[^a-z]+', '') or 'my-project' }}"),
    Question("site", "Which site runs the jobs?", _choices.site_choices, defaults.default_site, _site),
    Question("account", "Slurm account, i.e. your project (on LUMI `lumi-workspaces` lists yours)",
             default=defaults.default_account, check=_account),
    Question("framework", "Machine-learning framework", _choices.framework_choices, defaults.default_framework, _framework),
    Question("container", "Container image. recommended: the catalogue's choice (updates move you to\n"
                          "new ones); an image id: pinned; custom: your own .sif; cotainr: build one.\n"
                          "A key like LAIF-I28 in [...] is a known issue: the end of copy says\n"
                          "whether it affects your job's shape, and what to do instead.\n"
                          "Terms (LAIF, LUST, cotainr, observed): lumi-scaffold reference glossary",
             _choices.container_choices, defaults.default_container, _container),
    Question("container_path", "Absolute path of your .sif image", default=defaults.default_container_path,
             check=_container_path, when=When("container", "custom")),
    Question("nodes", "Nodes per training job (more than one node means whole nodes)", check=_nodes, kind="int", literal=1),
    Question("gpus_per_node", "GPUs per node; one task per GPU. A GPU is one GCD, half an MI250X: LUMI\n"
                              "bills GPU-hours per whole MI250X (lumi-scaffold reference glossary)",
             default=defaults.default_gpus_per_node, check=_gpus, kind="int"),
    Question("partition", "Slurm partition (derived from the job shape; change it only with a reason)",
             _choices.partition_choices, defaults.default_partition, _partition),
    Question("walltime", "Wall time of the training job (90 = minutes, HH:MM:SS or D-HH:MM:SS)",
             default=defaults.default_walltime, check=_walltime),
    Question("launcher", "How ranks are started", _choices.launcher_choices,
             check=_supported_by_framework("launchers", "launcher"), literal="srun"),
    Question("data_location", "Where the training data lives (cost first; lumi-scaffold reference\n"
                              "questions prints each area's whole note)",
             _choices.data_location_choices, defaults.default_data_location, _data_location),
    Question("prestage", "Extract a dataset archive into node-local memory (/tmp) before training?", kind="bool",
             literal=False),
    Question("dataset_archive", "Absolute path of the .tar archive to pre-stage", default=defaults.default_dataset_archive,
             check=_dataset_archive, when=When("prestage", True)),
    Question("profiler", "Profiler for jobs/profile.sbatch (it wraps one rank only)", _choices.profiler_choices,
             check=_profiler, literal="none"),
    Question("profile_rank", "The one rank to profile, counted from 0 over all nodes", check=_profile_rank, kind="int",
             literal=0, when=When("profiler", "none", equal=False, needs="a profiler (e.g. profiler=rocprofv3)")),
    Question("tracking", "Experiment tracker for the training jobs (every job also reports)", _choices.tracking_choices,
             check=_tracking, literal="none"),
    Question("extra_requirements", 'Extra pip requirements for the venv, e.g. "transformers datasets"',
             check=_extra_requirements, literal=""),
    Question("plugin_data", check=lambda value, a: _plugin_data.check(value), kind="json",
             literal="{{ lumi_resolve() | tojson }}", computed=True, comment=(
                 "Computed, never asked. Everything the project takes from plugin data, recorded in the\n"
                 "answers file so that `copier update` replays the old project exactly and brings in\n"
                 "only what changed in the catalogue (new container paths, binds, pins).\n"
                 "It ends up in shell scripts, so a value given with --data or read back from an answers\n"
                 "file is validated like plugin data (lumi_scaffold.plugin_data), or refused.")),
)

INT_QUESTIONS = tuple(name for name, q in QUESTIONS.items() if q.kind == "int")

# copier.yml's questions follow this line; scripts/copier-yml writes them from QUESTIONS.
COPIER_YML_MARK = "# ---- The questions: written from lumi_scaffold.questions.QUESTIONS by scripts/copier-yml; edit them there.\n"
_AS_TEXT = "  # a whole number, asked as text: its check says so where `yes` is typed (Copier's int: a bare 'Invalid input')"


def _yaml_scalar(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


def _copier_entry(q: Question) -> list[str]:
    out = [f"# {line}".rstrip() for line in q.comment.splitlines()]
    out += [f"{q.name}:", f"  type: {'str' + _AS_TEXT if q.kind == 'int' else q.kind}"]
    if "\n" in q.help:
        out += ["  help: |-", *(f"    {line}" for line in q.help.splitlines())]
    elif q.help:
        out.append(f"  help: {_yaml_scalar(q.help)}")
    if q.choices:
        out.append(f"  choices: \"{{{{ lumi_choices('{q.name}') | tojson }}}}\"")
    if q.computed or q.when:
        out.append(f"  when: {'false' if q.computed else _yaml_scalar(q.when.jinja)}")  # type: ignore[union-attr]
    default = f"{{{{ lumi_default('{q.name}') }}}}" if q.default else q.literal
    if default is not None:
        out.append(f"  default: {_yaml_scalar(default)}")
    if q.check:
        out.append(f"  validator: \"{{{{ lumi_check('{q.name}') }}}}\"")
    return out


def copier_yml(text: str) -> str:
    """copier.yml's ``text`` with its questions written from :data:`QUESTIONS` (what follows
    :data:`COPIER_YML_MARK`; the settings above it are copier.yml's own)."""
    head = text.partition(COPIER_YML_MARK)[0]
    return head + COPIER_YML_MARK + "\n\n".join("\n".join(_copier_entry(q)) for q in QUESTIONS.values()) + "\n"


def choices(name: str, answers: Mapping[str, Any], cat: Catalogue, whole: bool = False) -> dict[str, Any]:
    """Label -> value choices for a question (labels explain, values are stored): each label
    cut to fit 80 columns with Copier's pointer in front, or ``whole``."""
    q = QUESTIONS.get(name)
    if q is None or q.choices is None:
        raise KeyError(f"no choices for question {name!r}")
    labelled = q.choices(Answers(normalised(answers), cat))
    return labelled if whole else {fit(label): value for label, value in labelled.items()}


def default(name: str, answers: Mapping[str, Any], cat: Catalogue) -> Any:
    """The computed default of a question."""
    q = QUESTIONS.get(name)
    if q is None or q.default is None:
        raise KeyError(f"no computed default for question {name!r}")
    return q.default(Answers(answers, cat))


def check(name: str, value: Any, answers: Mapping[str, Any], cat: Catalogue) -> str:
    """An error message for an invalid answer, or '' when the value is fine (or the
    question has no check, or is not asked with these answers)."""
    value = normalise(name, value)
    a = Answers({**normalised(answers), name: value}, cat)
    q = QUESTIONS.get(name)
    return q.check(value, a) if q and q.check and q.asked(a) else ""


def offered_choices(name: str, answers: Mapping[str, Any], cat: Catalogue) -> dict[str, Any]:
    """:func:`choices` as the interactive questionnaire offers them: a choice the question's
    check refuses with the answers so far (small-g after 10 nodes) is disabled, its reason
    the check's message, the same line ``-d`` gets (Copier's per-choice validator, shown
    beside the choice). Where every choice would be refused, none is: the check says why."""
    offered = choices(name, answers, cat)
    reasons = {label: check(name, value, answers, cat) for label, value in offered.items()}
    if all(reasons.values()):
        return offered
    # Copier renders a choice's validator once more: the reason stays as it is, raw.
    return {label: {"value": value, "validator": "{% raw %}" + reasons[label] + "{% endraw %}"} if reasons[label] else value
            for label, value in offered.items()}


def unasked(given: Mapping[str, Any], cat: Catalogue, answers: Mapping[str, Any] | None = None) -> str:
    """The first answer ``given`` (with -d, --data-file or Copier's data) for a question that
    these answers (``answers``, the project's so far, with ``given``) do not ask, as a
    one-line refusal; '' when there is none."""
    a = Answers(normalised({**(answers or {}), **given}), cat)
    for name in given:
        when = QUESTIONS[name].when if name in QUESTIONS else None
        if when is not None and not when(a):
            return (f"{name}={given[name]!r} applies only with {when.need}, which these answers do "
                    f"not give, so nothing would use it. Fix: add that answer, or leave {name} out")
    return ""


def check_all(answers: Mapping[str, Any], cat: Catalogue) -> list[str]:
    """Every problem with a complete set of answers, as 'question=value: message' lines."""
    problems = []
    for name in QUESTIONS:
        if name in answers:
            message = check(name, answers[name], answers, cat)
            if message:
                problems.append(f"{name}={answers[name]!r}: {message}")
    return problems


_MOVED = {"resolve": "assemble", "build_plugin_data": "assemble", "notices": "known_issues"}


def __getattr__(name: str) -> Any:
    """``questions.resolve``, ``build_plugin_data`` and ``notices`` (before 0.4) live on in
    :mod:`lumi_scaffold.assemble` and :mod:`lumi_scaffold.known_issues`: deprecated, removed
    in 0.6."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    import warnings

    home = f"lumi_scaffold.{_MOVED[name]}"
    warnings.warn(f"lumi_scaffold.questions.{name} is deprecated and is removed in lumi-scaffold 0.6: "
                  f"use {home}.{name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(home), name)
