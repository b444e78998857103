"""Sites of any GPU vendor: a site whose nodes have NVIDIA GPUs (``node.gpu_vendor: nvidia``)
gets projects whose jobs ask the container for the GPUs (``singularity exec --nv``), report
each rank's GPU from CUDA_VISIBLE_DEVICES, watch the GPUs with nvidia-smi, and say NCCL where
an AMD site's say RCCL; a LUMI project keeps its AMD facts.

The test site's values are TEST DATA shaped like CINECA's Leonardo Booster (4 A100 GPUs and
32 cores per node, partitions and a 30-minute debug QOS with the site's own Slurm spelling,
Singularity): limits, masks, memory and paths are made up where they are not the point. The
public facts of such a machine belong in a site plugin with their sources, not here.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from lumi_scaffold import ContainerImage, Site
from lumi_scaffold.testing import answer_matrix, lint_projects, plugin_catalogue, render_project, scratch_dir, use_catalogue

from .copier_shortcuts import render_many
from .helpers import render, site_plugin, values

SITE = "leonardo-like"
LEONARDO = {  # TEST DATA, not facts about Leonardo (see the module docstring)
    "name": SITE,
    "title": "Leonardo-like test site (A100, Singularity)",
    "display_name": "Leonardo-like",
    "account": {"pattern": "[A-Za-z][A-Za-z0-9_]*", "example": "AIFAC_L01_028", "help": "Test data: a CINECA-style account."},
    "partitions": [
        {"name": "boost_usr_prod", "allocation": "by-resource", "max_nodes": 16,
         "max_walltime": "1-00:00:00", "purpose": "Test data: production jobs."},
        {"name": "boost_qos_dbg", "slurm_partition": "boost_usr_prod", "qos": "boost_qos_dbg", "allocation": "by-resource",
         "max_nodes": 2, "max_walltime": "00:30:00", "purpose": "Test data: a 30-minute debug QOS.", "chains": False},
    ],
    "partial_node_partition": "boost_usr_prod",
    "whole_node_partition": "boost_usr_prod",
    "node": {"gpus": 4, "cpus": 32, "cores": 32, "cpus_per_gpu": 8, "gpu_vendor": "nvidia",
             "cpu_masks": [f"0x{0xff << (8 * i):08x}" for i in range(4)], "mem_per_gpu_gb": 120, "mem_per_node_gb": 480},
    "storage": [
        {"name": "scratch", "path": "/leonardo_scratch/large/userexternal/${USER}", "kind": "parallel", "data": True},
        {"name": "work", "path": "/leonardo_work/{account}", "kind": "parallel"},
        {"name": "home", "path": "/leonardo/home/userexternal/${USER}", "kind": "home"},
    ],
    "node_local_tmp": "/tmp",
    "container_runtime": "singularity",
    "own_image_frameworks": "all",
    "generations": [{"name": "explicit", "title": "An image you built or pulled, binds given explicitly",
                     "run_verb": "exec", "binds": ["/leonardo_scratch", "/leonardo_work"]}],
    "cache_area": "scratch",
}


IMAGE = ContainerImage(  # TEST DATA: a made-up path and version
    id="leonardo-like-pytorch", site=SITE, framework="pytorch", title="Test image for the Leonardo-like site",
    path="/leonardo_work/AIFAC_L01_028/containers/pytorch-test.sif", generation="explicit",
    status="recommended", versions={"torch": "0.0.0"},
)
PLUGIN = site_plugin("test-leonardo-like", Site.model_validate(LEONARDO), IMAGE)

# AMD's words. A line may name them beside NVIDIA's (the static library's "NCCL/RCCL", "nccl-tests
# ... rccl-tests", "CUDA, ROCm"): true for both vendors. The project's own tests keep the
# public RCCL logs they read (test data), and the answers file the plugin API's field names.
AMD = re.compile(r"ROCR_|rocm|ROCm|RCCL|rccl|MIOpen|miopen|MIOPEN|GCD|MI250|amd-smi|rocprof|\bAMD\b")
NVIDIA = re.compile(r"NCCL|nccl-tests|CUDA|NVIDIA")


def amd_wording(project: Path) -> list[str]:
    return [f"{path.relative_to(project)}: {line.strip()}"
            for path in sorted(p for p in project.rglob("*") if p.is_file())
            if path.name not in ("SHA256SUMS", ".copier-answers.yml") and not path.relative_to(project).parts[0] == "tests"
            for line in path.read_text(errors="replace").splitlines() if AMD.search(line) and not NVIDIA.search(line)]


@pytest.fixture(scope="module")
def catalogue():
    cat = plugin_catalogue(PLUGIN)
    assert not cat.problems, cat.problems
    return cat


def _project(template, tmp_path, catalogue, **answers):
    with use_catalogue(catalogue):
        return render_project(template, tmp_path / "n", {"project_name": "demo", "site": SITE, "account": "AIFAC_L01_028",
                                                         **answers})


def covering(matrix: list[dict]) -> list[dict]:
    """One project per framework, launcher, profiler and job shape (the axes whose files
    differ in what they say of the GPUs), the images and pre-staging in turn among them: 18
    projects of the 112 the matrix has, every value of every axis among them."""
    groups: dict[tuple, list[dict]] = {}
    for answers in matrix:
        groups.setdefault(tuple(answers[k] for k in ("framework", "launcher", "profiler", "partition", "nodes")), []).append(answers)
    return [members[index % len(members)] for index, members in enumerate(groups.values())]


def test_every_nvidia_project_asks_for_the_gpus_and_names_nothing_of_amd(template, catalogue, tmp_path):
    full = list(answer_matrix(catalogue, sites=[SITE]))
    matrix = covering(full)
    for axis in ("framework", "launcher", "profiler", "partition", "nodes", "container", "prestage"):
        assert {a[axis] for a in matrix} == {a[axis] for a in full}, axis
    assert {a["profiler"] for a in full} == {"none", "framework"}  # rocprof profiles AMD's GPUs only
    assert {(a["partition"], a["nodes"]) for a in matrix} >= {("boost_usr_prod", 2), ("boost_qos_dbg", 1)}
    with scratch_dir(tmp_path) as scratch, use_catalogue(catalogue):
        assert render_many(template, scratch, matrix, workers=1 if os.cpu_count() == 1 else 2) == []
        projects = sorted(scratch.iterdir())
        assert lint_projects(projects, catalogue, answers=matrix) == []
        for project in projects:
            assert values(project)["container_command"] == ["singularity", "exec", "--nv"], project
        wording = {line for project in projects for line in amd_wording(project)}
    assert not wording, sorted(wording)[:20]


def test_the_wording_check_finds_amd_in_a_lumi_project(template, tmp_path):
    """The check above can fail: a LUMI project trips it, in its scripts and its README."""
    project = render(template, tmp_path / "p", nodes=2, profiler="rocprofv3")
    files = {line.split(":")[0] for line in amd_wording(project)}
    assert {"README.md", "scripts/values.sh", "jobs/profile.sbatch", "src/demo/smoke_test.py"} <= files, files


def test_the_vendor_decides_the_runtime_facts(template, tmp_path, catalogue):
    nvidia = values(_project(template, tmp_path / "n", catalogue, nodes=2, partition="boost_usr_prod"))
    lumi = values(render(template, tmp_path / "l", nodes=2))
    assert (nvidia["gpu_vendor"], nvidia["gpu_devices_variable"], nvidia["gpu_monitor"], nvidia["collectives"]) == (
        "nvidia", "CUDA_VISIBLE_DEVICES", "nvidia-smi", "NCCL")
    assert (lumi["gpu_vendor"], lumi["gpu_devices_variable"], lumi["gpu_monitor"], lumi["collectives"]) == (
        "amd", "ROCR_VISIBLE_DEVICES", "rocm-smi", "RCCL")
    assert lumi["container_command"] == ["singularity", "run"]  # LUMI's images bring their own ROCm
    assert nvidia["preflight_all_reduce_perf"] == ["all_reduce_perf"]
    assert lumi["preflight_all_reduce_perf"][0] == "/usr/libexec/rccl-tests/all_reduce_perf"
    assert "pytorch-triton-rocm" in lumi["venv_framework"] and not any("rocm" in p for p in nvidia["venv_framework"])
    assert not any("MIOPEN" in e for e in nvidia["kernel_cache_env"])
    assert any(e.startswith("MIOPEN_USER_DB_PATH=/tmp/") for e in lumi["kernel_cache_env"])


def test_a_site_may_name_its_own_gpu_flag(template, tmp_path):
    """``container_gpu_flag`` overrides the vendor's: --nvccli (nvidia-container-cli) here."""
    site = Site.model_validate({**LEONARDO, "container_gpu_flag": "--nvccli"})
    project = _project(template, tmp_path, plugin_catalogue(site_plugin("test-nvccli", site, IMAGE)))
    assert values(project)["container_command"] == ["singularity", "exec", "--nvccli"]
    assert "# --nvccli: the container's GPUs, as the site's data asks." in (project / "scripts/values.sh").read_text()


