"""Answers: each invalid answer is refused with the question, the value and the fix."""

from __future__ import annotations

import dataclasses

import pytest

from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.assemble import resolve
from lumi_scaffold.known_issues import notices
from lumi_scaffold.questions import QUESTIONS, check, check_all, choices, default

BASE = {
    "project_name": "demo",
    "site": "lumi",
    "account": "project_465000000",
    "framework": "pytorch",
    "container": "recommended",
    "nodes": 1,
    "gpus_per_node": 8,
    "partition": "standard-g",
    "walltime": "01:00:00",
    "launcher": "srun",
    "data_location": "scratch",
    "prestage": False,
    "profiler": "none",
    "extra_requirements": "",
}


@pytest.mark.parametrize(
    ("changes", "question", "message"),
    [
        ({"account": "foo"}, "account", "is not a lumi project account (like project_465000000)"),
        ({"account": "project_465000000; rm -rf ~"}, "account", "is not a lumi project account"),
        ({"account": "project_463000000"}, "account", "is not a lumi project account"),
        ({"gpus_per_node": 9}, "gpus_per_node", "standard-g nodes have 8 GPUs (GCDs). Use gpus_per_node=8."),
        ({"gpus_per_node": 0}, "gpus_per_node", "Use gpus_per_node=1."),
        ({"nodes": 0}, "nodes", "Use 1 to 1024"),
        ({"nodes": 2, "gpus_per_node": 4, "partition": "small-g"}, "gpus_per_node", "a job on 2 nodes uses whole nodes: small-g nodes have 8 GPUs, not 4. Use gpus_per_node=8 or nodes=1."),
        ({"nodes": 5, "partition": "small-g"}, "partition", "small-g allows at most 4 nodes, not 5. Use partition=standard-g or nodes=4."),
        ({"nodes": 33, "partition": "dev-g"}, "partition", "dev-g allows at most 32 nodes"),
        ({"gpus_per_node": 2, "partition": "standard-g"}, "partition", "standard-g allocates (and bills) whole nodes"),
        ({"walltime": "2-00:00:01"}, "walltime", "exceeds the standard-g limit of 2-00:00:00"),
        ({"partition": "dev-g", "gpus_per_node": 1, "walltime": "04:00:00"}, "walltime", "exceeds the dev-g limit of 03:00:00"),
        ({"walltime": "1h"}, "walltime", "is not a Slurm time"),
        ({"walltime": "00:00:00"}, "walltime", "is zero"),
        ({"framework": "tensorflow"}, "framework", "has no container image for framework 'tensorflow'"),
        ({"container": "lust-jax-0.4.35"}, "container", "is not a pytorch image for lumi"),
        ({"container": "custom", "container_path": "my.sif"}, "container_path", "must be an absolute path"),
        ({"container": "custom", "container_path": "/p/x.img"}, "container_path", "does not end in .sif. Give the absolute path of your container image (.sif), e.g. /"),
        ({"container": "custom", "container_path": "/p/$(id).sif"}, "container_path", "may only contain"),
        ({"project_name": "My Project"}, "project_name", "is not a valid project name"),
        ({"project_name": "x;rm -rf ~"}, "project_name", "is not a valid project name"),
        ({"project_name": "1abc"}, "project_name", "starting with a letter"),
        ({"launcher": "mpirun"}, "launcher", "does not support launcher 'mpirun'"),
        ({"framework": "jax", "launcher": "torchrun"}, "launcher", "jax does not support launcher 'torchrun'"),
        ({"data_location": "home"}, "data_location", "is not a data area on lumi"),
        ({"prestage": True, "dataset_archive": "data.tar"}, "dataset_archive", "must be an absolute path"),
        ({"prestage": True, "dataset_archive": "/flash/p/data.zip"}, "dataset_archive", "does not end in .tar or .tar.gz"),
        ({"profiler": "nsys"}, "profiler", "does not support profiler 'nsys'"),
        # rocprof (v1) is not offered with the ROCm 7 LAIF image; rocprofv3 replaces it. [TM-PAOW]
        ({"profiler": "rocprof"}, "profiler", "'rocprof' does not work in image laif-multitorch-20260513"),
        ({"profiler": "rocprof", "profile_rank": 8}, "profile_rank", "the job has 8 ranks (0 to 7)"),
        ({"extra_requirements": "numpy; rm -rf ~"}, "extra_requirements", "is not a pip requirement"),
        ({"extra_requirements": "--index-url=http://evil"}, "extra_requirements", "is not a pip requirement"),
    ],
)
def test_invalid_answer_is_refused(changes, question, message):
    answers = {**BASE, **changes}
    error = check(question, answers[question], answers, get_catalogue())
    assert message in error
    assert [line for line in check_all(answers, get_catalogue()) if line.startswith(f"{question}=")]


