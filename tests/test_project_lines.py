"""Issue 45, "Lines of the generated projects": each line as a LUMI support engineer found it
wrong, asserted as fixed through the files a project gets (and, where the behaviour needs
it, by running them: bash only, no Slurm)."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from lumi_scaffold import cli, doctor, lint, plugins
from lumi_scaffold.answers import read_answers
from lumi_scaffold.explain import explain_project
from lumi_scaffold.plugin_data import validate_plugin_data
from lumi_scaffold.jobs import PRESTAGE_MEMORY_PERCENT

from .helpers import render, values

RDZV = ("FI_CXI_RDZV_PROTO", "FI_CXI_RDZV_EAGER_SIZE", "FI_CXI_RDZV_THRESHOLD", "FI_CXI_RDZV_GET_MIN")


def test_the_rendezvous_settings_go_together_or_not_at_all(template, tmp_path):
    """HPE's RCCL guide uses FI_CXI_RDZV_GET_MIN=0 with FI_CXI_RDZV_PROTO=alt_read, which needs
    --network=disable_rdzv_get (UNCONFIRMED on LUMI): every site sets the four together or none."""
    for name, site in plugins.get_catalogue().sites.items():
        scopes = {e.name: e.scope for e in site.env if e.name in RDZV}
        assert not scopes or (set(scopes) == set(RDZV) and len({s == "off" for s in scopes.values()}) == 1), \
            (name, scopes)
    project = render(template, tmp_path / "p", nodes=2)
    assert not [s for s in values(project)["image_env"] if s.startswith("FI_CXI_RDZV")]
    text = (project / "scripts/values.sh").read_text()
    for name in RDZV:
        assert f"# (not set) {name}=" in text
    assert "[WS-2026, HPE-RCCL]" in text


def _bash(project, script, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "LD_", "NCCL_", "OUTPUT_ROOT"))}
    return subprocess.run(["bash", "-c", script], cwd=project, env={**clean, "SIF": "/x.sif", "USER": "u1", **env},
                          capture_output=True, text=True, timeout=60)


# A `module` that reads LD_LIBRARY_PATH and LD_PRELOAD unguarded, as Lmod 9.2's does (TACC/Lmod#835):
# under `set -u` with them unset, it fails as Lmod does.
LMOD_92 = r"""
module() {
    : "${LD_LIBRARY_PATH}${LD_PRELOAD}"
    printf '%s\n' "$*" >>"${MODULE_CALLS}"
    [ "$1" != load ] || [ "$2" != missing ]
}
"""


def test_modules_load_under_the_job_files_nounset_and_it_stays_on(template, tmp_path):
    project = render(template, tmp_path / "p")
    calls = tmp_path / "calls"
    script = LMOD_92 + ('unset LD_LIBRARY_PATH LD_PRELOAD; set -euo pipefail; source scripts/lib/job.sh; '
                        'case $- in *u*) echo nounset-on ;; esac; echo "${UNSET_VARIABLE}"')
    result = _bash(project, script, MODULE_CALLS=str(calls))
    assert result.returncode != 0 and "nounset-on" in result.stdout, result.stderr  # (set -u is back)
    assert "UNSET_VARIABLE: unbound variable" in result.stderr and "LD_LIBRARY_PATH" not in result.stderr
    assert calls.read_text().splitlines()[0] == "purge" and "load lumi-aif-singularity-bindings" in calls.read_text()
    # A module that fails still stops the job, with its status.
    failing = LMOD_92 + 'set -euo pipefail; modules=(); source scripts/lib/values-lib.sh; lmod load missing; echo on'
    result = _bash(project, failing, MODULE_CALLS=str(calls))
    assert result.returncode == 1 and "on" not in result.stdout.split()


def test_large_and_many_job_files_go_under_the_output_root(template, tmp_path):
    """RCCL's debug files, the heartbeats and the profiles go under the output root (on LUMI
    scratch), not into the project directory on /project (50 GB) [UG-stor]; Slurm's logs stay."""
    project = render(template, tmp_path / "p", nodes=2, profiler="rocprofv3")
    out = tmp_path / "out"
    result = _bash(project, 'module() { :; }; set -euo pipefail; source scripts/lib/job.sh; echo "${LUMI_SCAFFOLD_LOG_DIR}"',
                   OUTPUT_ROOT=str(out))
    assert result.stdout.strip() == f"{out}/logs", result.stderr
    rank = subprocess.run(["scripts/lib/run.sh", "bash", "-c", 'echo "${NCCL_DEBUG_FILE}"'], cwd=project, text=True,
                          capture_output=True, env={**os.environ, "USER": "u1", "SLURM_JOB_ID": "42", "SLURM_PROCID": "3",
                                                    "RCCL_DEBUG_FILES": "1", "LUMI_SCAFFOLD_LOG_DIR": f"{out}/logs"})
    assert rank.stdout.splitlines()[-1] == f"{out}/logs/rccl-42-rank3.txt" and (out / "logs").is_dir(), rank.stderr
    job = (project / "scripts/lib/job.sh").read_text()
    assert 'LUMI_SCAFFOLD_HEARTBEAT_DIR="${LUMI_SCAFFOLD_LOG_DIR}/heartbeat-${SLURM_JOB_ID}"' in job
    assert 'PROFILE_DIR="${OUTPUT_ROOT}/profiles/${name}"' in job and "${PROJECT_DIR}/profiles" not in job
    assert "#SBATCH --output=logs/%x-%j.out" in (project / "jobs/train.sbatch").read_text()
    readme = (project / "README.md").read_text()
    root = values(project)["output_root"]
    assert f"`{root}/profiles/<jobid>/rank-0/`" in readme and f"`{root}/logs/rccl-<jobid>-rank<rank>.txt`" in readme


