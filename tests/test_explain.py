"""`lumi-scaffold explain` and the billing rules behind it, against hand-computed cases
(LUMI's rules, lumi-facts.md §1.2 [UG-bill], [TM-Slurm])."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
import yaml

from lumi_scaffold import cli, plugins
from lumi_scaffold.explain import explain_project, format_report
from lumi_scaffold.models import BillingRule

from .helpers import render

FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"


def lumi_rule(partition: str) -> BillingRule:
    rule = plugins.get_catalogue().sites["lumi"].partition(partition).billing_rule
    assert rule is not None
    return rule


@pytest.mark.parametrize("partition,nodes,gpus,cores,mem,hours,expected", [
    ("small-g", 1, 1, 7, 60, 1, 0.5),      # 1 GCD, 7 cores, 60 GB for an hour: one slice
    ("small-g", 1, 1, 16, 60, 1, 1.0),     # 16 cores on 1 GCD: two slices of 8 cores
    ("small-g", 1, 1, 16, 256, 1, 2.0),    # the sheet's example: 256 GB is four slices
    ("dev-g", 1, 8, 56, 480, 1, 4.0),      # a whole node by resources: 8 GCDs
    ("standard-g", 2, 8, 56, 480, 2, 16.0),  # 2 whole nodes for 2 h at 4 per node-hour
], ids=["1gcd", "16cores", "256GB", "devg-node", "2-nodes-2h"])
def test_billing_rules_give_the_hand_computed_gpu_hours(partition, nodes, gpus, cores, mem, hours, expected):
    assert lumi_rule(partition).units_per_hour(nodes, gpus, cores, mem) * hours == expected


def test_a_rule_has_one_form():
    with pytest.raises(ValueError, match="one of them"):
        BillingRule(per_node_hour=4, per_slice_hour=0.5)
    with pytest.raises(ValueError, match="one of them"):
        BillingRule()


def job(report: dict, kind: str) -> dict:
    return next(j for j in report["jobs"] if j["kind"] == kind)


def test_one_gcd_on_small_g_for_an_hour_is_half_a_gpu_hour(template, tmp_path):
    project = render(template, tmp_path / "p", gpus_per_node=1, partition="small-g", walltime="01:00:00")
    report = explain_project(project)
    train = job(report, "train")
    assert (train["billed_per_hour"], train["billed_at_limit"], train["unit"]) == (0.5, 0.5, "GPU-hours")
    assert train["memory"] == "--mem-per-gpu=60G" and train["ranks"] == 1 and train["whole_node"] is False
    # Which GCD Slurm gives a job on part of a node is not known: no NUMA node is claimed.
    assert [r["numa"] for r in train["table"]] == [None]
    assert "NUMA nodes: depend on the GPUs Slurm gives the job" in format_report(report)
    assert "| Cost | 0.5 GPU-hours per training job" in (project / "README.md").read_text()


def test_two_standard_g_nodes_for_two_hours_are_sixteen_gpu_hours(template, tmp_path):
    project = render(template, tmp_path / "p", nodes=2, walltime="02:00:00", profiler="rocprofv3")
    report = explain_project(project)
    assert (job(report, "train")["billed_per_hour"], job(report, "train")["billed_at_limit"]) == (8.0, 16.0)
    assert (job(report, "profile")["billed_per_hour"], job(report, "profile")["billed_at_limit"]) == (8.0, round(8 / 3, 4))
    assert report["interactive"]["billed_per_hour"] == 8.0
    preflight = job(report, "preflight")  # the training shape for 15 minutes, one srun task per GPU
    assert (preflight["time_limit"], preflight["billed_at_limit"], preflight["ranks"]) == ("00:15:00", 2.0, 16)
    train = job(report, "train")
    assert len(train["table"]) == 16 and train["table"][12] == {
        "rank": 12, "node": 1, "local_rank": 4, "gpu": 4, "cpus": "1-7", "numa": 0, "nic": "GPUs 4,5"}
    smoke = job(report, "smoke")
    assert smoke["billed_per_hour"] == 0.5 and smoke["billed_at_limit"] == round(0.5 / 6, 4)
    text = format_report(report)
    assert "16 GPU-hours at the time limit, 8 per hour; rule: 4 GPU-hours per node-hour, whole nodes [UG-bill]" in text
    assert "  4     0     4      4    1-7        0     GPUs 4,5" in text and "ranks 8-15" in text
    # One Slingshot NIC per MI250X: its two GCDs share it; which hsn is not in the data [UG-lumig].
    assert [r["nic"] for r in train["table"][:8]] == ["GPUs 0,1"] * 2 + ["GPUs 2,3"] * 2 + ["GPUs 4,5"] * 2 + ["GPUs 6,7"] * 2
    assert ("  NIC: the GPUs that share the GPU's network interface; one Slingshot-11 NIC per MI250X (its two GCDs "
            "share it), interfaces hsn0-hsn3; which interface each MI250X has is not in the sources [UG-lumig, WS-09]") in text
    assert "NICs per GPU: not in the site's data" not in text
    # On part of a node the GCDs are Slurm's choice: no NIC is claimed.
    assert "NICs per GPU: depend on the GPUs Slurm gives the job" in text


def test_a_sweep_costs_a_training_job_per_trial(template, tmp_path):
    """2 standard-g nodes for 2 hours: 16 GPU-hours a trial; the example file's 3 trials and
    a 5-trial file of one's own (comments and empty lines are not trials) at the limit."""
    project = render(template, tmp_path / "p", nodes=2, walltime="02:00:00")
    (project / "sweeps/mine.txt").write_text("# lr\n--lr 1\n\n--lr 2\n--lr 3\n--lr 4\n  --lr 5\n")
    sweep = job(explain_project(project), "sweep")
    assert (sweep["billed_per_hour"], sweep["billed_at_limit"], sweep["ranks"], sweep["refused"]) == (8.0, 16.0, 16, "")
    assert sweep["sweeps"] == [{"file": "sweeps/example.txt", "trials": 3, "at_limit": 48.0},
                               {"file": "sweeps/mine.txt", "trials": 5, "at_limit": 80.0}]
    assert sweep["hang"]["with"] < sweep["hang"]["without"]  # (each trial runs jobs/train.sbatch, with its watchdog)
    text = format_report(explain_project(project))
    assert "billed per trial: 16 GPU-hours at the time limit" in text and "sweeps/mine.txt: 5 trial(s): 80 GPU-hours" in text


