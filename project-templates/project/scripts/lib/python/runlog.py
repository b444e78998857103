# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""What a training run did: the job report and experiment tracking, imported by train.py.
Rank 0 alone reports and tracks.

* The **job report** (in a job): at the end of training, at Slurm's time-limit warning (the
  file LUMI_SCAFFOLD_TIME_UP names appears), on SIGTERM and every few minutes, rank 0 writes
  RUN_DIR/reports/<job id>.json (format: jobfiles.py) and prints one line: steps, samples/s
  in total and per GPU, step time p50 and p95, the share spent waiting for data, GPU-hours
  billed, and the last logged loss and learning rate (``step``'s metrics "loss" and "lr").
* **Tracking** (LUMI_SCAFFOLD_TRACKING: none, tensorboard, mlflow or wandb): every
  LUMI_SCAFFOLD_LOG_EVERY steps (default 10) loss, learning rate, samples/s, step time and peak
  device memory, with the run's config: one tracked run per run directory across the jobs
  of a chain (RUN_DIR/tracking.json), each step logged once.

``time_to_stop`` tells every rank at the same step that the time-limit warning came: the
examples then save a checkpoint and exit with TIME_LIMIT_EXIT; the next job resumes there.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import signal
import sys
import time
from typing import Any, Callable

import jobfiles  # scripts/lib/python/jobfiles.py: the report's format and billing

TRACKERS = ("none", "tensorboard", "mlflow", "wandb")
PACKAGES = {"tensorboard": "tensorboard", "mlflow": "mlflow-skinny", "wandb": "wandb"}
REPORT_EVERY_S = 300.0  # a report on disk is at most this old when a job is killed
TIME_UP_CHECK_S = 5.0
# How often, in seconds of training as rank 0 times its steps, the ranks agree whether the
# time-limit warning came (one collective of two integers).
AGREE_EVERY_S = 10.0
# The exit status of a training script that stopped at the time-limit warning: not 0 (the run
# is not finished, so the chain goes on), EX_TEMPFAIL of sysexits.h ("try again later").
TIME_LIMIT_EXIT = 75


def tracker_name() -> str:
    """The tracker this job logs to (scripts/lib/job.sh exports it; none outside a job)."""
    return os.environ.get("LUMI_SCAFFOLD_TRACKING", "none") or "none"


def check() -> None:
    """At the start of train.py, before any rank waits for another: on rank 0, one line and
    exit 1 when the tracker's package is missing (not a traceback mid-run)."""
    name = tracker_name()
    if os.environ.get("RANK", "0") != "0" or name == "none":
        return
    if name not in TRACKERS:
        raise SystemExit(f"TRACKING={name!r} is not a tracker: use one of {', '.join(TRACKERS)}")
    try:
        TRACKER_KINDS[name].load()
    except ImportError as exc:
        raise SystemExit(
            f"tracking: {name} needs the package {PACKAGES[name]}, which this Python cannot import ({exc}). "
            f"Fix: add {PACKAGES[name]} to requirements.txt and run scripts/setup-venv.sh, "
            "or submit with TRACKING=none") from None
    if name == "wandb" and os.environ.get("WANDB_MODE") == "online" and not os.environ.get("WANDB_API_KEY") \
            and not netrc_has_wandb():
        raise SystemExit("tracking: WANDB_MODE=online needs your W&B API key: export WANDB_API_KEY before sbatch "
                         "(never write it into the project), or leave WANDB_MODE unset to log offline")


class RunLog:
    """One job's share of a run, on every rank; rank 0 reports and tracks.

    ``samples_per_step``: the global batch (every rank's). ``peak_memory``: a function
    returning this process's peak device memory in bytes (None where there is none).
    """

    def __init__(self, *, rank: int, world: int, output: str, start_step: int, last_step: int,
                 samples_per_step: int, config: dict[str, Any],
                 peak_memory: Callable[[], int | None] | None = None) -> None:
        self.rank, self.world, self.output = rank, world, output
        self.start_step, self.step_no, self.last_step = start_step, start_step, last_step
        self.samples_per_step = samples_per_step
        self.peak_memory = peak_memory
        self.job = os.environ.get("SLURM_JOB_ID", "")
        self.in_job = rank == 0 and self.job not in ("", "0")
        self.step_times: list[float] = []
        self.data_waits: list[float] = []
        self.losses: list[tuple[int, float]] = []  # (step, loss)
        self.lr: float | None = None  # the learning rate of the last logged step (metrics' "lr")
        self.last = self.written = self.checked = self.interval_start = time.monotonic()
        self.interval_steps, self.time_up = 0, False
        self.agree_at = start_step + 1  # the step at which the ranks next agree (time_to_stop)
        self.every = max(int(os.environ.get("LUMI_SCAFFOLD_LOG_EVERY", "10") or 10), 1)
        self.tracker: Tracker | None = None
        if rank == 0:
            check()  # (loads the tracker's package, where train.py did not call it)
            if tracker_name() != "none":
                self.tracker = Tracker.open(tracker_name(), output, {**project_answers(), **config})
        if rank == 0 and (self.tracker or self.in_job) and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            # Slurm's time limit and scancel: SIGTERM to every task, SIGKILL some seconds later.
            # Report and close the tracked run first (W&B keeps what was logged until then).
            signal.signal(signal.SIGTERM, self._terminated)

    def _terminated(self, signum: int, frame: Any) -> None:
        try:
            if self.tracker:
                self.tracker.close(finished=False)
            if self.in_job:
                self.report("time limit" if self.time_up else "stopped", say=True)
        finally:
            os._exit(128 + signum)

    def step(self, step: int, *, data_wait: float, metrics: Callable[[], dict[str, float]]) -> None:
        """After optimizer step ``step``; ``data_wait``: seconds this step waited for its batch;
        ``metrics``: called only on the steps that are logged (it may sync the device)."""
        if self.rank != 0:
            return  # (only rank 0 reports and logs)
        now = time.monotonic()
        self.step_times.append(now - self.last)
        self.data_waits.append(min(data_wait, now - self.last))
        self.last, self.step_no = now, step
        self.interval_steps += 1
        if step % self.every == 0 or step == self.last_step:
            values = dict(metrics())
            if "loss" in values:
                self.losses.append((step, float(values["loss"])))
            if "lr" in values:
                self.lr = float(values["lr"])
            elapsed = now - self.interval_start
            values["samples_per_s"] = self.interval_steps * self.samples_per_step / elapsed if elapsed > 0 else 0.0
            values["step_time_s"] = elapsed / self.interval_steps
            peak = self.peak_memory() if self.peak_memory else None
            if peak:
                values["peak_memory_gb"] = peak / 1e9
            if self.tracker:
                self.tracker.log(step, values)
            self.interval_start, self.interval_steps = now, 0
        if self.in_job and now - self.checked >= TIME_UP_CHECK_S:
            self.checked = now
            if not self._time_up_came() and now - self.written >= REPORT_EVERY_S:
                self.report("time limit" if self.time_up else "running")

    def time_to_stop(self, step: int, agree: Callable[[list[int]], list[int]]) -> bool:
        """Whether every rank stops after step ``step`` because the time-limit warning came in
        this training job; call it on every rank after every step. About every AGREE_EVERY_S
        seconds of steps it calls ``agree`` (the framework's maximum over all ranks of a list
        of ints, a collective): rank 0 gives the flag and the steps until the next agreement."""
        if os.environ.get("LUMI_SCAFFOLD_JOB_KIND") != "train" or step < self.agree_at:
            return False  # (a profile job does not resume: it runs on into its time limit)
        flag = interval = 0
        if self.rank == 0:
            self._time_up_came()
            flag = int(self.time_up)
            slowest = max(self.step_times[-20:], default=0.0)
            interval = max(int(AGREE_EVERY_S / slowest), 1) if slowest > 0 else 1
        flag, interval = (int(value) for value in agree([flag, interval]))
        self.agree_at = step + max(interval, 1)
        return bool(flag)

    def _time_up_came(self) -> bool:
        """Rank 0: whether the time-limit warning came just now (reported at once)."""
        flag = os.environ.get("LUMI_SCAFFOLD_TIME_UP")
        if self.in_job and flag and not self.time_up and os.path.exists(flag):
            self.time_up = True
            self.report("time limit", say=True)
            return True
        return False

    @staticmethod
    def exit_at_time_limit() -> None:
        """Ends this process with TIME_LIMIT_EXIT once every rank has saved (call it after a
        barrier). SIGTERM is ignored from here on: srun --kill-on-bad-exit sends it to the
        other ranks as soon as the first exits non-zero, and they are exiting themselves."""
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(TIME_LIMIT_EXIT)

    def finish(self, finished: bool) -> None:
        """At the end of the job's training; ``finished``: the run reached its last step."""
        if self.rank != 0:
            return
        if self.tracker:
            self.tracker.close(finished)
        if self.in_job:
            self.report("finished" if finished else "time limit" if self.time_up else "stopped", say=True)

    # ---------------------------------------------------------------- the job report

    def figures(self, ended: str) -> dict[str, Any]:
        steps = len(self.step_times)
        timed = self.step_times[1:] or self.step_times  # the first step compiles and warms up
        training = sum(timed)
        seconds, billing = jobfiles.billing(steps)
        samples_s = len(timed) * self.samples_per_step / training if training > 0 else 0.0
        losses = [value for _, value in self.losses if math.isfinite(value)]
        return dict(
            jobfiles.new_report(self.job, self.output, "runlog",
                                {"first": self.start_step + 1 if steps else None, "last": self.step_no, "done": steps}),
            ended=ended, world=self.world, samples_per_step=self.samples_per_step,
            samples_per_s=round(samples_s, 3), samples_per_s_per_gpu=round(samples_s / self.world, 3),
            step_time_s={"first": round(self.step_times[0], 6) if steps else None,
                         "p50": percentile(timed, 50), "p95": percentile(timed, 95)},
            data_wait_share=round(sum(self.data_waits[1:] or self.data_waits) / training, 4) if training > 0 else None,
            loss={"last": losses[-1] if losses else None, "best": min(losses) if losses else None},
            lr=self.lr, seconds={"job": round(seconds, 1), "training": round(sum(self.step_times), 1)}, billing=billing)

    def report(self, ended: str, say: bool = False) -> None:
        self.written = time.monotonic()
        figures = self.figures(ended)
        path = jobfiles.write_report(self.output, figures)
        if say:
            print(f"report: {summary(figures)} ({path})", flush=True)


def summary(r: dict[str, Any]) -> str:
    """One human line of a report."""
    steps, times, bill = r["steps"], r["step_time_s"], r["billing"]
    span = f"steps {steps['first']}-{steps['last']} ({steps['done']})" if steps["done"] else "no steps"
    parts = [f"job {r['job']} {r['ended']}", span,
             f"{r['samples_per_s']:.1f} samples/s ({r['samples_per_s_per_gpu']:.1f} per GPU)"]
    if times["p50"] is not None:
        parts.append(f"step p50 {times['p50']:.3f} s p95 {times['p95']:.3f} s")
    if r["data_wait_share"] is not None:
        parts.append(f"data wait {100 * r['data_wait_share']:.0f}%")
    if bill["billed"] is not None:
        per = f", {bill['per_1000_steps']:.3f} per 1,000 steps" if bill["per_1000_steps"] is not None else ""
        parts.append(f"{bill['billed']:.3f} {bill['unit']} billed{per}")
    return " · ".join(parts)


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (nearest rank) of ``values``."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))], 6)


def project_answers() -> dict[str, Any]:
    """The project's answers (top-level plain values of .copier-answers.yml), for the
    tracked run's config; read without a YAML parser, so it needs nothing installed."""
    path = os.path.join(os.environ.get("PROJECT_DIR", ""), ".copier-answers.yml")
    answers: dict[str, Any] = {}
    try:
        with open(path) as handle:
            for line in handle:
                match = re.match(r"^([a-z][a-z_]*): ([^{\[\n][^\n]*)$", line)
                if match:
                    answers[match.group(1)] = match.group(2).strip().strip("'\"")
    except OSError:
        pass
    return answers


# ---------------------------------------------------------------- tracking


class Tracker:
    """A tracker's run, one per run directory; ``log`` skips steps already logged. Each kind
    has load (imports its package: check()), start, write and close."""

    name = "none"

    def __init__(self, output: str, config: dict[str, Any]) -> None:
        self.output, self.config = output, config
        self.state_path = os.path.join(output, "tracking.json")
        try:
            with open(self.state_path) as handle:
                self.state = json.load(handle)
        except (OSError, ValueError):
            self.state = {}
        if self.state.get("tracker", self.name) != self.name:
            raise SystemExit(f"tracking: {output} is tracked with {self.state['tracker']}, not {self.name}: "
                             f"keep TRACKING={self.state['tracker']} for this run, or start another (RUN_NAME=...)")
        self.logged_to = int(self.state.get("logged_to", 0))

    @staticmethod
    def open(name: str, output: str, config: dict[str, Any]) -> Tracker:
        """The run's tracker (check() has loaded its package)."""
        os.makedirs(output, exist_ok=True)
        tracker = TRACKER_KINDS[name](output, config)
        tracker.start()
        tracker.save_state()
        return tracker

    def save_state(self) -> None:
        self.state.update(tracker=self.name, logged_to=self.logged_to)
        with open(self.state_path + ".tmp", "w") as handle:
            json.dump(self.state, handle)
        os.replace(self.state_path + ".tmp", self.state_path)

    def log(self, step: int, values: dict[str, float]) -> None:
        if step <= self.logged_to:
            return  # logged by the job before (it got further than its last checkpoint)
        self.write(step, values)
        self.logged_to = step
        self.save_state()

    def close(self, finished: bool) -> None:
        pass


def experiment() -> str:
    return os.environ.get("LUMI_SCAFFOLD_PROJECT", "") or os.path.basename(os.environ.get("PROJECT_DIR", "")) or "project"


class TensorBoard(Tracker):
    """Event files in RUN_DIR/tensorboard, written with tensorboard's own event writer
    (the one torch.utils.tensorboard uses), so JAX needs no PyTorch for it."""

    name = "tensorboard"

    @staticmethod
    def load() -> None:
        global EventFileWriter, event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
        from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

    def start(self) -> None:
        self.writer = EventFileWriter(os.path.join(self.output, "tensorboard"))
        if not self.state:  # the run's first job: its config, as text
            self.write_text("config", json.dumps(self.config, indent=1, default=str))

    def write_text(self, tag: str, text: str) -> None:
        plugin = summary_pb2.SummaryMetadata.PluginData(plugin_name="text")
        tensor = tensor_pb2.TensorProto(dtype=7, string_val=[text.encode()],  # 7: DT_STRING
                                        tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[]))
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=summary_pb2.SummaryMetadata(plugin_data=plugin))
        self.writer.add_event(event_pb2.Event(step=0, wall_time=time.time(), summary=summary_pb2.Summary(value=[value])))

    def write(self, step: int, values: dict[str, float]) -> None:
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=k, simple_value=float(v)) for k, v in values.items()])
        self.writer.add_event(event_pb2.Event(step=step, wall_time=time.time(), summary=summary))
        self.writer.flush()  # on disk before the step counts as logged

    def close(self, finished: bool) -> None:
        self.writer.close()