@pytest.mark.parametrize(("vendor", "env", "gpu"), [
    ("nvidia", {"CUDA_VISIBLE_DEVICES": "2,3", "ROCR_VISIBLE_DEVICES": "0,1"}, "3"),
    ("amd", {"CUDA_VISIBLE_DEVICES": "2,3", "ROCR_VISIBLE_DEVICES": "0,1"}, "1"),
    ("nvidia", {"ROCR_VISIBLE_DEVICES": "0,1"}, "none"),
])
def test_each_rank_reports_its_gpu_from_the_vendors_variable(template, tmp_path, catalogue, vendor, env, gpu):
    if vendor == "nvidia":
        project = _project(template, tmp_path, catalogue, container="custom", container_path="/leonardo_work/x.sif")
    else:
        project = render(template, tmp_path / "p", container="custom", container_path="/project/x.sif")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "NCCL_", "RCCL_")) and "VISIBLE" not in k}
    result = subprocess.run(["scripts/lib/run.sh", "true"], cwd=project, capture_output=True, text=True, env={
        **clean, **env, "USER": "tester", "SLURM_JOB_ID": "0", "SLURM_STEP_ID": "0", "SLURM_PROCID": "1",
        "SLURM_LOCALID": "1", "SLURM_NTASKS": "2"})
    assert result.returncode == 0, result.stderr
    assert re.search(rf"^rank 1/2 node \S+ local_rank 1 gpu {gpu} cpus ", result.stdout, re.M), result.stdout