@pytest.mark.parametrize(("tracking", "line"), [
    ("none", "tracking: none; the job reports only (lumi-scaffold update -d tracking=<tensorboard|mlflow|wandb> adds a "
             "tracker)"),
    ("mlflow", "tracking: MLflow, one tracked run per run directory across the jobs that resume it, a file store in "
               'OUTPUT_ROOT/mlruns; to look at them: README.md, "Tracking with MLflow"'),
    ("wandb", "tracking: Weights & Biases, one tracked run per run directory across the jobs that resume it, W&B run "
              'files in RUN_DIR/wandb (offline unless WANDB_MODE=online); to look at them: README.md, "Tracking with '
              'Weights & Biases"'),
])
def test_explain_says_where_the_jobs_report_and_what_they_track(template, tmp_path, tracking, line):
    project = render(template, tmp_path / "p", tracking=tracking)
    report = explain_project(project)
    assert report["research"]["tracking"] == tracking
    lines = format_report(report).splitlines()
    assert line in lines
    assert ("job reports: /scratch/project_465000000/${USER}/demo/outputs/<run name>/reports/<job id>.json "
            "(lumi-scaffold explain --runs lists them)") in lines
    if tracking != "none":
        assert f"### {report['research']['readme']}\n" in (project / "README.md").read_text()
    # A project whose jobs write no reports (made before them, or its runlog.py removed) is not said to.
    (project / "scripts/lib/python/runlog.py").unlink()
    assert explain_project(project)["research"] is None
    assert not any(x.startswith(("job reports:", "tracking:")) for x in format_report(explain_project(project)).splitlines())


