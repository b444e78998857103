"""scripts/lib/python/runlog.py with the trackers' own packages: experiment tracking, read back
with each tracker's own reader, and the job report as lumi-scaffold reads and bills it. The
module is run as a job's rank 0 runs it, by the driver of the project's own tests
(project-templates/project/tests/test_runlog.py, which test the job report with the
standard library only). The examples on the local Slurm: tests/test_slurm_jobs.py."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import PROJECT, load_module

RUNLOG_DIR = PROJECT / "scripts/lib/python"
project_tests = load_module("project_tests_runlog", PROJECT / "tests/test_runlog.py")
# The trackers write under the run; W&B offline and quiet, MLflow into a file store.
TRACKERS_ENV = {"WANDB_SILENT": "true", "MLFLOW_ALLOW_FILE_STORE": "true", "WANDB_MODE": "offline",
                "WANDB_X_DISABLE_STATS": "true"}


def run_driver(tmp_path: Path, start: int, stop: int, kill: int = 0, job: str = "7", **env: str):
    env = {**TRACKERS_ENV, "MLFLOW_TRACKING_URI": str(tmp_path / "mlruns"), **env}
    return project_tests.run_driver(RUNLOG_DIR, tmp_path, start, stop, kill, job, **env)


# ------------------------------------------------------------------ readers, one per tracker


def tensorboard_steps(run: Path) -> list[int]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    return [e.step for e in events.Scalars("loss")]


def mlflow_steps(store: Path) -> list[int]:
    """The logged steps of the one run of experiment demo in a file store."""
    from mlflow.tracking import MlflowClient

    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    client = MlflowClient(str(store))
    runs = client.search_runs([client.get_experiment_by_name("demo").experiment_id])
    assert len(runs) == 1, [r.info.run_id for r in runs]  # one run across the jobs
    return [m.step for m in sorted(client.get_metric_history(runs[0].info.run_id, "loss"), key=lambda m: m.timestamp)]


def mlflow_runs_tagged(store: Path, sweep: str) -> list[str]:
    """The names of experiment demo's runs tagged with a sweep's name."""
    from mlflow.tracking import MlflowClient

    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    client = MlflowClient(str(store))
    runs = client.search_runs([client.get_experiment_by_name("demo").experiment_id], f"tags.sweep = '{sweep}'")
    return sorted(r.info.run_name for r in runs)


def wandb_records(path: Path):
    """The records of a W&B offline run file (LevelDB's log format: 32 KiB blocks of chunks
    with a 7-byte header; the file starts with W&B's own 7-byte header), as protobufs."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", path
    offset, pending = 7, b""
    while offset + 7 <= len(data):
        block_left = 32768 - offset % 32768
        if block_left < 7:
            offset += block_left
            continue
        length, kind = struct.unpack("<HB", data[offset + 4:offset + 7])
        chunk = data[offset + 7:offset + 7 + length]
        offset += 7 + length
        if kind == 0 and length == 0:
            continue
        pending += chunk
        if kind in (1, 4):  # a full record, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def wandb_steps(run: Path) -> list[int]:
    steps, ids = [], set()
    for path in sorted((run / "wandb").glob("offline-run-*/run-*.wandb")):
        for record in wandb_records(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                ids.add(record.run.run_id)
            elif kind == "history" and any((item.key or "/".join(item.nested_key)) == "loss" for item in record.history.item):
                steps.append(record.history.step.num)
    assert len(ids) == 1, ids  # one run id across the jobs
    return steps


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("tracker", ["tensorboard", "mlflow", "wandb"])
def test_a_resumed_run_is_one_tracked_run_with_every_step_once(tmp_path, tracker):
    """Job 1 logs steps 5..25 and ends at step 27 (its last checkpoint: step 20); job 2
    resumes from step 20 to 40. One run; every 5th step logged once, none twice."""
    first = run_driver(tmp_path, 0, 40, kill=27, job="11", LUMI_SCAFFOLD_TRACKING=tracker)
    assert first.returncode == 143, first.stderr
    assert json.loads((tmp_path / "run/tracking.json").read_text())["logged_to"] == 25
    second = run_driver(tmp_path, 20, 40, job="12", LUMI_SCAFFOLD_TRACKING=tracker)
    assert second.returncode == 0, second.stderr
    steps = {"tensorboard": lambda: tensorboard_steps(tmp_path / "run"), "mlflow": lambda: mlflow_steps(tmp_path / "mlruns"),
             "wandb": lambda: wandb_steps(tmp_path / "run")}[tracker]()
    assert steps == list(range(5, 41, 5)), steps


METRICS = {"loss", "lr", "samples_per_s", "step_time_s", "peak_memory_gb"}


def tracked(tracker: str, tmp_path: Path) -> tuple[dict[str, list[int]], dict[str, str]]:
    """Each metric's logged steps and the run's config, as the tracker's own reader gives them."""
    if tracker == "tensorboard":
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        events = EventAccumulator(str(tmp_path / "run/tensorboard"))
        events.Reload()
        metrics = {tag: [e.step for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
        text = events.Tensors("config")[0].tensor_proto.string_val[0].decode()
        return metrics, {k: str(v) for k, v in json.loads(text).items()}
    if tracker == "mlflow":
        from mlflow.tracking import MlflowClient

        client = MlflowClient(str(tmp_path / "mlruns"))
        run = client.search_runs([client.get_experiment_by_name("demo").experiment_id])[0]
        return ({name: [m.step for m in client.get_metric_history(run.info.run_id, name)] for name in run.data.metrics},
                dict(run.data.params))
    metrics: dict[str, list[int]] = {}
    config: dict[str, str] = {}
    for path in (tmp_path / "run/wandb").glob("offline-run-*/run-*.wandb"):
        for record in wandb_records(path):
            kind = record.WhichOneof("record_type")
            if kind == "history":
                for item in record.history.item:
                    if not (item.key or "/".join(item.nested_key)).startswith("_"):
                        metrics.setdefault(item.key or "/".join(item.nested_key), []).append(record.history.step.num)
            elif kind == "config":
                config |= {item.key: item.value_json for item in record.config.update}
            elif kind == "run":
                config |= {item.key: item.value_json for item in record.run.config.update}
    return metrics, {k: json.loads(v).get("value", v) if v.startswith("{") else json.loads(v) for k, v in config.items()
                     if not k.startswith("_")}


@pytest.mark.parametrize("tracker", ["tensorboard", "mlflow", "wandb"])
def test_every_metric_and_the_config_are_tracked(tmp_path, tracker, monkeypatch):
    """Loss, learning rate, samples/s, step time and peak device memory every 5th step, and
    the run's config (the answers and train.py's arguments)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # (MLflow's reader, as the jobs set it)
    result = run_driver(tmp_path, 0, 10, LUMI_SCAFFOLD_TRACKING=tracker)
    assert result.returncode == 0, result.stderr
    metrics, config = tracked(tracker, tmp_path)
    assert {name: steps for name, steps in metrics.items() if name in METRICS} == {name: [5, 10] for name in METRICS}
    assert str(config["steps"]) == "10" and str(config["lr"]) == "0.1", config


def test_wandb_online_without_a_key_is_one_line_at_start(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # (no ~/.netrc from `wandb login`)
    result = run_driver(tmp_path, 0, 10, LUMI_SCAFFOLD_TRACKING="wandb", WANDB_MODE="online", WANDB_API_KEY="")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("tracking: WANDB_MODE=online needs your W&B API key") and result.stderr.count("\n") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("nodes", [1, 2])
def test_the_job_bills_each_node_slurm_gave_it(template, tmp_path, nodes):
    """report_job exports one node's rate as the job file asks for it (billing_train in
    values.sh: explain's rate over the file's nodes): the report bills the file's own shape at explain's rate, and a job
    given more nodes on sbatch's command line (SLURM_JOB_NUM_NODES) in proportion."""
    from lumi_scaffold.explain import explain_project

    from .helpers import render

    project = render(template, tmp_path / "p", nodes=nodes)
    rate = next(j for j in explain_project(project)["jobs"] if j["kind"] == "train")["billed_per_hour"]
    script = ('source scripts/values.sh; eval "$(sed -n \'/^report_job() {/,/^}/p\' scripts/lib/job.sh)"; '
              'PROJECT_DIR=$PWD report_job train; '
              'echo "$LUMI_SCAFFOLD_BILLING_PER_NODE $LUMI_SCAFFOLD_BILLING_UNIT"')
    exported = subprocess.run(["bash", "-c", script], cwd=project, capture_output=True, text=True, check=True).stdout.split(" ", 1)
    assert float(exported[0]) * nodes == rate and exported[1] == "GPU-hours\n", (exported, rate)
    for given in (nodes, 4):
        out = tmp_path / f"out-{given}"
        out.mkdir()
        result = run_driver(out, 0, 5, LUMI_SCAFFOLD_BILLING_PER_NODE=exported[0], SLURM_JOB_NUM_NODES=str(given),
                            LUMI_SCAFFOLD_BILLING_UNIT="GPU-hours", LUMI_SCAFFOLD_TRACKING="none")
        assert result.returncode == 0, result.stderr
        report = json.loads((out / "run/reports/7.json").read_text())
        assert report["billing"]["per_hour"] == pytest.approx(rate * given / nodes), report["billing"]


def test_explain_runs_lists_each_runs_jobs_from_their_reports(template, tmp_path, capsys):
    """Two jobs of one run (the first ended at step 27 by SIGTERM, the second resumed from
    step 20), as `lumi-scaffold explain --runs` shows them: a row per job, a total per run."""
    from lumi_scaffold.cli import main

    from .helpers import render

    project = render(template, tmp_path / "p")
    out = tmp_path / "outputs"
    out.mkdir()
    for args in ((0, 40, 27, "21"), (20, 40, 0, "22")):
        run_driver(out, *args[:3], job=args[3], LUMI_SCAFFOLD_BILLING_PER_NODE="4", LUMI_SCAFFOLD_BILLING_UNIT="GPU-hours",
                   LUMI_SCAFFOLD_JOB_START=str(int(__import__("time").time()) - 90), LUMI_SCAFFOLD_TRACKING="none")
    assert main(["explain", "--runs", "--output-root", str(out), str(project)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == f"Runs in {out}:"
    total = next(line for line in text if line.startswith("run: 2 job(s)"))
    assert "step 40, 47 steps trained" in total, total  # 27 + 20
    rows = [line.split() for line in text if line.startswith("  2")]
    assert [(r[0], r[2], r[3]) for r in rows] == [("21", "stopped", "1-27"), ("22", "finished", "21-40")], rows
    assert main(["explain", "--runs", "--json", "--output-root", str(out), str(project)]) == 0
    runs = json.loads(capsys.readouterr().out)
    billed = [j["billing"]["billed"] for j in runs[0]["jobs"]]
    assert runs[0]["billed"] == pytest.approx(sum(billed), abs=1e-3) and all(0.09 < b < 0.11 for b in billed), billed


def test_the_sweep_script_is_python_3_6(template, tmp_path):
    """scripts/sweep.py runs on the login node with the OS's python3 (its version is not
    ours to choose): it and the helpers it imports (the report reader, the values reader) use
    the standard library only, nothing newer than Python 3.6's grammar."""
    import ast

    from .helpers import render

    scripts = render(template, tmp_path / "p") / "scripts"
    for name in ("sweep.py", "lib/reports.py", "lib/project_values.py", "lib/python/jobfiles.py"):
        tree = ast.parse((scripts / name).read_text(), feature_version=(3, 6))
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        ours = {"sweep.py": {"project_values", "reports"}, "lib/reports.py": {"jobfiles"}}.get(name, set())
        assert imported - ours <= set(sys.stdlib_module_names) and "__future__" not in imported, (name, imported)


def cells(line: str) -> list[str]:
    """The cells of a table's row (its columns are two spaces or more apart)."""
    return re.split(r" {2,}", line)


def test_the_sweep_summary_and_explain_runs_read_the_reports_alike(template, tmp_path, capsys):
    """scripts/sweep.py summary and `lumi-scaffold explain --runs` read the trials' reports with
    the same scripts/lib/reports.py: one row per trial, its totals those of explain's run. A
    report being written (its .json.tmp) and a file there that is no report are left out."""
    from lumi_scaffold.cli import main

    from .helpers import render

    project = render(template, tmp_path / "p")
    out = tmp_path / "outputs"
    start = str(int(__import__("time").time()) - 90)
    for run, args, job in (("example-001", (0, 30, 20), "41"), ("example-001", (10, 30, 0), "42"),
                           ("example-003", (0, 15, 0), "43")):
        result = run_driver(tmp_path, *args, job=job, OUT=str(out / run), RUN_NAME=run, LUMI_SCAFFOLD_SWEEP="example",
                            LUMI_SCAFFOLD_BILLING_PER_NODE="4", LUMI_SCAFFOLD_BILLING_UNIT="GPU-hours",
                            LUMI_SCAFFOLD_JOB_START=start, LUMI_SCAFFOLD_TRACKING="none")
        assert result.returncode in (0, 143), result.stderr
    reports = out / "example-003" / "reports"
    (reports / "44.json.tmp").write_text((reports / "43.json").read_text())
    (reports / "notes.json").write_text("[1, 2]\n")
    summary = subprocess.run([sys.executable, "scripts/sweep.py", "summary", "sweeps/example.txt"], cwd=project,
                             env={**os.environ, "OUTPUT_ROOT": str(out)}, capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert lines[0] == f"sweep example in {out}:" and cells(lines[3])[-5:] == ["-", "-", "not run yet", "-", "-"], lines
    assert main(["explain", "--runs", "--json", "--output-root", str(out), str(project)]) == 0
    runs = {r["run"]: r for r in json.loads(capsys.readouterr().out)}
    assert [len(runs[r]["jobs"]) for r in ("example-001", "example-003")] == [2, 1], runs
    for line, run in ((lines[2], runs["example-001"]), (lines[4], runs["example-003"])):
        row = cells(line)
        seconds = run["seconds"]
        wall = f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}"
        assert row[-5:] == [f"{run['loss']['last']:.4g}", f"{run['loss']['best']:.4g}", str(run["last_step"]), wall,
                            f"{run['billed']:g}"], (line, run)
    assert runs["example-001"]["last_step"] == 30 and runs["example-001"]["steps"] == 40  # 20 + 20


def _new_mlflow_run(tmp_path: Path, monkeypatch, module: str):
    """A new run of the project's runlog (loaded afresh as ``module``) with the MLflow tracker."""
    import mlflow

    monkeypatch.syspath_prepend(str(RUNLOG_DIR))  # (runlog imports jobfiles beside it)
    runlog = load_module(module, RUNLOG_DIR / "runlog.py")
    runlog.MLflow.load()
    try:
        return runlog.Tracker.open("mlflow", str(tmp_path / "run"), {"lr": 0.1})
    finally:
        mlflow.end_run()


def test_a_run_whose_experiment_another_process_made_meanwhile_lands_in_that_experiment(tmp_path, monkeypatch):
    """Sweep trials (or the ranks of chained jobs) that start together on a new MLflow store:
    one makes the experiment between another's look-up and that one's own create. MLflow's
    set_experiment then returns the experiment without making it the active one (3.17,
    fluent.set_experiment), and a run started after it went to "Default" (seen with two trials
    at once). Here the look-up answers "none" once, after the experiment was made."""
    from mlflow.tracking import MlflowClient
    from mlflow.tracking._tracking_service.client import TrackingServiceClient

    store = tmp_path / "mlruns"
    for name, value in {**TRACKERS_ENV, "MLFLOW_TRACKING_URI": str(store), "LUMI_SCAFFOLD_PROJECT": "demo"}.items():
        monkeypatch.setenv(name, value)
    MlflowClient(str(store)).create_experiment("demo")  # the other process's
    real, looked = TrackingServiceClient.get_experiment_by_name, []

    def before_the_other_made_it(self, name):
        looked.append(name)
        return None if len(looked) == 1 else real(self, name)

    monkeypatch.setattr(TrackingServiceClient, "get_experiment_by_name", before_the_other_made_it)
    tracker = _new_mlflow_run(tmp_path, monkeypatch, "runlog_experiment_race")
    client = MlflowClient(str(store))
    assert looked and [r.info.run_id for r in client.search_runs([client.get_experiment_by_name("demo").experiment_id])] \
        == [tracker.state["id"]]


def test_a_run_whose_experiment_another_process_made_twice_lands_in_the_oldest(tmp_path, monkeypatch):
    """Two sweep trials that start together on a new MLflow file store can each make the
    experiment (the store checks the name, then writes): two experiments of one name, and
    the trials' runs split between them (seen in CI, 2026-11-29: a sweep of three trials
    found two runs under the name). Here the other process's "demo" is the older; this
    process's set_experiment gets its own newer copy. The run goes to the older, the empty
    copy is removed, and the name finds the run."""
    import mlflow
    import yaml
    from mlflow.tracking import MlflowClient

    store = tmp_path / "mlruns"
    for name, value in {**TRACKERS_ENV, "MLFLOW_TRACKING_URI": str(store), "LUMI_SCAFFOLD_PROJECT": "demo"}.items():
        monkeypatch.setenv(name, value)
    client = MlflowClient(str(store))
    older = client.create_experiment("demo")  # the other process's
    time.sleep(0.01)
    newer = client.create_experiment("demo-copy")  # this process's, made at the same moment
    meta = store / newer / "meta.yaml"
    meta.write_text(yaml.safe_dump({**yaml.safe_load(meta.read_text()), "name": "demo"}))
    monkeypatch.setattr(mlflow, "set_experiment", lambda name: client.get_experiment(newer))
    tracker = _new_mlflow_run(tmp_path, monkeypatch, "runlog_experiment_twice")
    assert [r.info.run_id for r in client.search_runs([older])] == [tracker.state["id"]]
    assert client.get_experiment(newer).lifecycle_stage == "deleted"
    assert client.get_experiment_by_name("demo").experiment_id == older
