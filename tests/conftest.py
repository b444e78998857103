from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from lumi_scaffold import plugins
from lumi_scaffold.questions import TEST_SITES_ENV

from .helpers import template_copy

# The test-only `local` site (plugins/lumi-site-local) renders the projects that the Slurm
# tests run; it is offered only when asked for. Set here, at import, so that session
# fixtures and every subprocess (lumi-scaffold, copier, sbatch) see it too.
os.environ[TEST_SITES_ENV] = "1"

pytest_plugins = ["tests.slurm.fixtures"] if (Path(__file__).parent / "slurm" / "fixtures.py").exists() else []


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path_factory):
    """No user Copier settings, no plugin switches from the developer's shell."""
    settings = tmp_path_factory.getbasetemp() / "copier-settings.yml"
    settings.write_text("{}\n")
    monkeypatch.setenv("COPIER_SETTINGS_PATH", str(settings))
    monkeypatch.delenv(plugins.ENV_LOAD, raising=False)
    monkeypatch.setenv(TEST_SITES_ENV, "1")
    # The example plugins under plugins/ are tested in tests/test_plugin_packages.py and
    # their own tests; everywhere else the catalogue is the built-ins plus the local site.
    monkeypatch.setenv(plugins.ENV_DISABLE, "lumi-site-frontier,lumi-site-leonardo,lumi-framework-deepspeed")
    plugins.reset()
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "lumi-scaffold tests")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "tests@lumi-scaffold.invalid")