def test_dev_g_refuses_sweeps_and_explain_says_so(template, tmp_path):
    project = render(template, tmp_path / "p", partition="dev-g", gpus_per_node=2)
    why = ("dev-g takes no job arrays (the trials of a sweep would break its job limits); dev-g: Debugging and quick tests "
           "only (2 jobs, 1 running); abuse can suspend the account")
    assert job(explain_project(project), "sweep")["refused"] == why
    for command in (["python3", "scripts/sweep.py", "submit", "sweeps/example.txt"],
                    ["bash", "jobs/sweep.sbatch", "sweeps/example.txt"]):
        result = __import__("subprocess").run(command, cwd=project, capture_output=True, text=True,
                                              env={**__import__("os").environ, "SLURM_SUBMIT_DIR": str(project)})
        assert result.returncode == 2 - (command[0] == "python3"), result  # (sys.exit with a message: 1)
        assert result.stderr == f"sweep: {why}. Fix: sweep on another partition (lumi-scaffold update -d partition=<name>)\n"


def test_the_profile_job_has_its_own_short_time_limit(template, tmp_path):
    """4 nodes for 1 h: the training job is 16 GPU-hours at its limit; a 40-step profile gets
    00:20:00 (10 min to start, 15 s a step), 16/3 GPU-hours, shown by explain and the README."""
    project = render(template, tmp_path / "p", nodes=4, walltime="01:00:00", profiler="rocprofv3")
    report = explain_project(project)
    profile = job(report, "profile")
    assert (profile["time_limit"], profile["billed_at_limit"]) == ("00:20:00", 5.3333)
    assert "#SBATCH --time=00:20:00\n" in (project / "jobs/profile.sbatch").read_text()
    assert "#SBATCH --time=01:00:00\n" in (project / "jobs/train.sbatch").read_text()
    text = format_report(report)
    assert ("jobs/profile.sbatch (profile): 4 node(s) x 8 task(s), 32 rank(s), 7 CPUs per task, memory --mem=480G, "
            "time limit 00:20:00\n  billed: 5.3333 GPU-hours at the time limit, 16 per hour") in text
    readme = " ".join((project / "README.md").read_text().split())
    assert "sbatch jobs/profile.sbatch Its `COMMAND` is the training command with `--steps 40`" in readme
    assert "Its time limit, 00:20:00, is sized for 40 steps" in readme
    assert "at most 5.3333 GPU-hours" in readme
    # a training walltime shorter than that is the profile's limit too
    short = explain_project(render(template, tmp_path / "q", walltime="00:15:00", profiler="rocprofv3"))
    assert job(short, "profile")["time_limit"] == "00:15:00"