def test_valid_answers_pass():
    assert check_all(BASE, get_catalogue()) == []
    ok = {**BASE, "extra_requirements": "transformers>=4.40 datasets, accelerate==1.2.0 numpy<2"}
    assert check_all(ok, get_catalogue()) == []


def test_skipped_questions_are_not_checked():
    """container_path/dataset_archive/profile_rank only matter when their gate is on."""
    answers = {**BASE, "container_path": "junk", "dataset_archive": "junk", "profile_rank": 99}
    assert check_all(answers, get_catalogue()) == []


def test_partition_default_follows_shape():
    cat = get_catalogue()
    assert default("partition", {**BASE, "gpus_per_node": 8}, cat) == "standard-g"
    assert default("partition", {**BASE, "gpus_per_node": 2}, cat) == "small-g"


def test_choices_come_from_the_catalogue():
    cat = get_catalogue()
    assert set(choices("framework", BASE, cat).values()) == {"pytorch", "jax"}
    containers = list(choices("container", BASE, cat).values())
    assert containers[0] == "recommended" and containers[-2:] == ["custom", "cotainr"]
    assert "lust-pytorch-2.7.1" in containers and "lust-jax-0.4.35" not in containers
    assert list(choices("launcher", {**BASE, "framework": "jax"}, cat).values()) == ["srun"]


def test_resolve_whole_node_multi_node_legacy_image():
    data = resolve({**BASE, "nodes": 2, "container": "lust-pytorch-2.7.1"}, get_catalogue())
    c = data["container"]
    assert (c["generation"], c["run_verb"], c["activate_var"], c["module"]) == ("legacy-sif", "exec", "WITH_CONDA", "")
    assert c["binds"][-3:] == ["/var/spool/slurmd", "/opt/cray", "/usr/lib64/libcxi.so.1"]
    assert data["pins"] == {"torch": "2.7.1"}
    job = data["job"]
    computed = {k: job.pop(k) for k in ("slurm", "memory", "cpu_bind", "binds", "srun_options", "cost", "allreduce_bench",
                                        "shapes", "memory_note", "whole_node_memory")}
    assert job == {"smoke_partition": "small-g", "smoke_qos": "", "whole_node": True, "exclusive": False, "tasks": 16,
                   "tasks_per_node": 8, "ranks_per_task": 1, "cpus_per_task": 7, "torchrun_binding": "",
                   "binding": "masks", "shared_node_tmp_gb": None, "run_name": "demo", "profile_steps": 40, "signal_lead": 300,
                   "profile_signal_lead": 300}
    # The computed job fields the templates print.
    assert computed["memory"] == "--mem=480G" and data["package"] == "demo"
    assert computed["memory_note"] == "Whole nodes: 480G per node." and computed["whole_node_memory"] == "--mem=480G"
    # The shapes the options are rendered from: structured values.
    train = computed["shapes"]["train"]
    assert (train["time"], train["nodes"], train["gpus_per_node"], train["memory"], train["binding"]) == (
        "01:00:00", 2, 8, {"form": "per-node", "gb": 480}, "masks")
    assert computed["shapes"]["smoke"]["memory"] == {"form": "per-gpu", "gb": 60}
    assert computed["cpu_bind"].startswith("verbose,mask_cpu:0x00fe000000000000,0xfe00000000000000,")
    assert computed["binds"][0] == "/pfs" and computed["binds"][-1] == "/usr/lib64/libcxi.so.1"
    assert computed["slurm"]["train"] == [
        "--job-name=demo-train", f"--account={BASE['account']}", "--partition=standard-g", "--time=01:00:00",
        "--nodes=2", "--ntasks-per-node=8", "--gpus-per-node=8", "--cpus-per-task=7", "--mem=480G"]
    # the profile job: the training shape with its own time limit (40 steps)
    assert computed["slurm"]["profile"] == ["--job-name=demo-profile", *computed["slurm"]["train"][1:3], "--time=00:20:00",
                                            *computed["slurm"]["train"][4:]]
    assert computed["slurm"]["smoke"] == [
        "--job-name=demo-smoke", f"--account={BASE['account']}", "--partition=small-g", "--time=00:10:00", "--nodes=1",
        "--ntasks-per-node=1", "--gpus-per-node=1", "--cpus-per-task=7", "--mem-per-gpu=60G"]
    # A former LUST image keeps the workshop's GDR level [WS-09]; nothing is left out.
    assert {e["name"] for e in data["env"]} >= {"NCCL_SOCKET_IFNAME", "NCCL_NET_GDR_LEVEL", "FI_CXI_DEFAULT_CQ_SIZE"}
    assert data["env_left_out"] == []
    # The network preflight: the training shape for 15 minutes; the image has no MPI launch.
    assert computed["slurm"]["preflight"] == ["--job-name=demo-preflight", *computed["slurm"]["train"][1:3],
                                              "--time=00:15:00", *computed["slurm"]["train"][4:]]
    assert computed["allreduce_bench"] == "torch" and c["mpi_srun_options"] == []


