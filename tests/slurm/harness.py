"""Drive the private single-host Slurm cluster of ``start-slurm.sh`` from Python tests.

A real Slurm 22.05 (Debian packages) runs on localhost, with LUMI-G-like partitions
(small-g, standard-g, dev-g) and fake GPUs; ``fakebin/`` (first on the PATH of every command
run through :class:`SlurmCluster`, and so of every job) holds test stand-ins for
``singularity``, ``rocprof``, ``rocprofv3`` and ``rocm-smi``. Recipe and pitfalls:
``/work/shared/slurm-local-notes.md``.

Typical use (the pytest fixtures in ``tests/slurm/fixtures.py`` do the start/stop)::

    cluster = SlurmCluster(tmp_dir, cpus=64, task_plugin="task/none").start()
    job_id = cluster.sbatch(["jobs/train.sbatch"], cwd=project)
    result = cluster.wait(job_id, timeout=60)
    assert result.ok, result.output()
    cluster.stop()
"""

from __future__ import annotations

import os
import re
import shutil
import site
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SLURM_DIR = Path(__file__).resolve().parent
FAKEBIN = SLURM_DIR / "fakebin"
ENSURE_TOOLS = SLURM_DIR / "ensure-tools.sh"
START_SCRIPT = SLURM_DIR / "start-slurm.sh"
STOP_SCRIPT = SLURM_DIR / "stop-slurm.sh"
WAIT_SCRIPT = SLURM_DIR / "wait-job.sh"

# Keyword knobs of SlurmCluster.start(), each passed as SLURM_LOCAL_<NAME upper-cased>.
KNOBS = frozenset({
    "nodes", "nodename", "cpus", "task_plugin", "gpus", "gpu_type", "real_memory",
    "def_mem_per_cpu", "min_job_age", "first_job_id", "auth", "require_account", "ctld_port", "slurmd_port",
    "start_timeout", "link_etc",
})
TERMINAL_STATES = frozenset({
    "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE",
})
# How often wait() asks again about a job the controller still shows as COMPLETING.
_COMPLETING_EVERY = 0.25
# Pending reasons that mean the job will never start on this cluster.
HOPELESS_REASONS = frozenset({
    "BadConstraints", "PartitionTimeLimit", "PartitionNodeLimit", "InvalidAccount", "InvalidQOS",
    "DependencyNeverSatisfied",
})
# Variables of the calling environment that would redirect or confuse Slurm clients, jobs
# or the stand-ins (e.g. when the tests themselves run inside a Slurm job).
_SCRUBBED_PREFIXES = ("SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "SINGULARITY", "APPTAINER",
                      "FAKE_SINGULARITY", "FAKE_PROFILER")
_DAEMONS = ("slurmctld", "slurmd", "munged", "mungekey")
_CLIENTS = ("sbatch", "srun", "scontrol", "sinfo", "squeue", "scancel")
_SBIN = ("/usr/sbin", "/sbin")
_MAX_DIR_LEN = 60  # start-slurm.sh refuses longer DIRs (Unix socket path limit)


class SlurmError(RuntimeError):
    """A Slurm command or the cluster itself failed; the message carries its output."""


@dataclass(frozen=True)
class JobResult:
    """Final state of a job, from ``scontrol show job -o``."""

    job_id: int
    state: str  # COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    exit_code: int  # the batch script's exit status (0 for TIMEOUT/CANCELLED by signal)
    signal: int  # the signal that ended it (e.g. 15 after a time limit), else 0
    reason: str
    info: Mapping[str, str] = field(repr=False)

    @property
    def ok(self) -> bool:
        return self.state == "COMPLETED" and self.exit_code == 0

    @property
    def stdout_path(self) -> Path | None:
        value = self.info.get("StdOut")
        return Path(value) if value else None

    def output(self) -> str:
        """Text of the job's --output file ('' when it does not exist)."""
        path = self.stdout_path
        try:
            return path.read_text(errors="replace") if path else ""
        except FileNotFoundError:
            return ""