def test_a_hang_costs_the_whole_limit_without_the_watchdog_and_minutes_with_it(template, tmp_path):
    """4 standard-g nodes for 48 h: 768 GPU-hours when a hang holds them to the limit. With the
    job's limits (from a dry run of the job file: each a share of the 48 h, here at its cap)
    the worst case for a command that beats is a hang where the largest applies (PHASE_TIMEOUT,
    3600 s: the examples' first step and checkpoints are phases), noticed up to 67 s late (the
    heartbeat files' 60-s interval and 2 s, one 5-s look of the watchdog), plus 90 s to gather
    evidence and stop: 16 x 3757 / 3600; a command judged by its output alone: OUTPUT_TIMEOUT
    7200 s, one look, 90 s."""
    project = render(template, tmp_path / "p", nodes=4, walltime="2-00:00:00", profiler="rocprofv3")
    report = explain_project(project)
    hang = job(report, "train")["hang"]
    assert {k: v for k, v in hang.items() if k != "rows"} == {
        "watchdog": True, "startup_timeout": 1800, "progress_timeout": 1200, "phase_timeout": 3600,
        "output_timeout": 7200, "late": 67, "stop": 90, "seconds": 3757, "without": 768.0, "with": 16.6978,
        "limit_first": False, "unit": "GPU-hours", "output_seconds": 7295, "with_output": 32.4222,
        "output_limit_first": False}
    assert [(r["limit"], r["seconds"], r["cost"]) for r in hang["rows"]] == [
        ("STARTUP_TIMEOUT", 1957, 8.6978), ("PROGRESS_TIMEOUT", 1357, 6.0311), ("PHASE_TIMEOUT", 3757, 16.6978),
        ("OUTPUT_TIMEOUT", 7295, 32.4222)]
    # the profile job's own 00:20:00 limit: its limits are a share of it (the floors), and a
    # hang costs at most 180 + 2 x 4 s before the first heartbeat, and the rest
    profile = job(report, "profile")["hang"]
    assert (profile["startup_timeout"], profile["progress_timeout"], profile["phase_timeout"]) == (188, 60, 180), profile
    assert profile["with"] < profile["without"] and not profile["limit_first"], profile
    text = format_report(report)
    assert job(report, "smoke")["hang"] is None and job(report, "preflight")["hang"] is None
    assert ("  a hang costs up to 768 GPU-hours (the whole time limit) without the watchdog; with it, at most the limit "
            "that applies, up to 67 s to notice (heartbeat files' delay, one look) and up to 90 s to gather evidence "
            "and stop:\n"
            "    STARTUP_TIMEOUT   1800 s  before the first heartbeat               1957 s, 8.6978 GPU-hours\n"
            "    PROGRESS_TIMEOUT  1200 s  between heartbeats                       1357 s, 6.0311 GPU-hours\n"
            "    PHASE_TIMEOUT     3600 s  in a phase the command declared          3757 s, 16.6978 GPU-hours\n"
            "    OUTPUT_TIMEOUT    7200 s  a command without heartbeats, no output  7295 s, 32.4222 GPU-hours\n") in text
    # The step line the job prints, with the project's own command at its end.
    step = job(report, "train")["step"]
    assert step.startswith("srun --kill-on-bad-exit=1 ") and step.endswith(
        f" {project.resolve()}/scripts/lib/run.sh python -u src/demo/train.py"), step
    # Limits a user sets in the job file, as the job reads them: PROGRESS_TIMEOUT=6 rewrites
    # the files every 2 s (a third of it), the watchdog looks every second: 6 + (2 + 2 + 1) late.
    train = project / "jobs/train.sbatch"
    text = train.read_text()
    train.write_text(text.replace('\ntrain_job "$@"', '\nPROGRESS_TIMEOUT=6 STARTUP_TIMEOUT=8 PHASE_TIMEOUT=10\ntrain_job "$@"'))
    hang = job(explain_project(project), "train")["hang"]
    assert (hang["late"], hang["seconds"]) == (5, 10 + 5 + 90), hang
    train.write_text(text.replace('\ntrain_job "$@"', '\nPROGRESS_TIMEOUT=0\ntrain_job "$@"'))
    assert job(explain_project(project), "train")["hang"]["with"] is None
    assert "the whole time limit) without the watchdog; PROGRESS_TIMEOUT is 0 for this job" in format_report(
        explain_project(project))
    # A job file that fails in its dry run: no step line, and the reason.
    train.write_text(text.replace('\ntrain_job "$@"', '\nCOMMAND=()\ntrain_job "$@"'))
    train_report = job(explain_project(project), "train")
    assert train_report["step"] == "" and "COMMAND is empty" in train_report["step_error"], train_report