@pytest.mark.parametrize("nodes", [1, 2])
def test_laif_image_leaves_the_gdr_level_out_with_its_known_issue(nodes):
    data = resolve({**BASE, "nodes": nodes}, get_catalogue())
    assert data["container"]["generation"] == "laif"
    assert "NCCL_NET_GDR_LEVEL" not in {e["name"] for e in data["env"]}
    assert [(e["name"], e["source"]) for e in data["env_left_out"]] == [("NCCL_NET_GDR_LEVEL", "LAIF-I30, AIG-PR97")]
    assert all("known_issues" not in e for e in data["env"])  # the catalogue keeps them, not the answers file


def test_image_known_issues_are_named_for_the_affected_shape_only():
    cat = get_catalogue()
    named = {(image, nodes): [line.split("]")[0] for line in notices(resolve({**BASE, "nodes": nodes, "container": image}, cat), cat)
                              if line.startswith("Known issue")]
             for image in ("laif-multitorch-20260415", "laif-multitorch-20260807", "laif-multitorch-20260513") for nodes in (1, 2)}
    assert named == {("laif-multitorch-20260415", 1): [], ("laif-multitorch-20260415", 2): ["Known issue [LAIF-I28"],
                     ("laif-multitorch-20260807", 1): [], ("laif-multitorch-20260807", 2): ["Known issue [LAIF-I44"],
                     ("laif-multitorch-20260513", 1): [], ("laif-multitorch-20260513", 2): []}
    line = next(x for x in notices(resolve({**BASE, "nodes": 2, "container": "laif-multitorch-20260807"}, cat), cat)
                if x.startswith("Known issue"))
    assert "if your code makes a second process group" in line and line.endswith("Fix: lumi-scaffold update -d container=laif-multitorch-20260513")


def test_preflight_has_one_task_per_gpu_and_the_shorter_time():
    """torchrun trains with one task per node; the preflight starts one per GPU (the site's
    cores per GPU each), for 15 minutes or the training's time if shorter. LAIF images start
    all_reduce_perf with --mpi=pmi2 [LAIF-T]; JAX projects benchmark with JAX; one node: none."""
    cat = get_catalogue()
    data = resolve({**BASE, "nodes": 2, "launcher": "torchrun", "partition": "dev-g", "walltime": "00:10:00"}, cat)
    assert data["job"]["slurm"]["train"][5:8] == ["--ntasks-per-node=1", "--gpus-per-node=8", "--cpus-per-task=56"]
    assert data["job"]["slurm"]["preflight"] == [
        "--job-name=demo-preflight", f"--account={BASE['account']}", "--partition=dev-g", "--time=00:10:00",
        "--nodes=2", "--ntasks-per-node=8", "--gpus-per-node=8", "--cpus-per-task=7", "--mem=480G", "--exclusive"]
    assert data["container"]["mpi_srun_options"] == ["--mpi=pmi2"]
    reference = data["site"]["allreduce_reference"]  # LUMI's own RCCL check [RF-RCCL]
    assert (reference["busbw_gbs"], reference["size_bytes"], reference["tolerance"], reference["nodes"]) == (
        85, 134217728, 0.05, 2) and reference["column"] == "in-place"
    assert " ".join(reference["benchmark_args"]) == "-b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5 -d half"
    assert resolve({**BASE, "nodes": 2, "framework": "jax"}, cat)["job"]["allreduce_bench"] == "jax"
    single = resolve({**BASE, "gpus_per_node": 2, "partition": "small-g"}, cat)
    assert "preflight" not in single["job"]["slurm"] and single["job"]["allreduce_bench"] == ""
    assert single["container"]["mpi_srun_options"] == []