def image_python(root: Path) -> Path:
    """The stand-in image's Python: a bin directory (second on the jobs' PATH, after fakebin)
    whose ``python`` and ``python3`` are this interpreter's binary in a venv that sees this
    environment's packages (torch, jax, ...) by plain directory lines in a .pth file. Plain
    lines add the directories without running the .pth files in them, so the jobs' Python
    starts as an image's would: without this machine's site hooks (a sandbox's certificate
    hook, the editable installs' finders: 40-55 ms of CPU per process here, and a job starts
    dozens). Returns the bin directory; made once per directory."""
    bin_dir = root / "bin"
    if (bin_dir / "python3").exists():
        return bin_dir
    binary = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    purelib.mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    (root / "pyvenv.cfg").write_text(f"home = {binary.parent}\ninclude-system-site-packages = false\n"
                                     f"version = {'.'.join(map(str, sys.version_info[:3]))}\n")
    (purelib / "image-packages.pth").write_text("".join(f"{d}\n" for d in site.getsitepackages()))
    for name in ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"):
        (bin_dir / name).symlink_to(binary)
    return bin_dir


def slurm_available() -> tuple[bool, str]:
    """Whether a local Slurm cluster can be started here, and why (not)."""
    if not sys.platform.startswith("linux"):
        return False, f"local Slurm needs Linux, this is {sys.platform}"
    if shutil.which("bash") is None:
        return False, "bash is not installed"
    path = _search_path()
    missing = [b for b in _DAEMONS + _CLIENTS if shutil.which(b, path=path) is None]
    if os.geteuid() != 0:
        return False, f"slurmd/slurmctld/munged must be started as root (uid is {os.geteuid()})"
    if not missing:
        return True, "Slurm and munge are installed"
    if shutil.which("apt-get", path=path) and shutil.which("dpkg", path=path):
        return True, f"missing {' '.join(missing)}; start-slurm.sh will apt-get install them"
    return False, f"missing {' '.join(missing)} and no apt-get to install them"


def ensure_tool(tool: str, package: str, log: Path, search_path: str | None = None) -> tuple[str | None, str]:
    """``tool``'s path, installed from the Debian ``package`` where missing by ensure-tools.sh,
    the installer start-slurm.sh uses for Slurm; (None, the installer's one-line reason) where
    it is missing and cannot be installed. ``search_path``: where to look (default: PATH and
    /usr/sbin, /sbin)."""
    path = _search_path() if search_path is None else search_path
    proc = subprocess.run(["bash", str(ENSURE_TOOLS), str(log), f"{tool}={package}"], capture_output=True,
                          text=True, timeout=900, env={**os.environ, "ENSURE_TOOLS_PATH": path})
    found = shutil.which(tool, path=path)
    if proc.returncode == 0 and found:
        return found, f"{tool} is {found}"
    lines = proc.stderr.strip().splitlines()
    return None, lines[-1] if lines else f"{tool} missing: ensure-tools.sh exited {proc.returncode}"