def test_torchrun_workers_bound_to_numa_nodes_are_shown_so(template, tmp_path):
    project = render(template, tmp_path / "p", launcher="torchrun")
    train = job(explain_project(project), "train")
    assert train["tasks_per_node"] == 1 and train["ranks"] == 8 and train["cpus_per_task"] == 56
    assert train["binding"] == ("torchrun binds each worker to cores of its own on its GPU's NUMA node, shared with no "
                                "other worker (--numa-binding=exclusive)")
    assert train["table"][0]["cpus"] == "its own share of NUMA 3"
    assert "shared with its node's other workers" not in format_report(explain_project(project))


def test_a_partition_without_a_rule_says_so(template, tmp_path, monkeypatch):
    cat = plugins.get_catalogue()
    lumi = cat.sites["lumi"]
    parts = [p.model_copy(update={"billing_rule": None}) for p in lumi.partitions]
    monkeypatch.setitem(cat.sites, "lumi", lumi.model_copy(update={"partitions": parts}))
    project = render(template, tmp_path / "p")
    report = explain_project(project)
    assert job(report, "train")["billed_per_hour"] is None
    assert "billed: no billing rule known for this partition" in format_report(report)
    assert "| Cost |" not in (project / "README.md").read_text()


def test_the_command_takes_a_relative_path_and_prints_json(template, tmp_path, monkeypatch, capsys):
    render(template, tmp_path / "p", nodes=2)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["explain", "p", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(job(report, "train")["table"]) == 16


def test_a_project_made_by_0_2_is_told_to_update(tmp_path, capsys):
    (tmp_path / ".copier-answers.yml").write_text(yaml.safe_dump(
        {"site": "lumi", "plugin_data": json.loads((FIXTURES / "plugin_data-v0.2.json").read_text())}))
    assert cli.main(["explain", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "made before lumi-scaffold 0.3" in err and "update the project first" in err
    assert cli.main(["explain", str(tmp_path / "nowhere")]) == 1
    assert "has no .copier-answers.yml" in capsys.readouterr().err


@pytest.mark.parametrize(("nodes", "named"), [(2, True), (1, False)])
def test_explain_and_doctor_name_the_newest_laif_image_issue_where_the_shape_is_affected(git_template, tmp_path, capsys, nodes, named):
    """20260807 hangs on a second process group across nodes [LAIF-I44]: a 2-node project is
    told (on the condition the answers cannot show), a 1-node one is not."""
    p = render(git_template, tmp_path / "p", nodes=nodes, container="laif-multitorch-20260807")
    report = explain_project(p)
    assert bool(report["known_issues"]) == named
    capsys.readouterr()
    assert cli.main(["explain", str(p)]) == 0
    out = capsys.readouterr().out
    assert ("warning: Known issue [LAIF-I44] affects image laif-multitorch-20260807 on 2 nodes if your code makes a "
            "second process group" in out) == named
    assert ("Fix: lumi-scaffold update -d container=laif-multitorch-20260513" in out) == named
    cli.main(["doctor", str(p)])
    assert ("warning: Known issue [LAIF-I44]" in capsys.readouterr().out) == named


SHARED = ("shared nodes see sporadic RCCL and binding failures in jobs with more than one GCD; whole nodes avoid them "
          "[TM-ai-E08]. Fix: lumi-scaffold update -d partition=standard-g -d gpus_per_node=8")


@pytest.mark.parametrize(("answers", "named"), [
    ({"partition": "small-g", "gpus_per_node": 2}, "2 GPUs on small-g's"),
    ({"partition": "dev-g", "gpus_per_node": 4}, "4 GPUs on dev-g's"),
    ({"partition": "small-g", "gpus_per_node": 1}, None),
    ({"partition": "small-g", "gpus_per_node": 8}, None),  # the whole node (--exclusive): nothing shared
    ({"partition": "standard-g", "gpus_per_node": 8}, None),
])
def test_new_and_explain_warn_of_multi_gcd_jobs_on_shared_small_g_nodes(template, tmp_path, capsys, answers, named):
    """More than one GCD on a shared small-g (or dev-g) node: sporadic RCCL and binding
    failures [TM-ai-E08]. `new` says so after the copy, `explain` at its end, with whole
    nodes as the fix; a job on one GCD or on whole nodes is not told."""
    args = [arg for k, v in answers.items() for arg in ("-d", f"{k}={v}")]
    assert cli.main(["new", str(tmp_path / "p"), "--template", str(template), "--defaults", "-d", "account=project_465000000",
                     *args]) == 0
    err = capsys.readouterr().err
    assert ("WARNING: jobs/train.sbatch puts " in err) == bool(named)
    assert cli.main(["explain", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    if named:
        assert f"WARNING: jobs/train.sbatch puts {named} shared nodes: {SHARED}" in err
        assert f"warning: jobs/train.sbatch puts {named} shared nodes: {SHARED}" in out
    else:
        assert "sporadic RCCL" not in out


def test_steps_a_script_did_not_report_are_not_reported_never_0(template, tmp_path, capsys):
    """A script without runlog.py trains 200 steps: its job writes the report alone
    (scripts/lib/fault.py end), its steps unknown. `lumi-scaffold explain --runs` and
    scripts/sweep.py summary say "not reported", never "0 steps trained"; so for a report
    0.4 wrote for such a job (steps done 0, no "by"). A runlog report's steps still add up."""
    import os
    import subprocess
    import sys

    project = render(template, tmp_path / "p")
    out = tmp_path / "outputs"
    env = {**os.environ, "LUMI_SCAFFOLD_SWEEP": "example", "LUMI_SCAFFOLD_BILLING_PER_NODE": "4",
           "LUMI_SCAFFOLD_BILLING_UNIT": "GPU-hours", "LUMI_SCAFFOLD_JOB_START": str(int(__import__("time").time()) - 60)}
    subprocess.run([sys.executable, "scripts/lib/fault.py", "end", "--status", "0", "--run-dir", str(out / "example-001"),
                    "--job", "51"], cwd=project, env=env, check=True)
    old = out / "example-002" / "reports"
    old.mkdir(parents=True)
    (old / "52.json").write_text(json.dumps({  # as 0.4's fault.py wrote it
        "job": "52", "kind": "train", "run": "example-002", "sweep": "example", "ended": "finished", "written": "x",
        "steps": {"first": None, "last": None, "done": 0}, "loss": {"last": None, "best": None},
        "seconds": {"job": 60.0}, "billing": {"unit": "GPU-hours", "per_hour": 4.0, "billed": 0.0667,
                                              "per_1000_steps": None}, "exit": {"status": 0, "cause": "finished"}}))
    (old / "53.json").write_text(json.dumps({  # and a job of the same run with runlog
        "job": "53", "ended": "finished", "written": "y", "steps": {"first": 1, "last": 40, "done": 40},
        "samples_per_s": 9.0, "billing": {"billed": 0.1}, "seconds": {"job": 60.0}}))
    assert cli.main(["explain", "--runs", "--output-root", str(out), str(project)]) == 0
    text = capsys.readouterr().out
    assert not re.search(r"\b0 steps trained", text), text
    assert "example-001 (sweep example): 1 job(s), last step not reported, steps trained: not reported, " in text, text
    assert ("example-002 (sweep example): 2 job(s), step 40, 40 steps trained (and 1 job(s) whose steps are not "
            "reported), ") in text, text
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("  5")}
    assert "  not reported  " in rows["51"] and "  not reported  " in rows["52"] and " 1-40 " in rows["53"], rows
    summary = subprocess.run([sys.executable, "scripts/sweep.py", "summary", "sweeps/example.txt"], cwd=project,
                             env={**os.environ, "OUTPUT_ROOT": str(out)}, capture_output=True, text=True, check=True)
    steps = [re.split(r" {2,}", line)[4] for line in summary.stdout.splitlines()[2:5]]
    assert steps == ["not reported", "40", "not run yet"], summary.stdout


def test_runs_show_the_estimate_beside_the_measured_cost(template, tmp_path, capsys):
    """`lumi-scaffold explain` gives the cost before a job runs: GPU-hours at the time limit,
    and energy only from a sourced power figure (LUMI's data has none: it says so, and that the
    reports measure it). `explain --runs` puts that estimate beside each job's billed
    GPU-hours and measured energy; a job whose nodes measured none (or a report from before
    0.5) says "not measured", never 0 kWh."""
    project = render(template, tmp_path / "p")
    assert cli.main(["explain", str(project)]) == 0
    assert ("energy: no estimate: the data for LUMI gives no sourced figure of a node's power; each job's report has "
            "the energy its nodes used, from their counters (/sys/cray/pm_counters)") in capsys.readouterr().out
    reports = tmp_path / "outputs" / "demo" / "reports"
    reports.mkdir(parents=True)
    common = {"kind": "train", "ended": "finished", "steps": {"first": 1, "last": 10, "done": 10}, "nodes": "nid1",
              "billing": {"unit": "GPU-hours", "per_hour": 4.0, "billed": 0.5, "per_1000_steps": 50.0}}
    (reports / "61.json").write_text(json.dumps({**common, "job": "61", "written": "a", "energy": {
        "joules": 7200000, "counters": "/sys/cray/pm_counters", "nodes": {"nid1": {"joules": 7200000}}}}))
    (reports / "62.json").write_text(json.dumps({**common, "job": "62", "written": "b", "energy": {
        "joules": None, "counters": "", "nodes": {}, "not_measured": "not measured: no counters"}}))
    (reports / "63.json").write_text(json.dumps({**common, "job": "63", "written": "c"}))  # (0.4: no energy)
    assert cli.main(["explain", "--runs", "--output-root", str(tmp_path / "outputs"), str(project)]) == 0
    text = capsys.readouterr().out
    at_limit = next(j for j in explain_project(project)["jobs"] if j["kind"] == "train")["billed_at_limit"]
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("  6")}
    assert re.search(rf" 0\.500 +{at_limit:g} GPU-hours at limit +50\.000 +2\.000 kWh +nid1$", rows["61"]), rows
    assert rows["62"].endswith("  not measured  nid1") and rows["63"].endswith("  not measured  nid1"), rows
    assert " 0.000 kWh" not in text, text
    assert "energy 2.000 kWh (and 2 job(s) not measured), " in text, text
    assert "energy estimated: no estimate: the data for LUMI gives no sourced figure of a node's power" in text, text


def test_before_you_spend_shows_what_explain_prints_now(template, tmp_path):
    """docs/before-you-spend.md's sample is the command's output for the answers it names."""
    from .helpers import REPO

    page = (REPO / "docs" / "before-you-spend.md").read_text()
    sample = re.search(r"`lumi-scaffold explain my-project` prints:\n\n```text\n(.*?)```\n", page, re.S)
    assert sample, "the sample is gone"
    project = render(template, tmp_path / "my-project", project_name="my-project", nodes=2, prestage=True,
                     account="project_465001234")
    printed = format_report(explain_project(project)) + "\n"
    assert printed.replace(str(project), "/project/project_465001234/my-project") == sample.group(1)


def test_a_job_the_partition_now_refuses_is_said_to_be_refused(template, tmp_path, monkeypatch):
    """A project whose answers the questionnaire took (4 nodes on small-g), on a site whose data
    now allows 2 nodes there: explain says Slurm will refuse the job, with the questionnaire's
    reason and the update that fixes it, instead of pricing it silently."""
    from lumi_scaffold.plugins import get_catalogue

    project = render(template, tmp_path / "p", partition="small-g", nodes=4)
    assert all(not j["refused"] for j in explain_project(project)["jobs"] if j["kind"] == "train")
    site = get_catalogue().sites["lumi"]
    smaller = [p.model_copy(update={"max_nodes": 2}) if p.name == "small-g" else p for p in site.partitions]
    monkeypatch.setitem(get_catalogue().sites, "lumi", site.model_copy(update={"partitions": smaller}))
    train = job(explain_project(project), "train")
    assert train["refused"] == ("Slurm will refuse it: small-g allows at most 2 nodes, not 4. Fix: lumi-scaffold update "
                                "-d partition=standard-g, or lumi-scaffold update -d nodes=2"), train["refused"]
    assert f"  refused: {train['refused']}" in format_report(explain_project(project))


def test_a_setting_known_to_be_bad_with_the_image_stops_the_job_before_its_step_and_explain_says_why(
        template, tmp_path, monkeypatch, capsys):
    """NCCL_NET_GDR_LEVEL=PHB, which LUMI projects on LAIF images leave unset [LAIF-I30], set
    in the shell the jobs are submitted from: the job file stops first (here its dry run, as
    explain runs it), naming the setting, the reason and how to start anyway;
    KNOWN_ISSUES=ignore starts it; another value is warned of. (The order, before the chain
    and the staging, and the preflight's stop: tests/test_preflight.py.)"""
    p = render(template, tmp_path / "p", nodes=2, profiler="rocprofv3")
    env = {**os.environ, "LUMI_SCAFFOLD_DRY_RUN": "1", "SLURM_SUBMIT_DIR": str(p),
           "NCCL_NET_GDR_LEVEL": "PHB"}
    for job_file in ("jobs/train.sbatch", "jobs/profile.sbatch"):
        stopped = subprocess.run(["bash", job_file], cwd=p, env=env, capture_output=True, text=True, timeout=60)
        assert stopped.returncode == 2 and "step: srun" not in stopped.stdout, stopped.stdout + stopped.stderr
        assert stopped.stderr.splitlines()[-1] == (
            "NCCL_NET_GDR_LEVEL=PHB is set, and it is known to be bad with this image: exporting it (PHB or SYS) can "
            "make torch.distributed jobs hang with LAIF images (reported on the ROCm 7.0 ones); leave it unset, RCCL "
            "detects the level from the PCI topology; the AI Guide dropped it with no loss of speed [LAIF-I30, "
            "AIG-PR97]. Fix: unset NCCL_NET_GDR_LEVEL in the shell you submit from, or KNOWN_ISSUES=ignore sbatch ... "
            "to start anyway")
        started = subprocess.run(["bash", job_file], cwd=p, env={**env, "KNOWN_ISSUES": "ignore"}, capture_output=True,
                                 text=True, timeout=60)
        assert started.returncode == 0 and "step: srun" in started.stdout, started.stdout + started.stderr
        # another value than the one the issue is about: warned of, and the job starts
        other = subprocess.run(["bash", job_file], cwd=p, env={**env, "NCCL_NET_GDR_LEVEL": "LOC"}, capture_output=True,
                               text=True, timeout=60)
        assert other.returncode == 0 and "step: srun" in other.stdout, other.stdout + other.stderr
        assert ("WARNING: NCCL_NET_GDR_LEVEL=LOC is set; with this image NCCL_NET_GDR_LEVEL=PHB is known to be bad: "
                "exporting it (PHB or SYS)") in other.stderr, other.stderr
    monkeypatch.setenv("NCCL_NET_GDR_LEVEL", "PHB")
    assert cli.main(["explain", str(p)]) == 0
    assert "step: not known (LUMI_SCAFFOLD_DRY_RUN=1 bash jobs/train.sbatch failed (status 2): NCCL_NET_GDR_LEVEL=PHB " \
           "is set, and it is known to be bad with this image" in capsys.readouterr().out
