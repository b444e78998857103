"""scripts/lib/collective_net.py with LUMI's site data. The script's own behaviour (verdicts on real
RCCL/NCCL logs from public issues, the watcher, the preflight's bandwidth verdict) is tested
by the project's tests, project-templates/project/tests/test_collective_net.py, which every
generated project carries (tests/test_project_tests.py runs them); here: LUMI's patterns on
the LAIF images' logs, the project tests check with LUMI's patterns and reference, and the
site data they come from."""

from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path

import pytest

from lumi_scaffold.models import Site
from lumi_scaffold.plugins import get_catalogue

from .helpers import PROJECT, load_module

collective_net = load_module("collective_net", PROJECT / "scripts/lib/collective_net.py")
project_tests = load_module("project_tests_collective_net", PROJECT / "tests/test_collective_net.py")

# ---- Real log excerpts (each as its source prints it; lines only left out, never changed) ----

# lumi-ai-factory/laifs-container-recipes#28, comment of 2026-04-23 (LUMI, image
# lumi-multitorch-torch-u24r64f21m43t29-20260319_153422, aws-ofi-rccl): Slingshot.
LAIF_0319_CXI = ["NET/OFI Using aws-ofi-rccl 1.4.0",
                 "NET/OFI Selected Provider is cxi",
                 "Using network AWS Libfabric"]
# The same comment, image lumi-multitorch-torch-u24r70f21m50t210-20260415_130625: the newer
# plugin spells "provider" in lower case and names the network "Libfabric". Slingshot too.
LAIF_0415_CXI = ["NET/OFI No eligible providers were found",
                 "NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)",
                 "NET/OFI Using transport protocol SENDRECV",
                 "NET/OFI Support for DMA-BUF registrations: true",
                 "Using network Libfabric"]

LUMI = get_catalogue().sites["lumi"].rccl_check  # what LUMI projects run with
assert LUMI is not None and LUMI.final
REF = get_catalogue().sites["lumi"].allreduce_reference
assert REF is not None


@pytest.mark.parametrize("lines", [LAIF_0319_CXI, LAIF_0415_CXI], ids=["laif28-0319-cxi", "laif28-0415-cxi"])
def test_lumi_verdict_on_the_laif_images_logs(lines):
    """Both spellings of the LAIF images' cxi line read as Slingshot with LUMI's patterns."""
    assert collective_net.verdict("\n".join(lines) + "\n", LUMI.fast, LUMI.tcp, LUMI.final) == "fast"


def test_the_project_tests_check_with_lumis_patterns_and_reference():
    """The project's tests (site-neutral words, static) hold LUMI's check and reference as
    their example site's: when LUMI's data changes, they change with it."""
    assert project_tests.PATTERNS == (LUMI.fast, LUMI.tcp, LUMI.final)
    assert project_tests.REF_ARGS.split() == REF.benchmark_args
    given = dict(zip(project_tests.BUSBW[:-1:2], project_tests.BUSBW[1:-1:2]))
    assert (float(given["--reference"]), int(given["--size"]), float(given["--tolerance"]), int(given["--nodes"]),
            given["--column"]) == (REF.busbw_gbs, REF.size_bytes, REF.tolerance, REF.nodes, REF.column)


def test_old_site_data_still_loads():
    """rccl_check and allreduce_reference as a plugin wrote them for 0.3 (no final, no column)."""
    data = copy.deepcopy(get_catalogue().sites["lumi"].model_dump())
    data["rccl_check"] = {"fast": "NET/OFI", "tcp": "NET/Socket", "name": "Slingshot", "fix": "bind the CXI libraries",
                          "source": "WS-09"}
    data["allreduce_reference"] = {"busbw_gbs": 85, "size_bytes": 134217728, "shape": "2 nodes", "source": "RF-RCCL"}
    site = Site.model_validate(data)
    assert site.rccl_check and site.rccl_check.final is None
    assert site.allreduce_reference and site.allreduce_reference.column == "out-of-place"
    assert site.allreduce_reference.benchmark_args == []