def test_attach_watches_the_gpus_with_the_vendors_monitor(template, tmp_path, catalogue):
    project = _project(template, tmp_path, catalogue)
    attach = subprocess.run(["scripts/attach.sh", "--help"], cwd=project, capture_output=True, text=True)
    assert attach.returncode == 0 and "--smi            nvidia-smi every second\n" in attach.stdout, attach.stdout
    readme = (project / "README.md").read_text()
    assert "`NCCL_DEBUG_FILES=1 sbatch jobs/train.sbatch` writes NCCL's debug output" in readme
    assert "/logs/nccl-<jobid>-rank<rank>.txt" in readme


def test_the_debug_files_follow_the_collective_library(template, tmp_path, catalogue):
    """NCCL_DEBUG_FILES=1 gives each rank its debug file, named nccl-*, in an NVIDIA project;
    RCCL_DEBUG_FILES there does nothing (it is AMD's name)."""
    project = _project(template, tmp_path, catalogue, container="custom", container_path="/leonardo_work/x.sif")

    def debug_file(**env):
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "NCCL_")) and "DEBUG_FILES" not in k}
        result = subprocess.run(["scripts/lib/run.sh", "bash", "-c", 'echo "${NCCL_DEBUG_FILE:-none}"'], cwd=project,
                                env={**clean, "USER": "tester", "SLURM_JOB_ID": "42", "SLURM_PROCID": "3",
                                     "LUMI_SCAFFOLD_LOG_DIR": f"{project}/out/logs", **env}, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()[-1]

    assert debug_file(NCCL_DEBUG_FILES="1") == f"{project}/out/logs/nccl-42-rank3.txt"
    assert debug_file(RCCL_DEBUG_FILES="1") == "none"


# ------------------------------------------------------------------ a job on the local Slurm


def _local_nvidia_catalogue():
    """The local test site (plugins/lumi-site-local) with NVIDIA GPUs, as ``local-nvidia``."""
    import yaml

    local = pytest.importorskip("lumi_site_local")
    data = yaml.safe_load(Path(local.__file__).with_name("local.yaml").read_text())
    data.pop("miopen_cache", None)  # (MIOpen is AMD's)
    data.update(name="local-nvidia", title="Local Slurm box with NVIDIA GPUs (test data)",
                node={**data["node"], "gpu_vendor": "nvidia", "gpu_type": ""})
    return plugin_catalogue(site_plugin("test-local-nvidia", Site.model_validate(data), ContainerImage(
        id="local-nvidia-pytorch-cpu", site="local-nvidia", framework="pytorch", title="pytorch CPU build for local tests",
        path="/opt/containers/pytorch-cpu.sif", generation="plain", status="recommended", versions={"torch": "2.13.0"})))


def test_an_nvidia_job_sees_its_gpus_through_the_containers_gpu_flag(slurm_cluster_local2n, template, tmp_path, site_root):
    """On a host whose GPUs need --nv (the stand-in's FAKE_SINGULARITY_GPU_FLAG), the smoke job
    with the user's own command (nvidia-smi) sees the GPU Slurm gave it, and its rank line names
    it from CUDA_VISIBLE_DEVICES; the same job whose container command lost --nv does not."""
    from .jobs import job_env, log_of, run_job

    with use_catalogue(_local_nvidia_catalogue()):
        project = render_project(template, tmp_path / "p", {"project_name": "demo", "site": "local-nvidia",
                                                             "account": "local", "framework": "pytorch"})
    job = project / "jobs/smoke-test.sbatch"
    job.write_text(job.read_text().replace("COMMAND=(python -u src/demo/smoke_test.py)", "COMMAND=(nvidia-smi -L)"))
    env = job_env(slurm_cluster_local2n, tmp_path / "work", site_root, FAKE_SINGULARITY_GPU_FLAG="--nv")
    job_id, result = run_job(slurm_cluster_local2n, project, env, "jobs/smoke-test.sbatch", timeout=120)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert re.search(r"^rank 0/1 node \S+ local_rank 0 gpu \d+ cpus ", log, re.M), log
    assert re.search(r"^GPU 0: NVIDIA A100 \(fake, slurm index \d+\)$", log, re.M), log

    values_sh = project / "scripts/values.sh"
    values_sh.write_text(values_sh.read_text().replace("container_command=('singularity' 'exec' '--nv')",
                                                       "container_command=('singularity' 'exec')"))
    job_id, result = run_job(slurm_cluster_local2n, project, env, "jobs/smoke-test.sbatch", timeout=120)
    log = log_of(project, job_id)
    assert result.state == "FAILED" and "nvidia-smi: command not found (the container got no --nv" in log, log


@pytest.mark.parametrize("vendor", ["amd", "nvidia"])
def test_new_plugin_asks_for_the_vendor_and_writes_only_its_facts(tmp_path, vendor):
    """`lumi-scaffold new-plugin -d kind=site -d gpu_vendor=...`: the site's data names the
    vendor, loads, and an NVIDIA site's names nothing of AMD's (no MIOpen cache, NCCL's
    bootstrap)."""
    from lumi_scaffold.datafile import load_data_file
    from lumi_scaffold.newplugin import new_plugin

    dest = new_plugin(tmp_path / "p", {"kind": "site", "name": "mycluster", "gpu_vendor": vendor}, defaults=True, quiet=True)
    data = dest / "lumi_site_mycluster" / "mycluster.yaml"
    site = load_data_file(data, Site)
    assert site.node.gpu_vendor == vendor
    text = data.read_text()
    assert ("miopen_cache" in text and "RCCL bootstrap" in text) == (vendor == "amd")
    assert ("NCCL bootstrap" in text and not AMD.search(text)) == (vendor == "nvidia")


@pytest.mark.parametrize("runs_on", ["pytorch", "none"])
def test_new_plugin_writes_no_site_data_for_a_framework_on_another_frameworks_images(tmp_path, runs_on):
    """`new-plugin -d kind=framework` asks whether it runs on another framework's images
    (the default: PyTorch's): then its images.yaml is empty and it names no site, LUMI
    included; with `runs_on=none` the framework brings an EXAMPLE image of its own."""
    from lumi_scaffold import ContainerImage, Framework
    from lumi_scaffold.datafile import load_data_file
    from lumi_scaffold.newplugin import new_plugin

    answers = {"kind": "framework", "name": "myframework", **({"runs_on": runs_on} if runs_on != "pytorch" else {})}
    package = new_plugin(tmp_path / "p", answers, defaults=True, quiet=True) / "lumi_framework_myframework"
    framework = load_data_file(package / "myframework.yaml", Framework, smoke_test="", example="")
    images = load_data_file(package / "images.yaml", ContainerImage, many=True)
    assert framework.runs_on == (None if runs_on == "none" else "pytorch")
    assert [i.site for i in images] == ([] if runs_on == "pytorch" else ["lumi"])
    assert ("/appl/local" in (package / "images.yaml").read_text()) == (runs_on == "none")


def test_a_partition_with_a_minimum_node_count(template, tmp_path):
    """A QOS for large jobs (TEST DATA: 65-256 nodes): fewer nodes are refused with one line
    that names a partition taking them; its fewest nodes render; the matrix renders it so."""
    from lumi_scaffold.questions import check
    from lumi_scaffold.testing import job_shapes

    site = Site.model_validate({**LEONARDO, "partitions": [*LEONARDO["partitions"], {
        "name": "boost_qos_bprod", "slurm_partition": "boost_usr_prod", "qos": "boost_qos_bprod", "allocation": "whole-node",
        "min_nodes": 65, "max_nodes": 256, "max_walltime": "1-00:00:00", "purpose": "Test data: 65 to 256 nodes."}]})
    cat = plugin_catalogue(site_plugin("test-large", site, IMAGE))
    answers = {"project_name": "demo", "site": SITE, "account": "AIFAC_L01_028", "framework": "pytorch",
               "gpus_per_node": 4, "nodes": 2}
    assert check("partition", "boost_qos_bprod", answers, cat) == (
        "boost_qos_bprod takes jobs of at least 65 nodes, not 2. Use partition=boost_usr_prod or nodes=65.")
    assert check("partition", "boost_qos_bprod", {**answers, "nodes": 65}, cat) == ""
    assert ("boost_qos_bprod", 65, 4) in job_shapes(site)
    with pytest.raises(ValueError, match="min_nodes 300 exceeds max_nodes 256"):
        Site.model_validate({**LEONARDO, "partitions": [*LEONARDO["partitions"], {
            "name": "x", "allocation": "whole-node", "min_nodes": 300, "max_nodes": 256, "max_walltime": "01:00:00"}]})
    project = _project(template, tmp_path, cat, nodes=65, partition="boost_qos_bprod")
    assert "#SBATCH --nodes=65\n" in (project / "jobs/train.sbatch").read_text()


def test_the_smoke_test_runs_on_the_sites_smoke_partition(template, tmp_path):
    """smoke_partition (TEST DATA: the 30-minute debug QOS) takes the one-GPU smoke test; the
    training job stays on its own partition; the project lints clean; an unknown name is
    refused when the site loads."""
    site = Site.model_validate({**LEONARDO, "smoke_partition": "boost_qos_dbg"})
    cat = plugin_catalogue(site_plugin("test-smoke", site, IMAGE))
    project = _project(template, tmp_path, cat, nodes=2, partition="boost_usr_prod")
    smoke = (project / "jobs/smoke-test.sbatch").read_text()
    assert "#SBATCH --partition=boost_usr_prod\n" in smoke and "#SBATCH --qos=boost_qos_dbg\n" in smoke, smoke[:900]
    assert "--qos" not in (project / "jobs/train.sbatch").read_text()
    assert lint_projects([project], cat) == []
    with pytest.raises(ValueError, match="smoke_partition='nope' is not one of the partitions"):
        Site.model_validate({**LEONARDO, "smoke_partition": "nope"})


def test_a_sites_own_profiler_is_offered_to_every_framework(template, tmp_path):
    """A site's nsys (TEST DATA: a command profiler registered by the site's plugin, for
    NVIDIA GPUs) is offered to PyTorch and JAX there, and not at LUMI; a site naming a
    profiler nobody registers is dropped with one line."""
    from lumi_scaffold import Profiler, hookimpl
    from lumi_scaffold.questions import check, choices

    nsys = Profiler(name="nsys", title="Nsight Systems on one rank (test data)", kind="command", gpu_vendor="nvidia",
                    command=["nsys", "profile", "-o", "{output}/rank"])
    name, hooks = site_plugin("test-nsys", Site.model_validate({**LEONARDO, "profilers": ["nsys"]}), IMAGE)
    hooks.register_profilers = hookimpl(lambda register: register(nsys))
    cat = plugin_catalogue((name, hooks))
    assert not cat.problems, cat.problems
    for framework in ("pytorch", "jax"):
        answers = {"site": SITE, "framework": framework, "container": "custom"}
        assert "nsys" in choices("profiler", answers, cat).values()
        assert check("profiler", "nsys", answers, cat) == ""
    assert "nsys" not in choices("profiler", {"site": "lumi", "framework": "pytorch"}, cat).values()
    assert check("profiler", "rocprof", {"site": SITE, "framework": "pytorch", "container": "custom"}, cat) == (
        "'rocprof' profiles AMD GPUs; Leonardo-like's are NVIDIA's. Use one of ['none', 'framework', 'nsys'].")
    assert "nsys" in {a["profiler"] for a in answer_matrix(cat, sites=[SITE])}
    project = _project(template, tmp_path, cat, profiler="nsys", profile_rank=0, container="custom",
                       container_path="/leonardo_work/x.sif")
    assert values(project)["profiler_command"] == ["nsys", "profile", "-o", "{output}/rank"]
    broken = plugin_catalogue(site_plugin("test-no-nsys", Site.model_validate({**LEONARDO, "profilers": ["nsys"]}), IMAGE))
    assert [p.message for p in broken.problems if "nsys" in p.message] == [
        "site 'leonardo-like': profilers ['nsys'] are not registered; known: ['framework', 'none', 'rocprof', 'rocprofv3']"]
