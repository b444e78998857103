"""The training-script contract, checked by running a project's ``train.py``.

``check_example`` (``lumi_scaffold.testing``; ``check_conformance`` calls it for every framework
a plugin registers) renders one project of the framework and calls :func:`run_example` on it:
the command of its ``jobs/train.sbatch`` (``COMMAND``: ``python -u src/<package>/train.py``
with the framework's own arguments) runs twice, as one rank on the CPU, in one run
directory, the way a job starts it (``make_step`` in scripts/lib/job.sh: from the project
directory, with ``RUN_DIR``, ``CHECKPOINT_DIR`` and ``DATA_DIR`` in its environment and
scripts/lib/python on its ``PYTHONPATH``), with ``--steps`` and ``--lr`` after it. The clauses it checks, each of docs/jobs.md's "The training-script
contract" (each broken clause is one line):

* ``--steps N``: the first run exits 0 and its job report (RunLog) says it trained steps 1..N;
* resume: a second run with more steps starts after the step the first one saved;
* ``--lr``: the job report records the learning rate given (RunLog.step's metrics "lr");
* heartbeat: the script beat (heartbeat.Heartbeat().beat) up to its last step.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["CONTRACT", "run_example"]

CONTRACT = "docs/jobs.md, \"The training-script contract\""
STEPS, MORE, LR = 3, 5, 0.0123  # two tiny runs; an lr no example has as its default
RUN_TIMEOUT_S = 600


def job_command(project: Path, run_dir: Path, job_file: str = "jobs/train.sbatch") -> list[str]:
    """The ``COMMAND=(...)`` of a project's job file, as bash reads it with ``RUN_DIR`` and
    ``PROJECT_DIR`` set (the words every rank runs, before the job's arguments)."""
    script = ('PROJECT_DIR="$1" RUN_DIR="$2"; CHECKPOINT_DIR="$2/checkpoints"; '
              'eval "$(grep -E "^COMMAND=\\(" "$3")"; printf "%s\\0" "${COMMAND[@]}"')
    done = subprocess.run(["bash", "-c", script, "bash", str(project), str(run_dir), str(project / job_file)],
                          capture_output=True, text=True, check=True)
    return [word for word in done.stdout.split("\0") if word]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(project: Path, run_dir: Path, beats: Path, job: str) -> dict[str, str]:
    """What scripts/lib/job.sh and scripts/lib/run.sh give rank 0 of a one-rank training job, on
    this Python's environment (its PYTHONPATH and user site stay: the packages the tests
    see are the ones the script imports; the library's helpers come last)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "LUMI_SCAFFOLD_", "TORCHELASTIC_")) and k not in
           ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update({
        "PROJECT_DIR": str(project), "RUN_DIR": str(run_dir), "RUN_NAME": run_dir.name, "SLURM_JOB_ID": job,
        "CHECKPOINT_DIR": str(run_dir / "checkpoints"), "DATA_DIR": str(run_dir / "no-data"),
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(project / "scripts/lib/python")])),
        "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "LUMI_SCAFFOLD_CPUS_PER_RANK": "1",
        "LUMI_SCAFFOLD_JOB_KIND": "train", "LUMI_SCAFFOLD_TRACKING": "none", "LUMI_SCAFFOLD_LOG_EVERY": "1",
        "LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT": "120", "LUMI_SCAFFOLD_HEARTBEAT_INTERVAL": "1",
        "LUMI_SCAFFOLD_HEARTBEAT": str(beats / "shared" / "rank0@conformance"),
        "LUMI_SCAFFOLD_HEARTBEAT_LOCAL": str(beats / f"local-{job}"),
    })
    return env


def _run(project: Path, values: dict[str, Any], run_dir: Path, beats: Path, job: str, steps: int,
         python: str) -> tuple[subprocess.CompletedProcess | None, dict[str, Any] | None, int | None, str]:
    """One run: (process, its job report, its last heartbeat step, what went wrong or '')."""
    command = job_command(project, run_dir)
    if command and command[0] in ("python", "python3"):
        command[0] = python  # (the Python of this check: the packages it sees)
    args = ["--steps", str(steps), "--lr", str(LR)]
    (beats / "shared").mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([*command, *args], cwd=project, capture_output=True, text=True,
                              env=_environment(project, run_dir, beats, job), timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, None, None, f"did not end within {RUN_TIMEOUT_S} s"
    report_path = run_dir / "reports" / f"{job}.json"
    report = json.loads(report_path.read_text()) if report_path.is_file() else None
    record = beats / f"local-{job}" / "rank0"
    fields = record.read_text().split() if record.is_file() else []
    beat = int(fields[1]) if len(fields) > 1 and fields[1].lstrip("-").isdigit() else None
    return done, report, beat, ""


def _tail(done: subprocess.CompletedProcess) -> str:
    lines = (done.stderr or done.stdout or "").strip().splitlines()
    return lines[-1][:300] if lines else "(no output)"


def run_example(project: Path, values: dict[str, Any], *, python: str | None = None) -> list[str]:
    """Problems of the rendered ``project``'s train.py with the contract ([] if none), one
    line each, naming the clause; see the module's docstring. ``values``: the project's
    scripts/values.sh as read (lumi_scaffold.testing.project_values)."""
    project = Path(project).resolve()
    python = python or sys.executable
    fix = f"(the contract: {CONTRACT})"
    with tempfile.TemporaryDirectory(prefix="lumi-contract-") as scratch:
        run_dir, beats = Path(scratch) / "run", Path(scratch) / "heartbeat"
        run_dir.mkdir()
        call = f"train.py --steps {STEPS} --lr {LR}"
        done, report, beat, failed = _run(project, values, run_dir, beats, "1", STEPS, python)
        if failed or done is None:
            return [f"{call}: {failed} {fix}"]
        if done.returncode != 0:
            return [f"{call}: exited with status {done.returncode}, not 0 (a run that trained --steps steps "
                    f"exits 0): {_tail(done)} {fix}"]
        if report is None:
            return [f"{call}: wrote no job report in RUN_DIR/reports/: create runlog.RunLog(...) and call its "
                    f"step() after every step and finish() at the end {fix}"]
        out = []
        steps = report.get("steps") or {}
        if (steps.get("first"), steps.get("last")) != (1, STEPS):
            out.append(f"--steps: {call} trained steps {steps.get('first')}..{steps.get('last')} by its job report, "
                       f"not 1..{STEPS}: train exactly --steps optimizer steps in total {fix}")
        lr = report.get("lr")
        if not isinstance(lr, (int, float)) or not math.isclose(lr, LR, rel_tol=1e-6):
            out.append(f"--lr: {call} trained with lr {lr} by its job report, not {LR}: train with --lr and "
                       f"give it to RunLog.step's metrics as \"lr\" {fix}")
        if beat != steps.get("last"):  # (its last step, as its report says: --steps is judged above)
            found = "never beat" if beat is None or beat < 0 else f"beat last at step {beat}"
            out.append(f"heartbeat: {call} {found}, not at its last step {steps.get('last')}: call "
                       f"heartbeat.Heartbeat().beat(step) after every step {fix}")
        if out and out[0].startswith("--steps"):
            return out  # (resuming is judged by the steps trained)
        again = f"train.py --steps {MORE} --lr {LR} in the same run directory"
        done, report, _, failed = _run(project, values, run_dir, beats, "2", MORE, python)
        if failed or done is None:
            return out + [f"resume: {again}: {failed} {fix}"]
        if done.returncode != 0:
            return out + [f"resume: {again} exited with status {done.returncode}: {_tail(done)} {fix}"]
        steps = (report or {}).get("steps") or {}
        if (steps.get("first"), steps.get("last")) != (STEPS + 1, MORE):
            out.append(f"resume: {again} trained steps {steps.get('first')}..{steps.get('last')} by its job report, "
                       f"not {STEPS + 1}..{MORE}: save a checkpoint of the last step in CHECKPOINT_DIR (or "
                       f"the run directory) and resume from the newest one {fix}")
    return out
