"""Catalogue models: what they accept and what they refuse (with the field and reason)."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from lumi_scaffold.models import ContainerImage, EnvSetting, NodeLayout, Partition, Profiler, Site
from lumi_scaffold.plugins import get_catalogue


@pytest.fixture
def lumi_data() -> dict:
    return get_catalogue().sites["lumi"].model_dump()


def site_error(data: dict) -> str:
    with pytest.raises(ValidationError) as info:
        Site.model_validate(data)
    return str(info.value)


def test_builtin_lumi_site_validates(lumi_data):
    site = Site.model_validate(lumi_data)
    assert site.node.usable_cores == 56
    assert [p.name for p in site.partitions] == ["standard-g", "small-g", "dev-g"]
    assert site.partition("small-g").max_walltime == "3-00:00:00"  # not 30 minutes (seed note was wrong)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["node"]["cpu_masks"].pop(), "has 7 masks but the node has 8 GPUs"),
        (lambda d: d["node"]["cpu_masks"].__setitem__(4, "0x00000000000000ff"), "uses reserved core(s) [0]"),
        (lambda d: d["node"]["cpu_masks"].__setitem__(1, "0x00fe000000000000"), "overlaps the mask of an earlier rank"),
        (lambda d: d["node"]["cpu_masks"].__setitem__(0, "0x007e000000000000"), "it must have cpus_per_gpu=7"),
        (lambda d: d["node"]["cpu_masks"].__setitem__(0, "fe"), "must be a non-zero hex number"),
        (lambda d: d["node"].__setitem__("cpus_per_gpu", 8), "needs more than the 56 usable cores"),
        (lambda d: d["partitions"][0].__setitem__("max_nodes", 0), "greater than 0"),
        (lambda d: d["partitions"][1].__setitem__("max_walltime", "72 hours"), "is not a Slurm time"),
        (lambda d: d.__setitem__("partial_node_partition", "standard-g"), "must be a by-resource partition when the site has one"),
        (lambda d: d.__setitem__("whole_node_partition", "gpu"), "is not one of the partitions"),
        (lambda d: d["partitions"][0].__setitem__("name", "standard g"), "must be a plain name"),
        (lambda d: d["partitions"][0].__setitem__("name", "-g;x"), "must be a plain name"),
        (lambda d: d["account"].__setitem__("example", "proj_1"), "does not match pattern"),
        (lambda d: d["account"].__setitem__("pattern", "project_(46"), "not a regular expression"),
        (lambda d: d.__setitem__("colour", "blue"), "Extra inputs are not permitted"),
        (lambda d: d["env"][0].__setitem__("value", "hsn0; rm -rf ~"), "may only contain"),
        (lambda d: d["env"][0].__setitem__("why", "two\nlines"), "single line"),
        (lambda d: d["storage"][0].__setitem__("path", "relative/{account}"), "must be an absolute path"),
        (lambda d: d["partitions"].append(dict(d["partitions"][0])), "partitions names must be unique"),
        (lambda d: d["node"].__setitem__("mem_per_gpu_gb", 70), "mem_per_gpu_gb=70 x 8 GPUs exceeds mem_per_node_gb=480"),
        (lambda d: d["node"].__setitem__("mem_per_gpu_gb", None), "node.mem_per_gpu_gb is missing: jobs on part of a node"),
        (lambda d: d["generations"][0].__setitem__("bindings_module", {"name": "x"}), "give modules or bindings_module, not both"),
        (lambda d: d["generations"][0]["modules"][0].__setitem__("name", "${MOD}"), "is written unquoted into scripts"),
        (lambda d: d["generations"][0]["modules"].append(d["generations"][0]["modules"][0]), "modules names must be unique"),
        (lambda d: d["cotainr"].__setitem__("system", "lumi-g --evil"), "may only contain"),
        (lambda d: d["cotainr"].__setitem__("modules", []), "at least 1 item"),
        # cotainr's framework builds: exact pins with their local version, from an https index
        (lambda d: d["cotainr"]["framework_packages"].__setitem__("pytorch", ["torch"]), "must be pinned exactly"),
        (lambda d: d["cotainr"]["framework_packages"].__setitem__("pytorch", ["torch==2.9.*"]), "must be pinned exactly"),
        (lambda d: d["cotainr"].__setitem__("pip_index", "http://x.org/a b"), "must be an https URL"),
        (lambda d: d["cotainr"].__setitem__("pip_index", None), "framework_packages come from pip_index"),
        # cotainr builds from a system or a base image, one of them; runs as a known generation
        (lambda d: d["cotainr"].__setitem__("system", "lumi-g"), "give one of system (cotainr build --system) or base_image"),
        (lambda d: d["cotainr"].__setitem__("base_image", None), "give one of system (cotainr build --system) or base_image"),
        (lambda d: d["cotainr"].__setitem__("base_image", "laifs/x.sif"), "must be an absolute path"),
        (lambda d: d["cotainr"].__setitem__("generation", "byo"), "cotainr.generation='byo' is not one of the generations"),
        (lambda d: d["cotainr"].__setitem__("build_partition", "small; rm -rf ~"), "may only contain"),
        (lambda d: d["generations"][0]["modules"][0].__setitem__("use_module", "--help"), "must start with a letter or digit"),
        (lambda d: d["rccl_check"].__setitem__("tcp", "NET/Socket\nrm -rf ~"), "one line of printable characters"),
        (lambda d: d["rccl_check"].__setitem__("fast", "NET/OFI [cxi"), "is not a regular expression"),
        (lambda d: d["env"][0].__setitem__("scope", "sometimes"), "Input should be 'all', 'multi-node' or 'off'"),
        (lambda d: d.__setitem__("own_image_generation", "byo"), "own_image_generation='byo' is not one of the generations"),
        (lambda d: d.__setitem__("own_image_frameworks", "any"), "'any' must be 'all' or a list of framework names"),
        # found in review
        (lambda d: d.__setitem__("node_local_tmp_note", "RAM)\ntouch /tmp/x #"), "single line"),
        (lambda d: d["node"].__setitem__("mem_per_node_gb", None), "node.mem_per_node_gb is missing: whole-node jobs"),
        (lambda d: d["generations"][0]["modules"][0].__setitem__("name", "--help"), "must start with a letter or digit"),
        (lambda d: d["generations"][0].update(modules=[], bindings_module={"name": "${BINDMOD}"}), "is written unquoted into scripts"),
        (lambda d: d["generations"][0].update(modules=[], bindings_module={"name": "b", "source": "a\nb"}), "single line"),
        (lambda d: d["generations"][0].update(modules=[], bindings_module={"name": ""}), "is written unquoted into scripts"),
    ],
)
def test_invalid_site_names_field_and_reason(lumi_data, change, expected):
    data = copy.deepcopy(lumi_data)
    change(data)
    assert expected in site_error(data)


def test_mask_on_reserved_core_names_rank():
    with pytest.raises(ValidationError, match=r"rank 0\) uses reserved core"):
        NodeLayout(gpus=1, cpus=8, cores=8, reserved_cores=[0], cpus_per_gpu=1, cpu_masks=["0x1"], mem_per_gpu_gb=1, mem_per_node_gb=1)


def test_memory_requests_are_optional_on_whole_node_sites(lumi_data):
    """Without a figure the jobs request no memory; only sites with shared nodes need mem_per_gpu_gb."""
    NodeLayout(gpus=1, cpus=8, cores=8, cpus_per_gpu=1, cpu_masks=["0x1"])
    data = copy.deepcopy(lumi_data)
    data["node"].update(mem_per_gpu_gb=None, mem_per_node_gb=None)
    data["partitions"] = [p for p in data["partitions"] if p["allocation"] == "whole-node"]
    data["partial_node_partition"] = data["whole_node_partition"]
    assert Site.model_validate(data).node.mem_per_node_gb is None


def test_bindings_module_still_works_as_one_module(lumi_data):
    """Plugins written before `modules` give one bindings_module; it loads as a bindings entry."""
    data = copy.deepcopy(lumi_data)
    laif = data["generations"][0]
    laif["bindings_module"] = {"use": "/appl/local/laifs/modules", "name": "lumi-aif-singularity-bindings", "source": "TM-Cont"}
    laif["modules"] = []
    modules = Site.model_validate(data).generation("laif").load_modules
    assert [(m.use, m.name, m.sets_binds, m.source) for m in modules] == [
        ("/appl/local/laifs/modules", "lumi-aif-singularity-bindings", True, "TM-Cont")]


def test_own_image_generation_defaults_to_explicit_then_the_last(lumi_data):
    data = copy.deepcopy(lumi_data)
    assert Site.model_validate(data).own_generation.name == "explicit"
    data["own_image_generation"] = "laif"
    assert Site.model_validate(data).own_generation.name == "laif"
    data["own_image_generation"] = None
    data["generations"] = data["generations"][:2]  # no 'explicit' any more
    assert Site.model_validate(data).own_generation.name == "legacy-sif"


def test_partition_seconds():
    assert Partition(name="p", allocation="whole-node", max_nodes=1, max_walltime="1-02:03:04").max_seconds == 93784


def test_container_image_refuses_self_replacement_and_bad_versions():
    base = dict(id="x", site="s", framework="f", title="t", path="/a.sif", generation="g", status="legacy")
    with pytest.raises(ValidationError, match="replaced_by names the image itself"):
        ContainerImage(**base, replaced_by="x")
    with pytest.raises(ValidationError, match="is not a package name and version"):
        ContainerImage(**base, versions={"torch": "2.1; rm"})
    with pytest.raises(ValidationError, match="must be an absolute path"):
        ContainerImage(**{**base, "path": "image.sif"})
    for special in ("recommended", "custom", "cotainr"):
        with pytest.raises(ValidationError, match="is one of the container answers"):
            ContainerImage(**{**base, "id": special})
    with pytest.raises(ValidationError, match="numa_binding needs PyTorch 2.9 or later"):
        ContainerImage(**base, versions={"torch": "2.7.1"}, numa_binding=True)
    with pytest.raises(ValidationError, match="versions_unconfirmed names \\['jaxlib'\\]"):
        ContainerImage(**base, versions={"jax": "0.4.35.dev20250321"}, versions_unconfirmed=["jaxlib"])
    assert ContainerImage(**base, versions={"torch": "2.10.*"}, numa_binding=True).numa_binding


def test_profiler_kind_and_command_agree():
    with pytest.raises(ValidationError, match="needs a command"):
        Profiler(name="p", title="t", kind="command")
    with pytest.raises(ValidationError, match="may only contain"):
        Profiler(name="p", title="t", kind="command", command=["rocprof", "$(evil)"])
    assert Profiler(name="p", title="t", kind="command", command=["x", "-d", "{output}"]).command[-1] == "{output}"


def test_framework_train_args_are_plain_words_with_the_project_dir():
    from lumi_scaffold.models import Framework

    base = dict(name="f", title="F", launchers=["srun"], distributed_init="x", pinned_packages=["f"], smoke_test="", example="")
    assert Framework(**base, train_args=["--config", "{project_dir}/config/f.json"]).train_args[-1] == "{project_dir}/config/f.json"
    for bad in ["${HOME}/x", "a b", "$(id)", "x;y"]:
        with pytest.raises(ValidationError):
            Framework(**base, train_args=[bad])


def test_pinned_packages_are_names_only():
    """They are written into setup-venv.sh as a bash array (found in review)."""
    from lumi_scaffold.models import Framework

    base = dict(name="f", title="F", launchers=["srun"], distributed_init="x", smoke_test="", example="")
    assert Framework(**base, pinned_packages=["torch", "jax-lib.x"]).pinned_packages == ["torch", "jax-lib.x"]
    for bad in ["torch>=2.0", "jax[cuda]", "-e"]:
        with pytest.raises(ValidationError, match="is not a package name"):
            Framework(**base, pinned_packages=[bad])


def test_env_setting_allows_variable_references_only():
    assert EnvSetting(name="A", value="/tmp/${USER}-x", why="w").value == "/tmp/${USER}-x"
    for bad in ["$(whoami)", "`id`", "a b", "x;y", "'q'", "*"]:
        with pytest.raises(ValidationError):
            EnvSetting(name="A", value=bad, why="w")


# ------------------------------------------------------------------ known issues, review date


ISSUE = {"title": "hangs", "source": "X-1", "shapes": ["multi-node"], "instead": "use another image"}


def test_known_issue_affects_its_shapes_and_generations():
    from lumi_scaffold.models import KnownIssue

    multi = KnownIssue(**ISSUE)
    assert (multi.affects(1, "laif"), multi.affects(2, "laif"), multi.key) == (False, True, "X-1")
    laif = KnownIssue(**{**ISSUE, "shapes": [], "generations": ["laif"], "source": "A-1, B-2"})
    assert (laif.affects(1, "laif"), laif.affects(4, "legacy-sif"), laif.key, laif.conditional) == (True, False, "A-1", "")
    groups = KnownIssue(**{**ISSUE, "shapes": ["multi-node", "process-groups"]})
    assert groups.affects(2, "") and "second process group" in groups.conditional
    with pytest.raises(ValidationError, match="shapes"):
        KnownIssue(**{**ISSUE, "shapes": ["many-nodes"]})
    with pytest.raises(ValidationError, match="source"):
        KnownIssue(**{**ISSUE, "source": ""})


def test_image_known_issues_take_no_generations():
    image = get_catalogue().containers["laif-multitorch-20260513"].model_dump()
    with pytest.raises(ValidationError, match="an image's known issues take no generations"):
        ContainerImage(**{**image, "known_issues": [{**ISSUE, "generations": ["laif"]}]})


def test_env_known_issue_names_a_generation_of_the_site(lumi_data):
    setting = next(e for e in lumi_data["env"] if e["name"] == "NCCL_NET_GDR_LEVEL")
    setting["known_issues"][0]["generations"] = ["laiff"]
    assert "env NCCL_NET_GDR_LEVEL: known_issues name generations ['laiff']" in site_error(lumi_data)


def test_env_setting_without_issues_dumps_as_before():
    plain = EnvSetting(name="A", value="1", why="w")
    assert "known_issues" not in plain.model_dump()
    assert EnvSetting(name="A", value="1", why="w", known_issues=[ISSUE]).model_dump()["known_issues"][0]["source"] == "X-1"


def test_site_review_date(lumi_data):
    assert Site(**lumi_data).reviewed.isoformat() == "2026-11-24"
    assert "reviewed" in site_error({**lumi_data, "reviewed": "last week"})