def test_resolve_single_node_legacy_has_no_cpe_binds_and_jax_pins():
    data = resolve({**BASE, "framework": "jax", "container": "lust-jax-0.4.28", "gpus_per_node": 1, "partition": "small-g"}, get_catalogue())
    assert "/opt/cray" not in data["container"]["binds"]
    # What the image ships (its EasyConfig [EBC]); flax and optax are requirements with it [PYPI].
    assert data["pins"] == {"jax": "0.4.28", "numpy": "2.2.2", "pandas": "2.2.3", "scipy": "1.15.1"}
    assert data["requirements"] == ["flax==0.8.3", "optax==0.2.2"] and data["container"]["versions_unconfirmed"] == []
    assert data["job"]["whole_node"] is False


def test_resolve_small_g_whole_node_is_exclusive_and_custom_image_untouched():
    data = resolve({**BASE, "partition": "small-g", "container": "custom", "container_path": "/project/p/my.sif"}, get_catalogue())
    assert data["job"]["exclusive"] is True
    assert data["container"]["path"] == "/project/p/my.sif" and data["container"]["generation"] == "explicit"
    assert data["pins"] == {}


def test_walltime_bins_and_qos_partitions(monkeypatch):
    """Limits that depend on node count (Frontier batch) and a QOS on top of a partition."""
    from lumi_scaffold.models import Partition

    cat = get_catalogue()
    site = cat.sites["lumi"]
    batch = Partition(name="batch", allocation="whole-node", max_nodes=9408, max_walltime="12:00:00",
                      walltime_bins=[{"max_nodes": 91, "max_walltime": "02:00:00"}, {"max_nodes": 183, "max_walltime": "06:00:00"}])
    debug = Partition(name="debug", slurm_partition="batch", qos="debug", allocation="whole-node", max_nodes=9408, max_walltime="02:00:00")
    monkeypatch.setitem(cat.sites, "lumi", site.model_copy(update={"partitions": [*site.partitions, batch, debug]}))
    answers = {**BASE, "partition": "batch", "nodes": 2}
    assert "exceeds the batch limit of 02:00:00 for 2 node(s)" in check("walltime", "06:00:00", answers, cat)
    assert check("walltime", "06:00:00", {**answers, "nodes": 100}, cat) == ""
    data = resolve({**BASE, "partition": "debug"}, cat)
    assert (data["partition"]["slurm_partition"], data["partition"]["qos"]) == ("batch", "debug")
    with pytest.raises(ValueError, match="strictly ascending"):
        Partition(name="p", allocation="whole-node", max_nodes=9, max_walltime="12:00:00",
                  walltime_bins=[{"max_nodes": 5, "max_walltime": "01:00:00"}, {"max_nodes": 2, "max_walltime": "02:00:00"}])


@pytest.fixture
def byo_site(monkeypatch):
    """A copy of LUMI named 'byo' with no catalogue image and no cotainr: users bring their own .sif."""
    cat = get_catalogue()
    lumi = cat.sites["lumi"]

    def add(**changes):
        site = lumi.model_copy(update={"name": "byo", "cotainr": None, **changes})
        monkeypatch.setitem(cat.sites, "byo", site)
        return cat

    return add


def test_a_site_without_images_offers_only_the_frameworks_it_opts_in(byo_site):
    cat = byo_site()
    assert cat.frameworks_for("byo") == []  # not automatic: the site must opt in
    cat = byo_site(own_image_frameworks=["jax"])
    assert cat.frameworks_for("byo") == ["jax"]
    assert "does not offer it with your own image" in check("framework", "pytorch", {**BASE, "site": "byo"}, cat)
    cat = byo_site(own_image_frameworks="all")
    assert cat.frameworks_for("byo") == ["pytorch", "jax"]


