"""What runs in the jobs: container images, frameworks, profilers; and the sources and
template files that plugins give."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from .._types import PACKAGE, VERSION, AbsPath, EnvName, GpuVendorName, Ident, Package, Requirement, Slug, check_plain_word, check_one_line
from .base import EnvSetting, KnownIssue, Model, ProfilerEnvSetting, ProfilerWord
from .site import ReadmeSection

__all__ = ["check_pull_address", "ContainerImage", "Framework", "Profiler", "Source", "TemplateFile", "TrainArg"]


class ContainerImage(Model):
    """One container image a site offers for a framework."""

    id: Ident = Field(description="Stable id used in answers (container=<id>) to pin this image.")
    site: Slug
    framework: Slug
    title: str
    path: AbsPath = Field(description="Absolute path of the .sif on the site, or one that starts with an environment "
                         "variable ($MYSOFTWARE/containers/x.sif or ${MYSOFTWARE}/...; checked when a job starts).")
    generation: Slug = Field(description="Name of one of the site's container generations.")
    status: Literal["recommended", "available", "observed", "legacy", "removed"] = Field(
        description="'recommended' (the default, one per site and framework), 'available' (offered, newer or "
        "different, not the default), 'observed' (seen in public job scripts, not announced by the site: offered "
        "with that status in its label, never a default nor a way out of a known issue, and checked by `doctor` "
        "on a login node), 'legacy' (replaced), 'removed' (gone from the site).")
    replaced_by: Ident | None = Field(default=None, description="Id of the image to move to, if legacy or removed.")
    versions: dict[str, str] = Field(
        default_factory=dict,
        description="Package versions the image ships, exactly as its Python reports them (local and dev suffixes "
        "included), for the README; the venv is held to the image's own versions, read at setup.",
    )
    versions_unconfirmed: list[Package] = Field(
        default_factory=list,
        description="Names in versions whose exact version string is UNCONFIRMED (a wildcard like 2.10.* always is).",
    )
    requirements: list[Requirement] = Field(
        default_factory=list,
        description="Packages the venv installs with this image, at versions that accept what it ships "
        "(JAX 0.4.35: flax==0.10.4, the newest flax asking for no newer jax).",
    )
    profilers: list[Slug] | None = Field(
        default=None,
        description="Profilers that work in this image (rocprof v1 only where it ships; rocprofv3 from ROCm 6.2); "
        "default: all of the framework's.",
    )
    numa_binding: bool = Field(
        default=False,
        description="The image's PyTorch has `torch.distributed.run --numa-binding` (PyTorch 2.9 and later): torchrun "
        "jobs on whole nodes bind each worker to cores near its GPU with --numa-binding=exclusive. [AIG-05]",
    )
    pull_from: str | None = Field(
        default=None,
        description="Where users pull the image from (docker://..., oras://...) into `path` themselves; the README "
        "names the `singularity pull` (or apptainer) step. Leave out for images the site provides at `path`.",
    )
    known_issues: list[KnownIssue] = Field(
        default_factory=list, description="Known problems of the image in some job shapes: the questionnaire labels "
        "it, and copy, update, doctor and explain name the issue where the project's shape is affected.")
    optional: bool = Field(
        default=False, description="The image is for another plugin's site or framework, which may not be installed: "
        "without it the image is left out with a note, and the plugin is not broken.")
    note: str = ""
    source: str = ""

    _text = field_validator("title", "note", "source")(check_one_line)

    @field_validator("known_issues")
    @classmethod
    def _image_issues(cls, issues: list[KnownIssue]) -> list[KnownIssue]:
        if any(i.generations for i in issues):
            raise ValueError("an image's known issues take no generations (the image has one); give generations only "
                             "on an env setting's known issues")
        return issues

    @field_validator("pull_from")
    @classmethod
    def _pull_uri(cls, value: str | None) -> str | None:
        return check_pull_address(value) if value is not None else value

    @field_validator("id")
    @classmethod
    def _not_a_special_answer(cls, value: str) -> str:
        if value in ("recommended", "custom", "cotainr"):
            raise ValueError(f"{value!r} is one of the container answers (recommended, custom, cotainr); give the image "
                             "its own id, e.g. <site>-<framework>-<version>")
        return value

    @field_validator("versions")
    @classmethod
    def _versions_are_pins(cls, versions: dict[str, str]) -> dict[str, str]:
        for package, version in versions.items():
            if not PACKAGE.match(package) or not VERSION.match(str(version)):
                raise ValueError(f"{package}={version!r} is not a package name and version")
        return versions

    @model_validator(mode="after")
    def _replacement(self) -> ContainerImage:
        if self.replaced_by == self.id:
            raise ValueError("replaced_by names the image itself")
        unknown = sorted(set(self.versions_unconfirmed) - set(self.versions))
        if unknown:
            raise ValueError(f"versions_unconfirmed names {unknown}, which are not in versions")
        torch = _release(self.versions.get("torch", ""))
        if self.numa_binding and torch and torch < (2, 9):
            raise ValueError(f"numa_binding needs PyTorch 2.9 or later, but versions has torch {self.versions['torch']}: "
                             "torch.distributed.run of this image has no --numa-binding")
        return self


def check_pull_address(value: str) -> str:
    """An address `singularity pull` takes, safe to write into a shell command line."""
    if not re.fullmatch(r"(docker|oras|library|shub)://[A-Za-z0-9._/:@+-]+", value):
        raise ValueError(f"{value!r} must be a docker://, oras://, library:// or shub:// address of letters, digits "
                         "and . _ / : @ + - (it is written into the README's setup command)")
    return value


def _release(version: str) -> tuple[int, ...]:
    """The leading numeric release of a version or pin ('2.10.*' -> (2, 10)); () if none."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def _train_arg(value: str) -> str:
    check_plain_word(value.replace("{project_dir}", "project"))
    return value