def _prestage(project, tmp_path, mem_mb):
    """scripts/lib/prestage.sh for an archive of 1000 KiB, in a job with mem_mb MiB per node."""
    payload = tmp_path / "payload"
    payload.mkdir(exist_ok=True)
    (payload / "x.bin").write_bytes(b"\0" * 1000 * 1024)
    archive = tmp_path / "d.tar"
    subprocess.run(["tar", "-C", str(payload), "-cf", str(archive), "x.bin"], check=True)
    stage = tmp_path / f"stage-{mem_mb}"
    return subprocess.run(["bash", "scripts/lib/prestage.sh"], cwd=project, capture_output=True, text=True,
                          env={**os.environ, "DATASET_ARCHIVE": str(archive), "NODE_TMP": str(tmp_path),
                               "STAGE_DIR": str(stage), "SLURM_MEM_PER_NODE": str(mem_mb)})


def test_pre_staging_has_one_budget_that_the_job_and_explain_share(template, tmp_path):
    project = render(template, tmp_path / "p", nodes=2, prestage=True, dataset_archive="/scratch/project_465000000/d.tar")
    assert values(project)["prestage_memory_percent"] == str(PRESTAGE_MEMORY_PERCENT) == "75"
    refused = _prestage(project, tmp_path, 1)   # 768 KiB of 1 MiB may be filled: 1000 KiB does not fit
    assert refused.returncode == 1 and "the job may use 0 MiB (75%) of its memory for it" in refused.stderr
    fits = _prestage(project, tmp_path, 2)      # 1536 KiB
    assert fits.returncode == 0 and (tmp_path / "stage-2/data/x.bin").is_file(), fits.stderr
    report = explain_project(project)["prestage"]
    assert report["budget_gb"] == 480 * 0.75 and report["why"].startswith("75% of the job's memory on each node")
    # On small-g's shared nodes the smaller of the two: 75% of one GCD's 60 GB, or the partition's 64 GB.
    one = render(template, tmp_path / "one", partition="small-g", gpus_per_node=1, prestage=True,
                 dataset_archive="/scratch/project_465000000/d.tar")
    assert explain_project(one)["prestage"]["budget_gb"] == 45
    four = render(template, tmp_path / "four", partition="small-g", gpus_per_node=4, prestage=True,
                  dataset_archive="/scratch/project_465000000/d.tar")
    shared = explain_project(four)["prestage"]
    assert (shared["budget_gb"], shared["why"]) == (64, "the partition's limit for a job on a shared node")


