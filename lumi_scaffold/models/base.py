"""The base of the catalogue models, and the parts that images, sites and frameworks share:
known issues, environment settings, the Slurm options a site may add."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_serializer

from .._types import OWN_OPTIONS, EnvName, ShellWord, Slug, SlurmOption, check_shell_word, check_one_line

__all__ = ["EnvSetting", "ExtraOption", "JobShape", "KnownIssue", "Model", "ProfilerEnvSetting", "ProfilerWord", "check_unique"]


class Model(BaseModel):
    """Base for catalogue models: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


JobShape = Literal["multi-node", "process-groups"]


def check_unique(field: str, names: list[str]) -> None:
    """Refuse repeated names in a list field (partitions, images, ...)."""
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{field} names must be unique; repeated: {dupes}")


class KnownIssue(Model):
    """A known problem of an image or an env setting, from a public report (lumi-facts §11).

    A project is affected when its job has every shape in ``shapes`` (none: every job) and,
    for an env setting, its image is of one of ``generations`` (none: every image).
    ``process-groups`` (the code makes a second process group: tensor, pipeline, expert
    parallel) cannot be seen in the answers, so such an issue is named whenever its other
    shapes hold, saying that it applies if the code does that."""

    title: str = Field(description="One line: what goes wrong, e.g. 'multi-node init_process_group hangs'.")
    source: str = Field(min_length=1, description="Source key of the report (in sources.yaml), e.g. LAIF-I28; "
                                                  "also how doctor and explain name the issue.")
    shapes: list[JobShape] = Field(
        default_factory=list, description="Job shapes affected, all of them must hold: 'multi-node' (more than one "
        "node), 'process-groups' (a second process group); empty: every job.")
    generations: list[Slug] = Field(
        default_factory=list, description="Env settings only: the image generations the issue affects (the setting is "
        "left out of those projects); empty: every image.")
    instead: str = Field(description="One line: what to do instead.")

    _text = field_validator("title", "source", "instead")(check_one_line)

    @property
    def key(self) -> str:
        """The issue's name: its first source key (LAIF-I28)."""
        return self.source.split(",")[0].strip()

    def affects(self, nodes: int, generation: str) -> bool:
        """Whether a job on ``nodes`` nodes with an image of ``generation`` may hit the issue."""
        if self.generations and generation not in self.generations:
            return False
        return "multi-node" not in self.shapes or nodes > 1

    @property
    def conditional(self) -> str:
        """The condition answers cannot show ('' when none)."""
        return "if your code makes a second process group (new_group: tensor, pipeline or expert parallel)" \
            if "process-groups" in self.shapes else ""


class EnvSetting(Model):
    """One environment variable a generated script exports, with the reason beside it."""

    name: EnvName = Field(description="Variable name, e.g. NCCL_SOCKET_IFNAME.")
    value: ShellWord = Field(description="Value; may reference other variables as ${NAME}.")
    why: str = Field(description="One line saying why the setting is there; written as a comment.")
    source: str = Field(default="", description="Source key of the fact (see lumi-facts.md).")
    scope: Literal["all", "multi-node", "off"] = Field(
        default="all",
        description="'multi-node' settings are only written for jobs on more than one node; 'off' ones are written "
        "commented out, `why` saying why (e.g. a job option they need that the site does not confirm).",
    )
    known_issues: list[KnownIssue] = Field(
        default_factory=list, description="Known problems of the setting: it is not exported in projects an issue "
        "affects (its generations and shapes), and scripts/values.sh says why in a comment.")

    _why = field_validator("why", "source")(check_one_line)

    @model_serializer(mode="wrap")
    def _without_no_issues(self, handler: Any) -> dict[str, Any]:
        # A setting with no known issues dumps as before they existed (recorded plugin_data).
        data = handler(self)
        if isinstance(data, dict) and not data.get("known_issues"):
            data.pop("known_issues", None)
        return data


def _profiler_word(value: str) -> str:
    check_shell_word(value.replace("{output}", "output"))
    return value


ProfilerWord = Annotated[str, AfterValidator(_profiler_word)]


class ProfilerEnvSetting(EnvSetting):
    """An environment setting for the profiled rank; ``{output}`` is its output directory."""

    value: str = Field(description="Value; {output} stands for the rank's profile directory.")

    _value = field_validator("value")(_profiler_word)


def _not_own_option(value: str) -> str:
    """A site's option that lumi-scaffold does not write itself (_types.OWN_OPTIONS)."""
    if value.split("=")[0] in [f"--{name}" for name in OWN_OPTIONS]:
        raise ValueError(f"{value!r}: {value.split('=')[0]} comes from the project's answers; give only other options")
    return value


# A site's, partition's or image's own option: a SlurmOption lumi-scaffold does not write itself.
ExtraOption = Annotated[SlurmOption, AfterValidator(_not_own_option)]