def test_patterns_with_any_characters_reach_the_job_as_written(template, tmp_path):
    """A site's patterns may use what regular expressions use ([ ] ? * \\ $ and quotes, issue
    42): values.sh holds each as one single-quoted word that lints clean, the job reads it
    back unchanged, and collective_net.py decides with it."""
    from lumi_scaffold.lint import shellcheck
    from lumi_scaffold.testing import plugin_catalogue, render_project, use_catalogue

    from .helpers import site_plugin, values

    fast, tcp = r"NET/OFI Selected [Pp]rovider is cxi(, fabric)?", r"NET/(Socket|IB)\b.*'\$[0-9]+'\?"
    data = copy.deepcopy(get_catalogue().sites["lumi"].model_dump())
    data.update(name="oddnet", title="Odd patterns (test data)", own_image_frameworks="all")
    data["rccl_check"] = {**data["rccl_check"], "fast": fast, "tcp": tcp}
    with use_catalogue(plugin_catalogue(site_plugin("lumi-site-oddnet", Site.model_validate(data)))):
        project = render_project(template, tmp_path / "p", {
            "project_name": "demo", "site": "oddnet", "account": "project_465000000", "framework": "pytorch", "nodes": 2,
            "container": "custom", "container_path": "/project/containers/custom.sif"})
    assert shellcheck([project / "scripts" / "values.sh"]) == []
    read = values(project)
    assert (read["net_check_fast"], read["net_check_tcp"]) == (fast, tcp)
    log = "NET/OFI Selected provider is cxi, fabric is cxi\nUsing network Libfabric\n"
    assert collective_net.verdict(log, fast, tcp, LUMI.final) == "fast"
    assert collective_net.verdict("NET/Socket x '$12'?\nUsing network Socket\n", fast, tcp, LUMI.final) == "tcp"


def test_lumi_reference_is_the_reframe_check():
    """LUMI's ReFrame check: all_reduce_perf -b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5
    -d half, in-place busbw (the row's last but one field) [RF-RCCL]."""
    assert collective_net.options(REF.benchmark_args) == collective_net.options(
        "-b 2M -e 2048M -f 2 -g 1 -d half -n 80 -w 5 -z 1 -t 1 -R 1".split())
    assert REF.column == "in-place"


def test_preflight_finds_rccl_tests_in_usr_libexec_before_the_path(template, tmp_path):
    """The LUMI preflight's own probe command (scripts/lib/preflight.sh, with the places of
    scripts/values.sh), run where /usr/libexec holds rccl-tests as LAIF images install it
    [LAIF-R], and where only PATH has one: libexec first. (A private mount namespace puts the
    stand-in over /usr/libexec; root only.)"""
    from .helpers import render

    project = render(template, tmp_path / "p", nodes=2)
    script = (project / "scripts/lib/preflight.sh").read_text()
    probe = re.search(r"bash -c '([^']*command -v[^']*)' bash \"\$\{preflight_all_reduce_perf\[@\]\}\"", script)
    assert probe, script
    places = re.search(r"^preflight_all_reduce_perf=\((.*)\)$", (project / "scripts/values.sh").read_text(), re.M)
    places = re.findall(r"'([^']*)'", places.group(1))
    assert places == ["/usr/libexec/rccl-tests/all_reduce_perf", "all_reduce_perf"]
    libexec = tmp_path / "libexec" / "rccl-tests"
    bindir = tmp_path / "bin"
    for where in (libexec, bindir):
        where.mkdir(parents=True)
        (where / "all_reduce_perf").write_text("#!/bin/sh\n")
        (where / "all_reduce_perf").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    if not Path("/usr/libexec/rccl-tests/all_reduce_perf").exists():  # (this machine has none: PATH's)
        on_path = subprocess.run(["bash", "-c", probe.group(1), "bash", *places], env=env, capture_output=True, text=True)
        assert on_path.stdout == f"{bindir}/all_reduce_perf\n"
    both = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c",
                           f'mount --bind "{libexec.parent}" /usr/libexec && {probe.group(1)}', "bash", *places],
                          env=env, capture_output=True, text=True)
    if both.returncode != 0:
        pytest.skip(f"no private mount namespace here: {both.stderr.strip()}")
    assert both.stdout == "/usr/libexec/rccl-tests/all_reduce_perf\n"


def test_a_reference_measured_in_an_image_is_written_for_the_preflight(template, tmp_path, monkeypatch):
    """A site whose figure was measured in one of its images, with settings: values.sh holds
    both for the preflight's verdict, and says so; bad data is refused naming the field."""
    from pydantic import ValidationError

    from .helpers import render, values

    cat = get_catalogue()
    data = copy.deepcopy(cat.sites["lumi"].model_dump())
    data["allreduce_reference"].update(image="lumi-multitorch-x.sif", env={"NCCL_NET_GDR_LEVEL": "3"})
    monkeypatch.setitem(cat.sites, "lumi", Site.model_validate(data))
    project = render(template, tmp_path / "p", nodes=2)
    got = values(project)
    assert (got["preflight_reference_image"], got["preflight_reference_env"]) == ("lumi-multitorch-x.sif",
                                                                                  ["NCCL_NET_GDR_LEVEL=3"])
    assert "2 nodes, in the image lumi-multitorch-x.sif, with its settings)," in (project / "scripts/values.sh").read_text()
    for field, bad, said in (("image", "/appl/x.sif", "the image's file name only"),
                             ("env", {"NCCL_NET_GDR_LEVEL": "3; rm -rf ~"}, "a plain value only")):
        wrong = copy.deepcopy(data)
        wrong["allreduce_reference"][field] = bad
        with pytest.raises(ValidationError, match=said):
            Site.model_validate(wrong)
