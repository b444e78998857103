"""The network parts of scripts/values.sh (lumi_scaffold.values writes the file): the
check of the collective library's network between nodes, and the network preflight with its reference figure."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .gpu_vendors import vendor
from .plugin_data import PluginData
from .values_items import Heading, Item, Value, absent, empty


def network(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    check = pd.site.rccl_check
    if check is None:
        return absent("The network check: none for this site.", "net_check", "net_check_fast", "net_check_tcp",
                       "net_check_final", "net_check_fix")
    library = vendor(pd.site.gpu_vendor).collectives
    return [
        Heading((f"The network check (scripts/lib/collective_net.py): between nodes {library} must use {check.name}; when it",
                 f"cannot, it falls back to TCP sockets, several times slower, with no error.{f' [{check.source}]' if check.source else ''}",
                 f"{library}_NET_CHECK=0 sbatch ... skips it.")),
        Value("net_check", check.name),
        Value("net_check_fast", check.fast),
        Value("net_check_tcp", check.tcp),
        Value("net_check_final", check.final or "", (
            f"The line after which {library} keeps its network ('' : the last network line decides).",)),
        Value("net_check_fix", check.fix),
    ]


# all_reduce_perf's options where the reference names none, and the ones allreduce_bench.py takes.
ALL_REDUCE_DEFAULT_ARGS = ("-b", "1M", "-e", "1G", "-f", "2")
ALLREDUCE_BENCH_OPTIONS = ("-b", "-e", "-f", "-n", "-w", "-d")


def _option_words(args: Iterable[str]) -> list[str]:
    """Command-line words as one word per option with its value ("-b 2M")."""
    out: list[str] = []
    for word in args:
        if word.startswith("-") or not out:
            out.append(word)
        else:
            out[-1] += f" {word}"
    return out


def preflight(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    names = (("preflight_all_reduce_perf",), ("preflight_options",), "preflight_benchmark", ("preflight_benchmark_args",),
             "preflight_framework", "preflight_reference", "preflight_reference_size", "preflight_reference_tolerance",
             "preflight_reference_nodes", "preflight_reference_column", "preflight_reference_args",
             "preflight_reference_shape", "preflight_reference_source", "preflight_reference_image",
             ("preflight_reference_env",), ("preflight_mpi",))
    if not pd.job.slurm.get("preflight"):
        return absent("The network preflight (jobs/preflight.sbatch): none in a one-node project.", *names)
    job, site, ref = pd.job, pd.site, pd.site.allreduce_reference
    gpu = vendor(site.gpu_vendor)
    ref_args = list(ref.benchmark_args) if ref and ref.benchmark_args else list(ALL_REDUCE_DEFAULT_ARGS)
    perf_args = ref_args if "-g" in ref_args else ref_args + ["-g", "1"]  # one GPU per task unless the reference says
    bench_args = [w for words in _option_words(ref_args) if words.split()[0] in ALLREDUCE_BENCH_OPTIONS for w in words.split()]
    if job.cpu_bind:
        ranks = "each bound to its GPU's cores as the training ranks are (--cpu-bind masks)"
    else:
        ranks = f"with {site.cpus_per_gpu} cores each, placed by Slurm"
    torchrun = " Training starts one torchrun per node instead." if answers.get("launcher") == "torchrun" else ""
    laif = " (where LAIF images install it, not on PATH [LAIF-R])" if cite("[LAIF-R]") else ""
    bench = "scripts/lib/allreduce_bench.py" if job.allreduce_bench else ""
    what = {"jax": "JAX: psum over all devices", "torch": "torch.distributed.all_reduce"}.get(job.allreduce_bench, "")
    items: list[Item] = [
        Heading(("The network preflight (jobs/preflight.sbatch, preflight_job in scripts/lib/preflight.sh): one task",
                 f"per GPU, {ranks}.{torchrun}")),
        Value("preflight_all_reduce_perf", gpu.all_reduce_perf, (
            f"{gpu.benchmark_suite}' all_reduce_perf, looked up in the image in this order when the job starts{laif};",
            "ALL_REDUCE_PERF=/path sbatch ... names another, ALL_REDUCE_PERF=none skips it.")),
        Value("preflight_options", tuple(_option_words(perf_args)), (
            f"all_reduce_perf's options, one option and its value a word{' (as the reference below)' if ref and ref.benchmark_args else ''}",
            "(-g 1: one GPU per task); the job's arguments come after them. An option the image's",
            f"all_reduce_perf does not know (an older {gpu.benchmark_suite}) is left out, and there is no verdict then.")),
        Value("preflight_benchmark", bench, (
            (f"Without all_reduce_perf: the project's benchmark ({what}), which prints the same table.",)
            if bench else (f"Without all_reduce_perf the job stops: {pd.framework.title} has no benchmark in this project.",))),
        Value("preflight_benchmark_args", ("--framework", job.allreduce_bench, *bench_args) if bench else (), (
            "Its options: the framework, then all_reduce_perf's -b -e -f -n -w -d of the ones above.",) if bench else ()),
        Value("preflight_framework", pd.framework.title, ("The framework, for the job's messages.",)),
        Value("preflight_mpi", tuple(pd.container.mpi_srun_options), (
            "How the image's MPI programs (all_reduce_perf) get their ranks from srun (none: started without them,",
            "and a table of one-rank runs is refused).",)),
    ]
    if ref is None:
        return items + [
            Heading((f"No published all-reduce figure for {site.display_name or site.name} is known here: the job prints its",
                     "bandwidth with no verdict; compare it with your own earlier runs.")),
            *empty(*names[5:-1])]
    where = f", in the image {ref.image}" if ref.image else ""
    measured: tuple[str, ...] = ((f"Measured as it was (all_reduce_perf with these options{f', {ref.nodes} nodes' if ref.nodes else ''}"
                 f"{where}{', with its settings' if ref.env else ''}),", "the job prints its share of it and fails below "
                 "it; otherwise it prints one WARNING line with both figures, no verdict.") if ref.benchmark_args else
                ("The reference does not say which all_reduce_perf options it was measured with: the job",
                 "prints one WARNING line with both figures, no verdict."))
    if ref.benchmark_args and not ref.image:
        measured += ("It names no image it was measured in, and a job runs in one: no verdict, its figure beside it.",)
    return items + [
        Heading((f"The preflight's reference: {ref.busbw_gbs:g} GB/s {ref.column} busbw"
                 f"{f' at {ref.size_bytes} bytes' if ref.size_bytes else ''}{f' on {ref.nodes} nodes' if ref.nodes else ''}, "
                 f"{ref.tolerance * 100:g} % below allowed", f"({ref.shape}) [{ref.source}].", *measured)),
        Value("preflight_reference", f"{ref.busbw_gbs:g}", ("GB/s of busbw.",)),
        Value("preflight_reference_size", str(ref.size_bytes or 0), ("The message size in bytes (0: the largest message).",)),
        Value("preflight_reference_tolerance", str(ref.tolerance), ("How far below it still passes (a fraction).",)),
        Value("preflight_reference_nodes", str(ref.nodes or 0), ("The node count it was measured on (0: not known).",)),
        Value("preflight_reference_column", ref.column, ("The busbw column of all_reduce_perf's table.",)),
        Value("preflight_reference_args", " ".join(perf_args) if ref.benchmark_args else "", (
            "all_reduce_perf's options it was measured with ('': not known).",)),
        Value("preflight_reference_shape", ref.shape),
        Value("preflight_reference_source", ref.source),
        Value("preflight_reference_image", ref.image, (
            "The image it was measured in (its file name; '': none named): a verdict only in that image.",)),
        Value("preflight_reference_env", tuple(f"{k}={v}" for k, v in ref.env.items()), (
            "The settings it was measured with: a verdict only where the benchmark ran with each of them.",)),
    ]