def test_the_archive_every_node_reads_is_named_with_striping(template, tmp_path):
    project = render(template, tmp_path / "p", nodes=2, prestage=True, dataset_archive="/scratch/project_465000000/d.tar")
    readme = (project / "README.md").read_text()
    assert ("`/scratch/project_465000000/d.tar`: every node reads the archive at once: stripe it over the file "
            "system's storage targets before writing it, e.g. lfs setstripe --stripe-count 32") in readme
    assert "[AIG-04, TM-Lustre]." in readme and "- **TM-Lustre**: [LUMI training" in readme
    line = explain_project(project)["prestage"]["archive"]
    assert line.startswith("/scratch/project_465000000/d.tar: every node reads") and line.endswith("[AIG-04, TM-Lustre]")
    assert "striping" in (project / "scripts/lib/prestage.sh").read_text()
    assert "lfs setstripe" not in (render(template, tmp_path / "q") / "README.md").read_text()


def test_a_partition_that_refuses_sweeps_says_so_in_the_sweep_file_and_doctor(template, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    monkeypatch.setattr(lint, "lint_project", lambda *args: [])   # (shellcheck is tested elsewhere)
    dev = render(template, tmp_path / "dev", partition="dev-g")
    head = (dev / "jobs/sweep.sbatch").read_text().split("#SBATCH")[0]
    assert f"# {values(dev)['sweep_refused']}.\n" in head
    assert "sweep.py submit" not in head and "CHAIN" not in head and "refuse to run on dev-g" in head
    cli.main(["doctor", str(dev)])
    assert (f"note: jobs/sweep.sbatch: {values(dev)['sweep_refused']}; it and scripts/sweep.py refuse to run there. "
            "Fix: sweep on another partition (lumi-scaffold update -d partition=<name>)") in capsys.readouterr().out
    std = render(template, tmp_path / "std")
    assert "CHAIN=N python3 scripts/sweep.py submit" in (std / "jobs/sweep.sbatch").read_text()
    answers = read_answers(std)
    assert doctor.sweep_note(std, validate_plugin_data(answers["plugin_data"])) is None


def test_a_jax_cotainr_image_gets_jax(template, tmp_path):
    project = render(template, tmp_path / "p", framework="jax", container="cotainr")
    env = yaml.safe_load((project / "container/environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "jax[rocm7-local]" in pip and not [p for p in pip if p.startswith("--extra-index-url")]
    assert "[WS-06-jax]" in (project / "container/environment.yml").read_text()
    assert values(project)["venv_framework"] == ["jax", "jaxlib"]


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_cotainr_project_keeps_its_packages_in_the_image(template, tmp_path, nodes):
    project = render(template, tmp_path / "p", container="cotainr", nodes=nodes)
    readme = (project / "README.md").read_text()
    assert "Create the venv" not in readme and "## 3. Smoke test" in readme
    assert ("Your packages belong in the image, not in a venv: add them to `container/environment.yml`" in readme
            and "`bash container/build.sh` again [WS-06-2026]" in readme)
    assert (project / "requirements.txt").read_text().startswith(
        "# This project's packages belong in its image: add them to container/environment.yml")
    # The wheel's own RCCL: fine on one node; before several, the preflight and the workaround.
    assert "PyTorch's wheels from `https://download.pytorch.org/whl/rocm7.0` bring an RCCL of their own" in readme
    assert 'LD_PRELOAD="/usr/lib/libfabric.so.1 /opt/rocm/lib/librccl.so.1"' in readme and "[LAIF-I18]" in readme
    preflight = "`ALL_REDUCE_PERF=none sbatch jobs/preflight.sbatch`"
    assert preflight in readme and ("`lumi-scaffold update -d nodes=<N>`" in readme) == (nodes == 1)
    assert ". Create the venv\n" in (render(template, tmp_path / "q") / "README.md").read_text()
