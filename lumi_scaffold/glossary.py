"""The terms the questionnaire, the generated README and ``explain`` use without defining
them: one page, printed offline by ``lumi-scaffold reference glossary`` and built into the
documentation site as glossary.md (docs/_hooks/lumi_docs.py). The [KEY] after a definition
is its source in lumi_scaffold/sources.yaml (docs/sources.md)."""

from __future__ import annotations

__all__ = ["TERMS", "glossary_page"]

# term -> definition (Markdown), in the order a newcomer meets them in the questionnaire.
TERMS = {
    "GCD": (
        "Graphics Compute Die. An AMD MI250X module holds two GCDs, and each GCD is one GPU to Slurm, ROCm and the "
        "frameworks (64 GB of memory each). A LUMI-G node has 4 MI250X modules, so 8 GCDs: \"GPUs per node\" in the "
        "questionnaire counts GCDs. [UG-lumig], [TM-Slurm]"),
    "GPU-hours (billing units)": (
        "What a LUMI project's GPU allocation is counted in. One GPU-hour is one whole MI250X module (2 GCDs) for one "
        "hour, so a GCD-hour bills 0.5 GPU-hours and a whole standard-g node (8 GCDs) bills 4 GPU-hours per hour. "
        "On small-g and dev-g a job is billed for the larger of its GCDs, its cores (8 per GCD) and its memory "
        "(64 GB per GCD): 1 GCD with 256 GB of memory bills as 4 GCDs. `lumi-scaffold explain` prices each job "
        "this way before you submit it. [UG-bill], [TM-Slurm]"),
    "LUST": (
        "The LUMI User Support Team, LUMI's central user support. The `lust-*` container images and much of the "
        "LUMI material this tool cites come from its public repositories."),
    "LAIF": (
        "The LUMI AI Factory. Since 2026 it publishes the recommended AI containers (`laif-multitorch-*`: ROCm, "
        "MPICH, RCCL and PyTorch built for LUMI) under /appl/local/laifs/containers/. [LAIF-R], [AIG-02]"),
    "cotainr": (
        "A tool by DeiC that builds a Singularity container image from a conda environment file, in user space, on "
        "LUMI itself. Choosing `container=cotainr` gives the project `container/environment.yml` and "
        "`container/build.sh`. [COT], [SS-cot]"),
    "observed, not announced": (
        "A container image lumi-scaffold has seen in public job scripts on the site, but that the site has not "
        "announced. It is offered, never the default, and `lumi-scaffold doctor` on a login node checks that it "
        "is still there."),
    "issue key": (
        "A name like `LAIF-I28` in square brackets after an image: a known issue, here issue 28 of the LAIF "
        "container recipes. The end of `lumi-scaffold new` says whether it affects your job's shape and what to "
        "do instead; `lumi-scaffold explain` and `doctor` name it again. Every key is in docs/sources.md. [LAIF-I28]"),
    "profile rank": (
        "The one training process (rank, counted from 0 over all nodes) that `jobs/profile.sbatch` runs under the "
        "profiler; every other rank trains as usual. Profiling one rank keeps the overhead and the output small. "
        "[WS-09]"),
    "RCCL": (
        "ROCm's collective communication library, AMD's counterpart of NVIDIA's NCCL: the all-reduce and the other "
        "collectives of multi-GPU training go through it (PyTorch's `nccl` backend is RCCL on ROCm). The preflight "
        "job measures its all-reduce bandwidth. [WS-09]"),
}


def glossary_page() -> str:
    """The glossary as Markdown (one heading per term, so that each has an anchor)."""
    lines = ["# Glossary", "",
             "The terms the questionnaire, the generated README and `lumi-scaffold explain` use. "
             "`lumi-scaffold reference glossary` prints this page; the keys in [brackets] are the sources "
             "([Sources](sources.md)).", ""]
    for term, text in TERMS.items():
        lines += [f"## {term}", "", text, ""]
    return "\n".join(lines)