@pytest.fixture(scope="session")
def template(tmp_path_factory) -> Path:
    return template_copy(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def git_template(tmp_path_factory) -> Path:
    """The template copy as a one-commit git repository: a project rendered from it records
    a template version (_src_path, _commit), as one from the checkout does, without Copier
    cloning the whole checkout for each render."""
    from .wheels import commit, git

    repo = template_copy(tmp_path_factory.mktemp("git-template"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    commit(repo, "the template")
    return repo


@pytest.fixture(scope="session")
def site_root(tmp_path_factory) -> Path:
    """A model of the LUMI paths that binds name (for the stand-in container; tests/jobs.py)."""
    from .jobs import make_site_root

    return make_site_root(tmp_path_factory.mktemp("lumi-site"))


@pytest.fixture(scope="session")
def time_limit_chains(slurm_cluster_timelimit, template, tmp_path_factory, site_root) -> dict:
    """Per framework, a time-limit chain of the example on the local site (tests/jobs.py,
    submit_time_limit_chain), for tests/test_own_script_jobs.py. Requested early
    (_OVERLAPPED): its jobs wait on Slurm's clock. JAX only where it is installed (CI
    requires it)."""
    from .jobs import submit_time_limit_chain
    from .slurm.fixtures import slurm_required

    chains = {}
    for framework in ("pytorch", "jax"):
        if framework == "jax" and not slurm_required() and importlib.util.find_spec("jax") is None:
            continue  # (find_spec: the ranks import JAX, not this worker)
        answers = {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2, "framework": framework}
        chains[framework] = submit_time_limit_chain(slurm_cluster_timelimit, template,
                                                    tmp_path_factory.mktemp(f"time-limit-{framework}"), site_root, answers)
    return chains


@pytest.fixture(scope="session")
def default_limit_hangs(slurm_cluster_timelimit, template, tmp_path_factory, site_root) -> dict:
    """The hung jobs of tests/test_guard_jobs.py with the default limits of a 10-minute job.
    Requested early (_OVERLAPPED): they wait on the watchdog's minutes."""
    from .test_guard_jobs import submit_default_limit_hangs

    return submit_default_limit_hangs(slurm_cluster_timelimit, template, tmp_path_factory.mktemp("default-limits"),
                                      site_root)


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> tuple[Path, Path]:
    """A small dataset as a directory of .npz shards and as a .tar of them (tests/jobs.py)."""
    from .jobs import make_dataset

    return make_dataset(tmp_path_factory.mktemp("dataset"))


@pytest.fixture
def fake_site_packages(tmp_path, monkeypatch):
    """A directory on sys.path for fake plugin distributions; the plugin cache is reset around it."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    plugins.reset()
    yield site
    for name in [m for m in sys.modules if m.startswith("fakeplug")]:
        del sys.modules[name]
    plugins.reset()


# The suite runs on three xdist workers on the 2 cores (pyproject.toml's addopts: -n 3
# --dist loadgroup). Tests on the local Slurm run in two groups, each in collection order on
# clusters of its own (the harness keeps their ports and job ids apart);
# the tests that build the wheel share one session build: a third group. xdist hands the
# largest groups out first, one to each worker (slurm-b, slurm-a, wheel), then single
# tests to whichever worker is free. The Slurm groups alone keep the 2 cores about 60%
# busy (jobs starting, the watchdog's limits, the time-limit jobs: 2026-11-29, 564 CPU-s
# in 492 s), so the third worker's tests fill the rest from the start instead of queuing
# behind them (on this machine: 17:09 with two workers; 15:11 with three and the same
# day's cuts, 96% of both cores busy: docs/performance.md). A module stays in one group (module
# fixtures such as the behaviour matrix's jobs run once); _SLURM_A is about half the Slurm
# tests' time as measured on 2 cores (test_slurm_jobs 300 s; the rest of A about 170 s, of
# B about 500 s), and every other module (a new one included) goes to B. tryfirst:
# xdist's own hook (on each worker) turns the xdist_group marks into the "@group" suffix
# of the node ids it sends for scheduling; it must see the marks we add.
#
# Modules kept on one worker, by the group each is in: the wheel's, and modules whose tests
# share a costly module fixture (xdist builds a module fixture once on each worker that
# runs one of the module's tests). DeepSpeed's `trained` runs the example three times
# (~35 CPU-s: DeepSpeed's import alone is 5 CPU-s a run); its two tests landed on two
# workers and paid it twice.
_GROUPS = {"test_install": "wheel", "test_packaging": "wheel", "test_bundle": "wheel",
           "test_deepspeed_framework": "deepspeed"}
_SLURM_A = {"test_slurm_jobs", "test_fault_model_jobs", "test_preflight", "test_own_script_jobs", "test_job_nodes"}
# Tests whose jobs wait on Slurm's clock (a time limit, the warning before it), each with the
# session fixture that submits its jobs, on a cluster of their own (slurm_cluster_timelimit):
# they run in group A, whatever their module, last; the fixtures are requested in the
# group's first test, so the waits (60-95 s for the harness's job, two chained jobs for the
# examples) overlap the rest of the group instead of adding to it.
_OVERLAPPED = {
    "tests/test_slurm_harness.py::test_time_limit_kills_job": "time_limit_job",
    "tests/test_own_script_jobs.py::test_the_examples_save_at_the_time_limit_warning_and_the_next_job_resumes_there":
        "time_limit_chains",
    "tests/test_guard_jobs.py::test_with_no_limit_set_a_hang_ends_a_10_minute_job_within_3_minutes":
        "default_limit_hangs",
}
_SUBMIT_EARLY = pytest.StashKey[list]()


def _slurm_group(item) -> str:
    return "slurm-a" if _module(item) in _SLURM_A or item.nodeid.split("[")[0] in _OVERLAPPED else "slurm-b"


def _module(item) -> str:
    """The test module's own name (test_install), "" for an item outside a module."""
    return item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    slurm = []
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if item.get_closest_marker("slurm") or any(name.startswith("slurm_cluster") for name in fixtures):
            # A test on a Slurm cluster is a `slurm` test, marked or not: -m "not slurm" (the
            # README's fast tier) leaves it out, as it leaves out the marked ones.
            item.add_marker(pytest.mark.slurm)
            item.add_marker(pytest.mark.xdist_group(_slurm_group(item)))
            slurm.append(item)
        elif _module(item) in _GROUPS:
            item.add_marker(pytest.mark.xdist_group(_GROUPS[_module(item)]))
    last = [item for item in slurm if item.nodeid.split("[")[0] in _OVERLAPPED]
    if last and len(slurm) > len(last):
        for item in last:
            items.remove(item)
            items.append(item)
        config.stash[_SUBMIT_EARLY] = sorted({_OVERLAPPED[item.nodeid.split("[")[0]] for item in last})


@pytest.fixture(autouse=True)
def _overlapped_jobs_early(request):
    """In Slurm group A's first test, when overlapped tests run later: submit their jobs."""
    if not request.config.stash.get(_SUBMIT_EARLY, None):
        return
    if "slurm-a" not in [m.args[0] for m in request.node.iter_markers("xdist_group") if m.args]:
        return
    names, request.config.stash[_SUBMIT_EARLY] = request.config.stash[_SUBMIT_EARLY], []
    for name in names:
        try:
            request.getfixturevalue(name)
        except pytest.skip.Exception:
            pass  # no Slurm (or no JAX) here: the test skips (or fails under REQUIRE_SLURM) itself