def test_own_image_site_offers_custom_by_default_and_refuses_recommended(byo_site):
    cat = byo_site(own_image_frameworks="all", own_image_generation="legacy-sif")
    answers = {**BASE, "site": "byo", "container": "custom", "container_path": "/project/p/own.sif"}
    assert list(choices("container", answers, cat).values()) == ["custom"]
    assert default("container", answers, cat) == "custom"
    assert default("container_path", answers, cat) == "/project/project_465000000/containers/demo.sif"
    assert "has no recommended pytorch image: users bring their own. Use custom" in check("container", "recommended", answers, cat)
    assert "has no cotainr support" in check("container", "cotainr", answers, cat)
    assert check_all(answers, cat) == []
    data = resolve(answers, cat)
    assert data["pins"] == {} and data["framework"]["pinned_packages"] == ["torch"]
    assert (data["container"]["path"], data["container"]["generation"]) == ("/project/p/own.sif", "legacy-sif")


def test_cotainr_is_offered_only_where_the_site_has_it():
    cat = get_catalogue()
    assert default("container", BASE, cat) == "recommended"
    assert "cotainr" in choices("container", BASE, cat).values()
    data = resolve({**BASE, "container": "cotainr"}, cat)
    assert data["container"]["path"] == "container/demo.sif"
    # Built on LAIF's mpich image, it runs as a LAIF image (binds module, `run`). [WS-06-2026]
    assert "/lumi-multitorch-mpich-" in data["container"]["cotainr"]["base_image"]
    assert (data["container"]["generation"], data["container"]["run_verb"]) == ("laif", "run")
    if "local" not in cat.sites:
        pytest.skip("needs the local site plugin (pip install -e plugins/lumi-site-local)")
    local = {**BASE, "site": "local", "account": "local", "partition": "debug"}  # images, but no cotainr
    assert list(choices("container", local, cat).values()) == ["recommended", "local-pytorch-cpu", "custom"]
    assert "local has no cotainr support" in check("container", "cotainr", local, cat)


def test_answer_matrix_offers_what_the_questionnaire_offers(byo_site):
    from lumi_scaffold.testing import answer_matrix

    cat = byo_site(own_image_frameworks=["jax"])
    containers = {(a["site"], a["framework"], a["container"]) for a in answer_matrix(cat, sites=["lumi", "byo"])}
    assert {c for s, f, c in containers if s == "byo"} == {"custom"}
    assert {(f, c) for s, f, c in containers if s == "byo"} == {("jax", "custom")}
    assert {"recommended", "custom", "cotainr"} <= {c for s, f, c in containers if s == "lumi"}


def test_modules_are_recorded_in_order_with_the_old_single_module_keys(byo_site):
    from lumi_scaffold.models import EnvModule

    lumi = get_catalogue().sites["lumi"]
    explicit = lumi.generation("explicit").model_copy(update={"modules": [
        EnvModule(name="rocm"), EnvModule(name="rccl-net-plugin", why="RCCL network plugin")]})
    cat = byo_site(own_image_frameworks="all", generations=[explicit])
    data = resolve({**BASE, "site": "byo", "container": "custom", "container_path": "/p/x.sif"}, cat)
    assert [m["name"] for m in data["container"]["modules"]] == ["rocm", "rccl-net-plugin"]
    # Template versions that load one module get the last one (no bindings module here).
    assert (data["container"]["module"], data["container"]["module_use"]) == ("rccl-net-plugin", "")
    laif = resolve(BASE, get_catalogue())["container"]
    assert (laif["module"], laif["module_use"]) == ("lumi-aif-singularity-bindings", "/appl/local/laifs/modules")


@pytest.mark.parametrize("walltime", ["01: 00:00", "01:00:00\nx", "０1:00:00", "01:٠0:00", "1h", "1:00:00:00", "01:60:00",
                                      "1-24", "00:00:00", "0", "", 3600])
def test_walltime_must_be_an_ascii_slurm_time_and_nothing_else(walltime):
    assert check("walltime", walltime, {**BASE, "walltime": walltime}, get_catalogue())


@pytest.mark.parametrize("walltime", [" 01:00:00", "01:00:00\n", "\t90", "90", "01:00", "2-00"])
def test_walltime_in_any_sbatch_form_with_spaces_around_is_taken(walltime):
    assert check("walltime", walltime, {**BASE, "walltime": walltime}, get_catalogue()) == ""


