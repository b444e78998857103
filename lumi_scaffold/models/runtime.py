"""How a site runs containers: environment modules, container generations, cotainr builds,
the network check and its reference figures."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_serializer, model_validator

from .._types import AbsPath, EnvName, NameWord, Slug, check_requirement, check_one_line
from .base import ExtraOption, Model, check_unique

__all__ = ["AllreduceReference", "BindingsModule", "ContainerGeneration", "CotainrSupport", "EnvModule", "LogPattern", "RcclCheck"]


class EnvModule(Model):
    """An environment module a job loads on the host before it starts the container."""

    use: AbsPath | None = Field(default=None, description="Directory for `module use`, if needed.")
    use_module: NameWord | None = Field(
        default=None, description="A module that makes this one loadable, loaded instead of `module use` where the "
        "site has it (LUMI: Local-LAIF for /appl/local/laifs/modules); jobs fall back on `use` where it is missing.")
    name: NameWord = Field(description="Module to load, e.g. rccl-net-plugin or rocm/6.2.4.")
    sets_binds: bool = Field(
        default=False, description="The module sets the runtime's bind paths (SINGULARITY_BIND and the like)."
    )
    why: str = Field(default="", description="One line saying why it is loaded; written as a comment.")
    source: str = ""

    _text = field_validator("why", "source")(check_one_line)


class BindingsModule(Model):
    """An environment module that sets SINGULARITY_BIND (and friends) for an image generation.

    Kept for plugins written before :attr:`ContainerGeneration.modules`; it is loaded like
    a ``modules`` entry with ``sets_binds: true``.
    """

    use: AbsPath | None = Field(default=None, description="Directory for `module use`, if needed.")
    name: NameWord = Field(description="Module to load, e.g. lumi-aif-singularity-bindings.")
    source: str = ""

    _text = field_validator("source")(check_one_line)


class ContainerGeneration(Model):
    """How a family of images is started and how its Python environment is activated."""

    name: Slug
    title: str
    run_verb: Literal["exec", "run"] = Field(description="`singularity exec` or `singularity run`.")
    activate_var: EnvName | None = Field(
        default=None,
        description="Variable inside the container holding the activation command (legacy: WITH_CONDA).",
    )
    modules: list[EnvModule] = Field(
        default_factory=list, description="Modules every job loads on the host, in this order (e.g. rocm, then rccl-net-plugin)."
    )
    bindings_module: BindingsModule | None = Field(
        default=None, description="One module that sets the binds (older form of a `modules` entry with sets_binds)."
    )
    binds: list[AbsPath] = Field(default_factory=list, description="Binds every job needs.")
    multi_node_binds: list[AbsPath] = Field(
        default_factory=list, description="Extra binds for jobs on more than one node (RCCL over Slingshot)."
    )
    legacy: bool = Field(
        default=False, description="Images of this generation are no longer developed (LUMI's former LUST images "
        "[TM-Cont]); where a framework has only such images on the site, doctor says so.")
    mpi_srun_options: list[ExtraOption] = Field(
        default_factory=list,
        description="srun options that start the image's MPI programs (rccl-tests' all_reduce_perf in the network "
        "preflight), e.g. --mpi=pmi2 for the LAIF images' MPICH [LAIF-T].",
    )
    note: str = ""
    source: str = ""

    _text = field_validator("title", "note", "source")(check_one_line)

    @model_validator(mode="after")
    def _one_way_to_give_modules(self) -> ContainerGeneration:
        if self.modules and self.bindings_module:
            raise ValueError(
                f"give modules or bindings_module, not both; move bindings_module ({self.bindings_module.name}) "
                "into modules as an entry with sets_binds: true, where you want it in the load order"
            )
        check_unique("modules", [m.name for m in self.modules])
        return self

    @property
    def load_modules(self) -> list[EnvModule]:
        """The modules a job loads, in order (``bindings_module`` as a ``modules`` entry)."""
        if self.bindings_module:
            bm = self.bindings_module
            return [EnvModule(use=bm.use, name=bm.name, sets_binds=True, source=bm.source)]
        return list(self.modules)


class CotainrSupport(Model):
    """How a site builds images with cotainr; sites without it get no ``cotainr`` choice."""

    system: NameWord | None = Field(
        default=None, description="`cotainr build --system` value, e.g. lumi-g (`cotainr info` lists them); or give "
        "base_image.")
    base_image: AbsPath | None = Field(
        default=None, description="`cotainr build --base-image` value: the image the build starts from, instead of "
        "a system's (LUMI: a LUMI AI Factory mpich image).")
    generation: Slug | None = Field(
        default=None, description="The container generation the built image runs with (binds, modules, run verb, "
        "settings left out), the base image's (LUMI: laif); default: own_image_generation.")
    build_partition: NameWord | None = Field(
        default=None, description="Partition container/build.sh runs the build on: a CPU partition, as the build "
        "needs no GPU (LUMI: small); default: the partial-node GPU partition.")
    build_cpus: int | None = Field(default=None, gt=0, description="Cores of the build; default: cpus_per_gpu.")
    build_mem_gb: int = Field(default=100, gt=0, description="Memory of the build in GB.")
    modules: list[NameWord] = Field(
        min_length=1, description="What `module load` needs for cotainr, in order, e.g. [LUMI, cotainr]."
    )
    base: str = Field(description="One line: what the system's base image contains (written as a comment).")
    pip_index: str | None = Field(
        default=None, description="Extra pip index for framework builds matching the base image's ROCm, e.g. "
        "https://download.pytorch.org/whl/rocm6.4.",
    )
    framework_packages: dict[Slug, list[str]] = Field(
        default_factory=dict,
        description="Per framework, its packages from pip_index, pinned with their local version (torch==2.9.1+rocm6.4): "
        "pip gives an extra index no priority over PyPI, whose builds lack ROCm.",
    )
    packages_source: str = Field(default="", description="Source key of pip_index and framework_packages.")
    pypi_packages: dict[Slug, list[str]] = Field(
        default_factory=dict,
        description="Per framework, its packages from PyPI itself, where the ROCm build is published there (0.5; "
        "JAX: jax[rocm7-local], whose ROCm plugin uses the base image's ROCm); no extra index is involved.",
    )
    pypi_source: str = Field(default="", description="Source key of pypi_packages.")
    source: str = ""

    _text = field_validator("base", "source", "packages_source", "pypi_source")(check_one_line)

    @field_validator("pypi_packages")
    @classmethod
    def _requirements(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for packages in value.values():
            for package in packages:
                check_requirement(package)
        return value

    @field_validator("pip_index")
    @classmethod
    def _index(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~-]+)*/?", value):
            raise ValueError(f"{value!r} must be an https URL of letters, digits and . _ ~ - (it goes into environment.yml)")
        return value

    @field_validator("framework_packages")
    @classmethod
    def _pins(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for packages in value.values():
            for package in packages:
                check_requirement(package)
            loose = [p for p in packages if "==" not in p or "*" in p]
            if loose:
                raise ValueError(f"{loose} must be pinned exactly (name==version+local): an extra index has no "
                                 "priority over PyPI, so anything looser can take PyPI's build")
        return value

    @model_validator(mode="after")
    def _index_for_packages(self) -> CotainrSupport:
        if self.framework_packages and not self.pip_index:
            raise ValueError("framework_packages come from pip_index: give it")
        if (self.system is None) == (self.base_image is None):
            raise ValueError("give one of system (cotainr build --system) or base_image (cotainr build --base-image), "
                             f"not {'both' if self.system else 'neither'}")
        return self

    @property
    def build_from(self) -> str:
        """Deprecated (nothing in lumi-scaffold uses it; container/build.sh reads
        cotainr_system and cotainr_base_image from values.sh); removed in 0.6."""
        import warnings

        warnings.warn("CotainrSupport.build_from is deprecated and is removed in lumi-scaffold 0.6: use system or "
                      "base_image", DeprecationWarning, stacklevel=2)
        return f"--system={self.system}" if self.system else f"--base-image={self.base_image}"


def _log_pattern(value: str) -> str:
    """A Python regular expression (scripts/lib/collective_net.py searches each log line with
    it), on one line of printable characters: values.sh writes it as one single-quoted shell
    word (values_items.word), so [ ? * $ \\ and quotes are safe there."""
    if not value or not value.isprintable():
        raise ValueError(f"{value!r} must be a regular expression on one line of printable characters")
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{value!r} is not a regular expression: {exc}") from None
    return value


LogPattern = Annotated[str, AfterValidator(_log_pattern)]


def _echoable(value: str) -> str:
    """Text a shell script echoes inside double quotes: no $, quotes or backslashes."""
    if not re.fullmatch(r"[A-Za-z0-9 ,.;:()/_+-]+", value):
        raise ValueError(f"{value!r}: letters, digits, spaces and , . ; : ( ) / _ + - only (it is echoed by a shell script)")
    return value


class RcclCheck(Model):
    """How a multi-node job tells from RCCL's init log (NCCL_DEBUG=INFO) whether it talks
    between nodes over the fast network or fell back to TCP sockets."""

    fast: LogPattern = Field(description="A line that means the fast network is used (LUMI: the OFI plugin's "
                             "`NET/OFI Selected provider is cxi`).")
    tcp: LogPattern = Field(description="A line that means TCP sockets are used (NET/Socket, `Using network Socket`, "
                            "an OFI plugin on libfabric's tcp provider).")
    final: LogPattern | None = Field(
        default=None,
        description="The line after which RCCL keeps its network: NCCL's `Using network <name>`, printed once per "
        "communicator when its network is set [RCCL-net]. Given, each such line decides (by itself, or by the last "
        "fast or tcp line before it) and nothing decides before it; absent (site data before 0.4), the last fast or "
        "tcp line decides as soon as it appears.",
    )
    name: str = Field(description="The fast network, for messages (Slingshot).")
    fix: str = Field(description="One line: what to check when RCCL fell back to TCP.")
    source: str = ""

    _text = field_validator("name", "fix", "source")(check_one_line)
    _plain = field_validator("name", "fix")(_echoable)


class AllreduceReference(Model):
    """A published all-reduce bus bandwidth the network preflight compares with."""

    busbw_gbs: float = Field(gt=0, description="Bus bandwidth in GB/s (rccl-tests' busbw) expected at size_bytes.")
    shape: str = Field(description="One line: what was measured (nodes, GPUs, message size, image).")
    source: str = Field(min_length=1, description="Where the figure is published (a source key); required.")
    size_bytes: int | None = Field(
        default=None, gt=0, description="The message size of the figure; absent: the largest message measured."
    )
    tolerance: float = Field(
        default=0.0, ge=0, lt=1, description="How far below busbw_gbs still passes, as a fraction (0.05: 5 %)."
    )
    nodes: int | None = Field(
        default=None, ge=2, description="The node count it was measured on: the preflight gives its verdict only there."
    )
    benchmark_args: list[str] = Field(
        default_factory=list,
        description="all_reduce_perf's options the figure was measured with (e.g. -b 2M -e 2048M -f 2 -g 1 -d half "
        "-n 80 -w 5); the preflight measures the same way, and gives its verdict only when it ran with exactly these. "
        "Empty: not known; the preflight measures with -b 1M -e 1G -f 2 and gives no verdict.",
    )
    column: Literal["out-of-place", "in-place"] = Field(
        default="out-of-place",
        description="The busbw column of all_reduce_perf's table the figure is read from (LUMI's ReFrame check: "
        "in-place [RF-RCCL]).",
    )

    image: str = Field(
        default="",
        description="The container image the figure was measured in (its file name, e.g. "
        "lumi-multitorch-u24r64f21m43t29-20250827_144347.sif); the preflight gives its verdict only in that image. "
        "Empty: none named (outside any container, with the system's ROCm and RCCL, or not said): a job, which runs in "
        "a container, gets no verdict.",
    )
    env: dict[EnvName, str] = Field(
        default_factory=dict,
        description="The RCCL and libfabric settings it was measured with (NCCL_NET_GDR_LEVEL: '3'); the preflight "
        "gives its verdict only where its benchmark ran with each of them.",
    )

    _text = field_validator("shape", "source")(check_one_line)
    _plain = field_validator("shape", "source")(_echoable)

    @field_validator("image")
    @classmethod
    def _file_name(cls, value: str) -> str:
        if value and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", value):
            raise ValueError(f"{value!r}: the image's file name only (letters, digits, . _ + -), no directory")
        return value

    @field_validator("env")
    @classmethod
    def _plain_values(cls, value: dict[str, str]) -> dict[str, str]:
        for name, setting in value.items():
            if not re.fullmatch(r"[A-Za-z0-9._,:/+-]*", setting):
                raise ValueError(f"{name}={setting!r}: a plain value only (letters, digits, . _ , : / + -; it is written "
                                 "into a shell script)")
        return value

    @model_serializer(mode="wrap")
    def _without_unsaid(self, handler: Any) -> dict[str, Any]:
        # A reference that names no image or settings dumps as before they existed (recorded plugin_data).
        data = handler(self)
        if isinstance(data, dict):
            for key in ("image", "env"):
                if not data.get(key):
                    data.pop(key, None)
        return data

    @field_validator("benchmark_args")
    @classmethod
    def _plain_words(cls, value: list[str]) -> list[str]:
        for word in value:
            if not re.fullmatch(r"-{1,2}[A-Za-z_]+|[A-Za-z0-9.]+", word):
                raise ValueError(f"{word!r}: an option (-b) or a plain value (2048M, half) only (it is written into a "
                                 "shell script)")
        return value