TrainArg = Annotated[str, AfterValidator(_train_arg)]


class Framework(Model):
    """A machine-learning framework: how it launches, initialises and what it pins."""

    name: Slug
    title: str
    source: str = ""
    launchers: list[Literal["srun", "torchrun"]] = Field(
        min_length=1, description="'srun': one task per GPU; 'torchrun': one task per node spawning workers."
    )
    distributed_init: str = Field(description="One line: how the example joins the process group.")
    needs_master_addr: bool = Field(
        default=True, description="The framework reads MASTER_ADDR/MASTER_PORT (PyTorch env://)."
    )
    pinned_packages: list[str] = Field(
        min_length=1, description="Packages whose container versions go into constraints.txt."
    )
    requirements: list[Requirement] = Field(default_factory=list, description="Packages the example needs in the venv.")
    runs_on: Slug | None = Field(
        default=None, description="Another framework whose images serve this one too (Lightning or DeepSpeed on "
        "PyTorch's): every site's images for it are offered for this framework, with their pins, and this framework's "
        "requirements go into the venv on top; `lumi-scaffold update` moves a project when the site moves them.")
    train_args: list[TrainArg] = Field(
        default_factory=list,
        description="Arguments the jobs pass to the training script, before the user's own; {project_dir} stands for "
        "the project directory (DeepSpeed: --deepspeed --deepspeed_config {project_dir}/config/ds_config.json).",
    )
    cache_vars: list[EnvName] = Field(default_factory=list, description="Cache variables moved off $HOME.")
    triton_cache: bool = Field(
        default=False,
        description="The framework compiles GPU kernels with torch.compile (TorchInductor, Triton): TRITON_CACHE_DIR and "
        "TORCHINDUCTOR_CACHE_DIR go to node-local tmp, and jobs carry those caches between jobs like MIOpen's.",
    )
    env: list[EnvSetting] = Field(default_factory=list, description="Framework settings for run.sh.")
    profilers: list[Slug] = Field(default_factory=lambda: ["none"], description="Profilers this framework supports.")
    readme: list[ReadmeSection] = Field(
        default_factory=list, description="Sections the generated README gets for projects using this framework."
    )
    smoke_test: str = Field(description="Python source printing the number of GPUs the framework sees.")
    example: str = Field(description="Python source (a Jinja template) of the example training script.")

    _text = field_validator("title", "source", "distributed_init")(check_one_line)

    @field_validator("pinned_packages")
    @classmethod
    def _names(cls, values: list[str]) -> list[str]:
        for value in values:
            if not PACKAGE.match(value):
                raise ValueError(f"{value!r} is not a package name (pinned_packages names packages, like torch; "
                                 "their versions come from each image's versions)")
        return values



class Profiler(Model):
    """A profiler that wraps exactly one rank of a job."""

    name: Slug
    title: str
    kind: Literal["none", "command", "framework"] = Field(
        description="'command': prefix the rank's command; 'framework': the script profiles itself."
    )
    command: list[ProfilerWord] = Field(
        default_factory=list, description="Command prefix; {output} stands for the per-rank output directory."
    )
    env: list[ProfilerEnvSetting] = Field(default_factory=list, description="Set only for the profiled rank.")
    view: str = Field(default="", description="One line: how to look at the result.")
    gpu_vendor: GpuVendorName | None = Field(
        default=None, description="The vendor whose GPUs it profiles (rocprof: amd, nsys: nvidia): offered only at "
        "sites whose nodes have them. Leave out for a profiler of any GPUs (the framework's own).")
    source: str = ""

    _text = field_validator("title", "view", "source")(check_one_line)

    @model_validator(mode="after")
    def _kind_matches(self) -> Profiler:
        if (self.kind == "command") != bool(self.command):
            raise ValueError("a 'command' profiler needs a command; other kinds must not have one")
        return self


_SOURCE_KEY = re.compile(r"^[A-Z][A-Z0-9]+(?:-[A-Za-z0-9]+)*$")
_URL = re.compile(r"^https?://[^\s<>()\[\]]+$")


class Source(Model):
    """A source a plugin's data or files cite (``[KEY]`` in a comment, ``source: KEY`` in
    data), listed in the README of every project that cites it, like the built-in ones."""

    key: str = Field(description="The key cited, e.g. CINES or ADASTRA-UG: capitals and digits, then -parts.")
    title: str = Field(description="One line: what the source is.")
    url: str = Field(description="Where to read it (http:// or https://).")
    read: str = Field(default="", description="When it was read (e.g. 2026-11-20), for the README.")

    _text = field_validator("title", "read")(check_one_line)

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not _SOURCE_KEY.match(value):
            raise ValueError(f"{value!r} is not a source key: capitals and digits, then -parts (CINES, ADASTRA-UG)")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not _URL.match(value):
            raise ValueError(f"{value!r} is not an http(s) address without spaces or brackets (it is written into a "
                             "Markdown link)")
        return value


class TemplateFile(Model):
    """A file a plugin adds to projects that use its site or framework."""

    owner: Literal["site", "framework"] = Field(description="Which answer decides whether the file is written.")
    owner_name: Slug = Field(description="Name of the site or framework the file belongs to.")
    directory: Literal["scripts", "config"] = Field(
        default="config", description="Project directory the file goes into (config/ or scripts/)."
    )
    name: str = Field(description="File name (no directories), e.g. ds_config.json.")
    content: str = Field(description="Jinja template text, rendered with the project's answers.")
    source: str = ""

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value):
            raise ValueError(f"{value!r} must be a plain file name: letters, digits, . _ -")
        return value