def test_slurm_time_is_refused_with_spaces_newlines_or_other_digits():
    from lumi_scaffold._types import slurm_time_seconds

    assert slurm_time_seconds("1-02:03:04") == 93784 and slurm_time_seconds("01:00:00") == 3600
    for bad in (" 01:00:00", "01:00:00\n", "０1:00:00", "٠1:00:00"):
        with pytest.raises(ValueError, match="ASCII digits and no spaces"):
            slurm_time_seconds(bad)


def test_a_project_name_is_trimmed_and_one_with_a_newline_inside_is_refused():
    assert "is not a valid project name" in check("project_name", "de\nmo", BASE, get_catalogue())
    assert check("project_name", " demo\n", BASE, get_catalogue()) == ""


def test_help_texts_fit_80_columns():
    # Copier prints the help after "🎤 " (3 columns) and the answer on the next line.
    wide = [(name, line) for name, q in QUESTIONS.items() for line in q.help.splitlines() if len(line) > 77]
    assert wide == []


def test_the_preflight_benchmark_follows_what_the_framework_pins_not_its_name():
    """The fallback benchmark imports the image's framework: JAX's psum for one that pins jax,
    whatever its name; torch's all_reduce for one on env:// (MASTER_ADDR); none for others."""
    from lumi_scaffold.assemble import _allreduce_bench

    cat = get_catalogue()
    jax, torch = cat.frameworks["jax"], cat.frameworks["pytorch"]
    assert _allreduce_bench(jax.model_copy(update={"name": "myjax"}), cat) == "jax"
    assert _allreduce_bench(torch.model_copy(update={"name": "mytorch"}), cat) == "torch"
    assert _allreduce_bench(jax.model_copy(update={"name": "other", "pinned_packages": ["other"]}), cat) == ""


def test_what_moved_out_of_questions_or_went_out_of_use_warns_and_still_works():
    """Deprecated names work until 0.6 and say so, naming where to go."""
    import lumi_scaffold.questions as q
    from lumi_scaffold import assemble

    with pytest.warns(DeprecationWarning, match=r"removed in lumi-scaffold 0\.6: use lumi_scaffold\.assemble\.resolve"):
        assert q.resolve is assemble.resolve
    with pytest.warns(DeprecationWarning, match=r"use lumi_scaffold\.known_issues\.notices"):
        assert q.notices is notices
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        q.nothing  # noqa: B018
    cotainr = get_catalogue().sites["lumi"].cotainr
    with pytest.warns(DeprecationWarning, match=r"build_from is deprecated and is removed in lumi-scaffold 0\.6"):
        assert cotainr.build_from in (f"--system={cotainr.system}", f"--base-image={cotainr.base_image}")


def _every_site_and_framework(cat):
    for site in cat.sites:
        for fw in cat.frameworks_for(site):
            answers = {**BASE, "site": site, "framework": fw, "account": cat.sites[site].account.example}
            yield site, fw, answers


def test_choice_labels_fit_80_columns():
    from lumi_scaffold.questions import LABEL_WIDTH

    cat = get_catalogue()
    wide = [(q, label) for _, _, a in _every_site_and_framework(cat)
            for q in ("site", "framework", "container", "partition", "launcher", "data_location", "profiler", "tracking")
            for label in choices(q, a, cat) if len(label) > LABEL_WIDTH]
    assert wide == [] and LABEL_WIDTH <= 76
    # What a choice costs stays in its label; the whole label is in `reference questions`.
    flash = next(label for label, v in choices("data_location", BASE, cat).items() if v == "flash")
    assert "billed 3x" in flash, flash
    whole = next(label for label, v in choices("data_location", BASE, cat, whole=True).items() if v == "flash")
    assert whole.endswith("best for many small reads.)") and len(whole) > LABEL_WIDTH
    from lumi_scaffold.reference import questions_page

    assert whole.split(": ", 1)[-1] in questions_page()
    labels = choices("container", BASE, cat)
    assert "laif-multitorch-20260225 [legacy; LAIF-I18]: torch 2.9 (2026-02-25)" in labels
    assert "laif-multitorch-20260807 [available; LAIF-I44]: torch 2.10 (2026-08-07)" in labels


def test_the_recommended_image_is_the_first_choice_and_the_default():
    cat = get_catalogue()
    checked = 0
    for site, fw, answers in _every_site_and_framework(cat):
        if cat.recommended_image(site, fw) is None:
            continue
        checked += 1
        assert list(choices("container", answers, cat).values())[0] == "recommended", (site, fw)
        assert default("container", answers, cat) == "recommended", (site, fw)
    assert checked >= 2