class MLflow(Tracker):
    """A run in MLflow's tracking store: MLFLOW_TRACKING_URI, which scripts/lib/job.sh sets to
    a file store in the project's output area unless you set it."""

    name = "mlflow"

    @staticmethod
    def load() -> None:
        global mlflow
        import mlflow

    def start(self) -> None:
        run_id = self.state.get("id")
        if run_id:
            mlflow.start_run(run_id=run_id)
            return
        # By the id set_experiment returns, not as the active experiment it sets: where another
        # process makes the experiment between its look-up and its own create (sweep trials
        # starting together on a new store), set_experiment returns it without making it
        # active (MLflow 3.17, fluent.set_experiment), and the run went to "Default".
        found = first_of_its_name(mlflow.set_experiment(experiment()))
        tags = {"sweep": os.environ["LUMI_SCAFFOLD_SWEEP"]} if os.environ.get("LUMI_SCAFFOLD_SWEEP") else None
        run = mlflow.start_run(experiment_id=found.experiment_id, run_name=os.environ.get("RUN_NAME", "run"), tags=tags)
        mlflow.log_params({k: str(v)[:500] for k, v in self.config.items()})  # (params cannot change later)
        self.state["id"] = run.info.run_id

    def write(self, step: int, values: dict[str, float]) -> None:
        mlflow.log_metrics({k: float(v) for k, v in values.items()}, step=step)

    def close(self, finished: bool) -> None:
        mlflow.end_run(status="FINISHED" if finished else "KILLED")