def worker_port_start() -> int:
    """Where this process looks for free ports: gw0 (and gw2) from 6817, gw1 from 7317, so
    that two workers starting clusters at the same moment seldom pick the same free block
    (the check and the daemons' bind are not one step). xdist gives the two Slurm groups to
    whichever workers come first (seen: gw0 and gw2), so two groups may share a range;
    start() then takes the next block where another cluster took one. Job ids follow the
    ports: each cluster's ids start 1000 apart."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    return 6817 + 500 * (index % 2)


def free_port_block(count: int, start: int = 6817, stop: int = 7817, step: int = 10) -> int:
    """First port P in [start, stop) such that P .. P+count-1 can all be bound."""
    for base in range(start, stop, step):
        if all(_port_free(port) for port in range(base, base + count)):
            return base
    raise SlurmError(f"no {count} free consecutive ports in {start}-{stop}")


class SlurmCluster:
    """One private Slurm cluster under a directory, driven by start-slurm.sh/stop-slurm.sh.

    ``SlurmCluster(directory, **knobs).start()`` or ``SlurmCluster().start(directory, **knobs)``.
    Knobs (see start-slurm.sh): nodes, nodename, cpus, task_plugin, gpus, gpu_type,
    real_memory, def_mem_per_cpu, min_job_age, first_job_id, auth, require_account, ctld_port,
    slurmd_port, start_timeout, link_etc. Ports default to a free block from 6817 upwards,
    first_job_id to 1000 x the block's index (so clusters side by side hand out other ids).
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None, **knobs: object) -> None:
        _check_knobs(knobs)
        self.directory = Path(directory).resolve() if directory is not None else None
        self.knobs: dict[str, object] = dict(knobs)
        self.running = False
        self._env: dict[str, str] | None = None

    # -- life cycle ---------------------------------------------------------------------
    def start(self, directory: str | os.PathLike[str] | None = None,
              **knobs: object) -> SlurmCluster:
        """Start (or reconfigure) the cluster and wait until every node is idle; returns self."""
        _check_knobs(knobs)
        if directory is not None:
            self.directory = Path(directory).resolve()
        if self.directory is None:
            raise ValueError("SlurmCluster.start() needs a directory")
        self.knobs.update(knobs)
        nodes = int(self.knobs.get("nodes", 1))  # type: ignore[call-overload]
        pick_ports = "ctld_port" not in self.knobs and "slurmd_port" not in self.knobs
        pick_ids = "first_job_id" not in self.knobs
        if pick_ports:
            base = free_port_block(1 + nodes, start=worker_port_start())
            self.knobs.update(ctld_port=base, slurmd_port=base + 1)
        for attempt in range(5):
            if pick_ids:
                # Jobs derive ports from their id (MASTER_PORT, JAX's coordinator port): clusters
                # side by side on this host hand out ids 1000 apart (one per port block).
                self.knobs["first_job_id"] = 1 + (int(self.knobs["ctld_port"]) - 6817) // 10 * 1000 % 9000
            env = _scrubbed_environ()
            env.update({f"SLURM_LOCAL_{k.upper()}": _knob_value(v) for k, v in self.knobs.items()})
            proc = subprocess.run(
                ["bash", str(START_SCRIPT), str(self.directory)], env=env, capture_output=True,
                text=True, timeout=600, check=False,
            )
            if proc.returncode == 0:
                break
            if not (pick_ports and "already in use" in proc.stdout + proc.stderr and attempt < 4):
                raise SlurmError(_failure("start-slurm.sh", proc))
            # Another cluster (a parallel test worker) took the same free block between our
            # check and our daemons' start: a daemon's bind failed ("Address already in use"),
            # or start-slurm.sh found a port taken before starting one ("port N already in
            # use"; CI saw this one). Stop what started and take the next block.
            subprocess.run(["bash", str(STOP_SCRIPT), str(self.directory)], env=_scrubbed_environ(),
                           capture_output=True, text=True, timeout=120, check=False)
            base = free_port_block(1 + nodes, start=int(self.knobs["ctld_port"]) + 10 * (1 + attempt))
            self.knobs.update(ctld_port=base, slurmd_port=base + 1)
        self.running = True
        self._env = None
        return self

    def stop(self) -> None:
        """Cancel remaining jobs and stop the daemons (by pidfile). Safe to call twice."""
        if self.directory is None:
            return
        proc = subprocess.run(
            ["bash", str(STOP_SCRIPT), str(self.directory)], env=_scrubbed_environ(),
            capture_output=True, text=True, timeout=120, check=False,
        )
        self.running = False
        if proc.returncode != 0:
            raise SlurmError(_failure("stop-slurm.sh", proc))

    def __enter__(self) -> SlurmCluster:
        return self if self.running else self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- environment --------------------------------------------------------------------
    @property
    def conf(self) -> Path:
        if self.directory is None:
            raise ValueError("cluster has no directory yet")
        return self.directory / "etc" / "slurm.conf"

    @property
    def log_dir(self) -> Path:
        return self.conf.parent.parent / "log"

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm clients and jobs: SLURM_CONF set, fakebin first on PATH,
        inherited SLURM_*/SBATCH_*/SINGULARITY*/FAKE_* variables removed. A fresh copy."""
        if self._env is None:
            env = _scrubbed_environ()
            env["SLURM_CONF"] = str(self.conf)
            parts = [str(FAKEBIN), str(image_python(self.directory / "image-python"))]
            parts += [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p]
            parts += [d for d in _SBIN if d not in parts]
            env["PATH"] = os.pathsep.join(parts)
            self._env = env
        return dict(self._env)

    def env_with(self, extra: Mapping[str, str] | None = None, **more: str) -> dict[str, str]:
        """:attr:`env` plus extra variables (e.g. FAKE_SINGULARITY_LOG)."""
        env = self.env
        env.update(extra or {})
        env.update(more)
        return env

    # -- commands -----------------------------------------------------------------------
    def run(self, args: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
            env: Mapping[str, str] | None = None, timeout: float = 60,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run any command with :attr:`env` (plus ``env``), capturing text output."""
        full_env = self.env_with(env)
        proc = subprocess.run(list(args), cwd=cwd, env=full_env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise SlurmError(_failure(" ".join(args), proc))
        return proc

    def sbatch(self, args: Sequence[str], cwd: str | os.PathLike[str], *,
               env: Mapping[str, str] | None = None) -> int:
        """Submit with ``sbatch --parsable ARGS`` from ``cwd``; returns the job id."""
        proc = self.run(["sbatch", "--parsable", *args], cwd=cwd, env=env, timeout=60)
        match = re.match(r"\s*(\d+)", proc.stdout)
        if proc.returncode != 0 or not match:
            raise SlurmError(_failure(f"sbatch {' '.join(args)}", proc))
        return int(match.group(1))

    def test_only(self, script: str | os.PathLike[str], cwd: str | os.PathLike[str],
                  args: Sequence[str] = (), *,
                  env: Mapping[str, str] | None = None) -> tuple[bool, str]:
        """``sbatch --test-only [ARGS] SCRIPT``: (accepted, Slurm's message from stderr).

        Checks the #SBATCH header against the partition limits (EnforcePartLimits=ALL) without
        running anything; each call consumes a job id."""
        proc = self.run(["sbatch", "--test-only", *args, str(script)], cwd=cwd, env=env, timeout=60)
        return proc.returncode == 0, (proc.stderr + proc.stdout).strip()

    def run_srun(self, args: Sequence[str], cwd: str | os.PathLike[str] | None = None, *,
                 env: Mapping[str, str] | None = None, timeout: float = 60,
                 check: bool = False) -> subprocess.CompletedProcess[str]:
        """``srun ARGS`` (allocation + step, starts at once); CompletedProcess with text."""
        return self.run(["srun", *args], cwd=cwd, env=env, timeout=timeout, check=check)

    def job_info(self, job_id: int) -> dict[str, str] | None:
        """``scontrol show job -o`` as a dict, or None when the controller does not know it."""
        proc = self.run(["scontrol", "show", "job", "-o", str(job_id)], timeout=30)
        if proc.returncode != 0:
            if "Invalid job id" in proc.stderr:
                return None
            raise SlurmError(f"scontrol show job {job_id} failed:\n{proc.stderr}")
        return parse_scontrol_line(proc.stdout)

    @property
    def completions(self) -> Path:
        """Slurm's job completion log (start-slurm.sh: JobCompType=jobcomp/filetxt), one
        ``JobId=N ... JobState=...`` line for each job as it ends."""
        return self.log_dir / "jobcomp.log"

    def wait(self, job_id: int, timeout: float = 120, poll: float = 0.1, check_every: float = 2.0) -> JobResult:
        """Wait until the job reaches a final state; returns its state and exit code.

        Watches the completion log every ``poll`` s and asks the controller (``scontrol show
        job``, a process, a munge credential and a call) when the job's line appears there, and
        otherwise every ``check_every`` s: for a job pending for ever, or one the log missed.
        (Asking every 0.2 s cost ~4,500 scontrol processes a suite.) The log's line can come
        before the controller's last word: a job whose node still cleans up its steps shows
        JobState=COMPLETING for a moment, and is asked again every ``_COMPLETING_EVERY`` s.

        Raises TimeoutError (with the last state) after ``timeout`` seconds, SlurmError when
        the job is unknown (purged MinJobAge s after its end) or pending for a reason that
        can never clear (PartitionTimeLimit, ...)."""
        deadline = time.monotonic() + timeout
        ended = _CompletionLog(self.completions)
        info: dict[str, str] | None = None
        ask_at = 0.0
        while True:
            if not (ended.names(job_id) or time.monotonic() >= ask_at):
                time.sleep(poll)
                continue
            ask_at = time.monotonic() + check_every
            info = self.job_info(job_id)
            if info is None:
                raise SlurmError(f"job {job_id} is unknown to the controller (never submitted, or "
                                 "purged after MinJobAge; use min_job_age=300 to keep it longer)")
            state = info.get("JobState", "")
            if state in TERMINAL_STATES:
                return _job_result(job_id, info)
            if state == "COMPLETING":
                ask_at = min(ask_at, time.monotonic() + _COMPLETING_EVERY)
            if state == "PENDING" and info.get("Reason") in HOPELESS_REASONS:
                raise SlurmError(f"job {job_id} can never start: Reason={info['Reason']}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} not finished after {timeout} s: "
                                   f"JobState={state} Reason={info.get('Reason')}")

    def cancel(self, job_id: int) -> None:
        self.run(["scancel", str(job_id)], timeout=30, check=True)

    def log_tail(self, lines: int = 30) -> str:
        """Last lines of every daemon log, for assertion messages."""
        chunks = []
        for path in sorted(self.log_dir.glob("*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            chunks.append(f"--- {path.name} ---\n" + "\n".join(text))
        return "\n".join(chunks)


class _CompletionLog:
    """The lines a job completion log gained since this object was made, read as it grows."""

    _JOB = re.compile(r"^JobId=(\d+) ", re.M)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = self._size()
        self.jobs: set[int] = set()

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def names(self, job_id: int) -> bool:
        """Whether a line for ``job_id`` was added (a requeued job's too: the caller asks)."""
        if self._size() > self.offset:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
            complete = data[:data.rfind(b"\n") + 1]  # a line being written waits for its end
            self.offset += len(complete)
            self.jobs |= {int(n) for n in self._JOB.findall(complete.decode(errors="replace"))}
        if job_id in self.jobs:
            self.jobs.discard(job_id)
            return True
        return False


def parse_scontrol_line(line: str) -> dict[str, str]:
    """Parse one ``scontrol show ... -o`` line into {key: value} (values without spaces)."""
    return dict(re.findall(r"(?:^|\s)([A-Za-z/:_]+)=(\S*)", line.strip()))


def _failure(what: str, proc: subprocess.CompletedProcess[str]) -> str:
    return f"{what} failed (rc {proc.returncode}):\n{proc.stderr}{proc.stdout}"


def _job_result(job_id: int, info: Mapping[str, str]) -> JobResult:
    code, _, sig = info.get("ExitCode", "0:0").partition(":")
    return JobResult(job_id=job_id, state=info.get("JobState", ""), exit_code=int(code or 0),
                     signal=int(sig or 0), reason=info.get("Reason", ""), info=dict(info))


def _check_knobs(knobs: Mapping[str, object]) -> None:
    unknown = sorted(set(knobs) - KNOBS)
    if unknown:
        raise TypeError(f"unknown Slurm knob(s) {', '.join(unknown)}; "
                        f"known: {', '.join(sorted(KNOBS))}")


def _knob_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _scrubbed_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}


def _search_path() -> str:
    parts = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(parts + [d for d in _SBIN if d not in parts])


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def short_directory(directory: str | os.PathLike[str]) -> Path:
    """``directory`` if short enough for the cluster's Unix sockets, else a new dir in /tmp."""
    path = Path(directory).resolve()
    if len(str(path)) <= _MAX_DIR_LEN:
        return path
    return Path(tempfile.mkdtemp(prefix="lumi-slurm-", dir="/tmp"))