def test_the_test_site_is_offered_only_when_asked_for(monkeypatch):
    from lumi_scaffold.questions import TEST_SITES_ENV

    cat = get_catalogue()
    if "local" not in cat.sites:
        pytest.skip("needs the local site plugin (pip install -e plugins/lumi-site-local)")
    assert "local" in choices("site", BASE, cat).values() and check("site", "local", BASE, cat) == ""
    monkeypatch.delenv(TEST_SITES_ENV)
    assert "local" not in choices("site", BASE, cat).values() and default("site", BASE, cat) == "lumi"
    assert f"Set {TEST_SITES_ENV}=1" in check("site", "local", BASE, cat)


def test_placeholders_name_the_made_up_answers():
    from lumi_scaffold.questions import placeholders

    cat = get_catalogue()
    mine = {**BASE, "account": "project_465001234"}
    assert placeholders(mine, cat) == []
    assert placeholders(BASE, cat) == ["account=project_465000000 (LUMI's example, not your project)"]
    custom = {**mine, "container": "custom", "container_path": default("container_path", mine, cat)}
    assert placeholders(custom, cat) == [f"container_path={custom['container_path']} (a made-up path)"]
    assert placeholders({**custom, "container_path": "/project/project_465001234/mine.sif"}, cat) == []
    staged = {**mine, "prestage": True, "dataset_archive": default("dataset_archive", mine, cat)}
    assert placeholders(staged, cat) == [f"dataset_archive={staged['dataset_archive']} (a made-up path)"]


def test_observed_images_are_offered_with_their_status_and_are_never_a_default():
    """Images seen in public job scripts but not announced (20260929, 20260731; lumi-facts
    section 12) say so in their choice, are no default even where a site had only them, and
    no known issue's fix moves a project onto one."""
    cat = get_catalogue()
    labels = choices("container", BASE, cat)
    observed = {label: value for label, value in labels.items() if value in ("laif-multitorch-20260929", "laif-multitorch-20260731")}
    assert sorted(observed.values()) == ["laif-multitorch-20260731", "laif-multitorch-20260929"]
    assert all("[observed, not announced]" in label for label in observed)
    assert cat.recommended_image("lumi", "pytorch").id == "laif-multitorch-20260513"
    assert default("container", BASE, cat) == "recommended"
    # A site with only legacy and observed images (observed ones listed first) falls back on
    # a legacy image, never an observed one.
    only = {i: c if c.status == "observed" else c.model_copy(update={"status": "legacy"})
            for i, c in sorted(cat.containers.items(), key=lambda item: item[1].status != "observed")}
    fallback = default("container", BASE, dataclasses.replace(cat, containers=only))
    assert fallback not in observed.values() and only[fallback].status == "legacy"
    # 20260807's known issue names the recommended image, not the newer observed ones, as the way out.
    data = resolve({**BASE, "nodes": 2, "container": "laif-multitorch-20260807"}, cat)
    assert any("Fix: lumi-scaffold update -d container=laif-multitorch-20260513" in n for n in notices(data, cat))


def test_a_project_on_an_observed_image_is_told_so_at_the_end_of_copy():
    cat = get_catalogue()
    data = resolve({**BASE, "container": "laif-multitorch-20260929"}, cat)
    assert data["container"]["status"] == "observed"
    said = [n for n in notices(data, cat) if "observed, not announced" in n]
    assert len(said) == 1 and "[OBS-LAIF]" in said[0] and "lumi-scaffold doctor on a login node" in said[0]
    assert said[0].endswith("lumi-scaffold update -d container=laif-multitorch-20260513")


def test_an_answer_no_question_asks_is_refused_with_what_it_needs():
    from lumi_scaffold.questions import unasked

    cat = get_catalogue()
    assert "profile_rank='3' applies only with a profiler" in unasked({"profile_rank": "3"}, cat)
    assert unasked({"profile_rank": "3", "profiler": "rocprofv3"}, cat) == ""
    assert unasked({"profile_rank": "3"}, cat, {"profiler": "rocprofv3"}) == ""  # an update: the project has one
    assert "container=custom" in unasked({"container_path": "/p/x.sif"}, cat)
    assert "prestage=true" in unasked({"dataset_archive": "/p/x.tar"}, cat, {"prestage": False})