def first_of_its_name(found: Any) -> Any:
    """The experiment a new run goes to: the oldest of ``found``'s name. MLflow's file store
    checks that a name is free, then writes the experiment: two sweep trials starting
    together on a new store can each make one, and their runs landed in two experiments of
    one name (seen in a sweep of three trials, two at once; MLflow 3.17). Every process
    takes the oldest (by creation time, then id: they all agree), and one that made a
    newer copy renames and removes it while it holds no run (a removed experiment keeps its
    name in MLflow), so the name finds the experiment with the runs."""
    client = mlflow.MlflowClient()
    same = [e for e in client.search_experiments() if e.name == found.name]
    if len(same) < 2:
        return found
    first = min(same, key=lambda e: (e.creation_time or 0, e.experiment_id))
    if first.experiment_id != found.experiment_id and not client.search_runs([found.experiment_id], max_results=1):
        try:
            client.rename_experiment(found.experiment_id, f"{found.name} (duplicate {found.experiment_id})")
            client.delete_experiment(found.experiment_id)
        except mlflow.exceptions.MlflowException:
            pass  # (another process removed it first)
    return first


class WandB(Tracker):
    """A W&B run in RUN_DIR/wandb, offline unless WANDB_MODE=online (which needs WANDB_API_KEY
    in the environment): `wandb sync` uploads the offline directories from a login node."""

    name = "wandb"

    @staticmethod
    def load() -> None:
        global wandb
        import wandb

    def start(self) -> None:
        run_id = self.state.get("id") or "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))
        self.state["id"] = run_id
        sweep = os.environ.get("LUMI_SCAFFOLD_SWEEP") or None
        self.run = wandb.init(project=experiment(), id=run_id, resume="allow", name=os.environ.get("RUN_NAME", "run"), group=sweep,
                              tags=[sweep] if sweep else None, config=self.config, dir=self.output)

    def write(self, step: int, values: dict[str, float]) -> None:
        self.run.log(dict(values), step=step)

    def close(self, finished: bool) -> None:
        self.run.finish(exit_code=0 if finished else 1)


TRACKER_KINDS: dict[str, type[Tracker]] = {"tensorboard": TensorBoard, "mlflow": MLflow, "wandb": WandB}


def netrc_has_wandb() -> bool:
    """Whether `wandb login` left a key in ~/.netrc."""
    try:
        with open(os.path.expanduser("~/.netrc")) as handle:
            return "api.wandb.ai" in handle.read()
    except OSError:
        return False

