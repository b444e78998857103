"""The command a generated job file starts with (its ``COMMAND=(...)``), as bash words.

The command is the user's from the moment the project is written: the job file holds it,
the jobs add nothing to it but the arguments given to sbatch, and the library prints the
whole step line before it starts (scripts/lib/job.sh). This module writes the first
version: the framework's example or smoke test, with the framework's own arguments.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .plugin_data import PluginData

__all__ = ["command", "launch_note", "shell_word"]

_PLAIN_WORD = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")
_VARIABLE = re.compile(r"^[^\"\\`$]*(\$\{[A-Z_][A-Z0-9_]*\}[^\"\\`$]*)+$")
# An example written for lumi-scaffold 0.4 or before takes the run directory as --output
# (the jobs gave it then, where the script's text defined it); from 0.5 the jobs give the
# run directory only as RUN_DIR, so such an example's command names it, visibly.
_TAKES_OUTPUT = re.compile(r"[\"']--output[\"']")


def shell_word(word: str) -> str:
    """A word as bash reads it back: as it is when plain, in double quotes when it names
    ${VARIABLES} to expand when the job runs, else in single quotes."""
    if _PLAIN_WORD.match(word):
        return word
    if _VARIABLE.match(word):
        return f'"{word}"'
    return "'" + word.replace("'", "'\\''") + "'"


def command(pd: PluginData, kind: str, example: str = "") -> list[str]:
    """The command a job file starts with (its COMMAND): the framework's example (``train``,
    ``profile``: with the framework's own arguments, and --steps for a short profile) or
    smoke test (``smoke``), from the project directory. ``example``: the example's text."""
    if kind == "smoke":
        return ["python", "-u", f"src/{pd.package}/smoke_test.py"]
    words = ["python", "-u", f"src/{pd.package}/train.py"]
    words += [a.replace("{project_dir}/", "").replace("{project_dir}", ".") for a in pd.framework.train_args]
    if _TAKES_OUTPUT.search(example):
        words += ["--output", "${RUN_DIR}"]
    if kind == "profile":
        words += ["--steps", str(pd.job.profile_steps)]
    return words


def launch_note(pd: PluginData, launcher: str, cite: Callable[[str], str]) -> list[str]:
    """How the training ranks start and how their CPUs are bound: comment lines, true for
    this combination."""
    job, cpus = pd.job, pd.site.cpus_per_gpu
    lines = []
    if launcher == "torchrun":
        lines.append(cite("One task per node; torchrun starts a worker per GPU and rendezvouses at MASTER_ADDR. [AIG-05]"))
    lines += {
        "torchrun-numa": [
            "torchrun binds each worker to its own share of the cores of its GPU's NUMA node",
            cite(f"(--numa-binding={job.torchrun_binding}, PyTorch 2.9 and later; it runs numactl in the image). [AIG-05]")],
        "torchrun-shared-node": [
            "Its workers are not bound to cores: on a shared node the job's cores may lie outside",
            "the NUMA nodes of its GPUs, where --numa-binding would fail."],
        "torchrun-own-image": [
            "Its workers are not bound to cores: the catalogue does not know your image's PyTorch.",
            cite("With PyTorch 2.9 or later, NUMA_BINDING=exclusive (a line above the call, or before sbatch) binds them. [AIG-05]"),
            "The srun launcher binds each rank to its GPU's cores (lumi-scaffold update -d launcher=srun)."],
        "torchrun-image": [
            "Its workers are not bound to cores: the catalogue does not mark this image as having",
            "torchrun's --numa-binding (PyTorch 2.9 and later). The srun launcher binds each rank",
            "to its GPU's cores (lumi-scaffold update -d launcher=srun)."],
        "masks": [
            f"One task per GPU, each bound with --cpu-bind=mask_cpu to its GPU's {cpus} cores",
            cite("(the site's masks, local rank i -> GPU i). [AIG-05], [TM-Bind]")],
    }.get(job.binding, [
        f"One task per GPU with {cpus} cores each, placed by Slurm: CPU masks only make sense",
        cite("on whole nodes. [TM-Bind]")])
    return lines
