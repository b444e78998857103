# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""Why a training job stopped, said once: the fault, the evidence for the rank that caused
it, the job report's outcome and the chain's decision. Standard library and Python 3.6's
grammar: scripts/lib/job.sh runs it after the step with the node's own python3.

  python3 scripts/lib/fault.py end --status N --log FILE... [--heartbeats DIR] [--flight DIR]
          [--time-up 0|1] [--signal TERM|INT|HUP] [--chain N] [--next JOB] [--hung-before TEXT]
          [--known-issues TEXT] --run-dir DIR --job ID --out FILE
      (--status: the step's; --chain: the jobs left in the chain, this one included; --next:
      its queued job; --hung-before: its earlier hang; --known-issues: the image's) prints ONE
      line, `fault: ...` (none when the training finished), completes RUN_DIR/reports/<job>.json
      and writes to FILE cause=, decision= (finished, resume, resume-elsewhere or stop),
      exclude= (a node, only on evidence) and reason=.
  python3 scripts/lib/fault.py flight DIR
      the Flight Recorder dumps in DIR (one per rank), aligned: the collective each process
      group waits in, and the ranks that never entered it.

The faults and their decisions: docs/jobs.md's table, classify() and decide(). A hang
resumes once per chain, without a node only on evidence (culprit()).
"""

import os
import pickle
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
import jobfiles  # noqa: E402  (scripts/lib/python/jobfiles.py: the heartbeat files and the report)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ledger  # noqa: E402  (scripts/lib/ledger.py: nodes with evidence against them)

HANG = ("collective timeout", "heartbeat stall", "output stall")

# A gloo collective that gave up (gloo/transport/tcp/unbound_buffer.cc), e.g.
#   RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete
GLOO_TIMEOUT = re.compile(r"Timed out waiting (\d+)ms for (recv|send) operation to complete")
# NCCL/RCCL's watchdog in ProcessGroupNCCL.cpp, e.g.
#   [rank0]:[E626 06:24:44.159932949 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation
#   timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, ...) ran for 600030 milliseconds before timing out.
NCCL_TIMEOUT = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\] Watchdog caught collective operation timeout: "
                          r"WorkNCCL\(SeqNum=(\d+), OpType=(\w+)")
# A Python traceback line with the rank prefix torch.distributed adds: [rank0]: ...
RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:")
# scripts/lib/run.sh: `rank 3/16 node nid005000 local_rank 3 gpu ...`
RANK_LINE = re.compile(r"^rank (\d+)/\d+ node (\S+) local_rank", re.M)
# srun, when a task ends first: `srun: error: nid005001: task 15: Exited with exit code 7`
TASK_EXIT = re.compile(r"srun: error: (\S+): tasks? ([\d,\-]+): (Exited with exit code (\d+)|Killed|Terminated|"
                       r"Segmentation fault|Aborted|Bus error|[A-Z][a-z]+(?: [a-z]+)*)")
# Where srun begins to end the rest of a step: the task lines after it are its doing, not faults.
STEP_ENDING = re.compile(r"_step_signal: Terminating StepId=|\*\*\* STEP \S+ ON \S+ CANCELLED AT|Job step aborted|"
                         r"^watchdog: cancelled step")
# torchrun's record of the worker that failed first (torch.distributed.elastic's ChildFailedError):
#   Root Cause (first observed failure):  ...  rank      : 1 (local_rank: 1)  exitcode  : -9 (pid: 22156)  (SIGKILL)
ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):\n(?:.*\n){0,3}?\s*rank\s*: (\d+) \(local_rank: (\d+)\)\n"
                        r"\s*exitcode\s*: (-?\d+)[^\n]*?(\(SIG[A-Z0-9]+\))?\n")
# scripts/lib/watchdog.py dump: a rank that can answer nothing, and the stacks it had written
FROZEN = re.compile(r"^watchdog: rank (\d+) \(pid \d+\) on (\S+) is ([^:]+): it can give no stacks$", re.M)
# (faulthandler's, written by the rank: innermost frame first)
STACKS = re.compile(r"^watchdog: stacks of rank(?P<rank>\d+)@\S+ \(pid \d+\) follow\n(?:Current thread|Thread) [^\n]*\n"
                    r'\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)', re.M)
# (py-spy dump's, where the image has py-spy: a header, then each thread, innermost frame first)
PYSPY_STACKS = re.compile(r"^watchdog: stacks of rank(?P<rank>\d+)@\S+ \(pid \d+\), py-spy dump:\n"
                          r"(?:(?!watchdog: ).*\n){0,4}?Thread [^\n]*\n\s+(?P<function>\S+) \((?P<path>[^\n]+):(?P<line>\d+)\)\n",
                          re.M)
NO_PIPE = "watchdog: Flight Recorder: no rank on"
# scripts/lib/watchdog.py's lines when it stops a step, and collective_net.py's when it stops a job on TCP
STALL = re.compile(r"^watchdog: no progress for .*?last progress: rank (\d+) on (\S+) \(step (-?\d+)"
                   r"(?:.*?furthest behind: rank (\d+) on (\S+) \(step (-?\d+)\))?")
NO_BEAT = re.compile(r"^watchdog: no rank made (?:progress|its first step) within the startup allowance")
OUTPUT_STALL = re.compile(r"^watchdog: the job's output did not grow for (\d+) s \(OUTPUT_TIMEOUT=")
NET_FALLBACK = re.compile(r"\b(?P<library>NCCL/RCCL|NCCL|RCCL) talks between nodes over TCP sockets.*Stopping the job")
# What a rank's log says of a hardware fault of its GPU, a node's fault, not the code's (one
# pattern per message, its sources beside it; hardware() ties it to a node):
HARDWARE = re.compile("|".join([
    # NVIDIA GPUs: CUDA's text for an uncorrectable ECC error (cudaErrorECCUncorrectable), e.g.
    #   RuntimeError: CUDA error: uncorrectable ECC error encountered
    # from PyTorch on a cluster node that its site then found and fixed
    # (https://github.com/jade-hpc-gpu/jade-hpc-gpu.github.io/issues/194); a hardware error in
    # the maintainers' words (https://github.com/vllm-project/vllm/issues/5222,
    # https://github.com/verl-project/verl/issues/407).
    r"uncorrectable ECC error encountered",
    # AMD GPUs (the line above is CUDA's, NVIDIA's): ROCm's runtime, ROCr, prints these when the
    # kernel driver reports an uncorrectable ECC error of the GPU, and aborts the process:
    #   HW Exception by GPU node-1 (Agent handle: 0x...) reason :ECC
    #   Memory access fault by GPU node-4 (Agent handle: 0x...) on address 0x.... Reason: DRAM ECC failure.
    # Their source, AMD's code (NVIDIA's CUDA has its own text, above): the repository ROCm/ROCR-Runtime
    # at commit 013efee3e00c774e237466c9bf05f2836d151621, runtime/hsa-runtime/core/runtime/runtime.cpp
    # (HwExceptionHandler, whose cause HSA_AMD_HW_EXCEPTION_CAUSE_ECC is "SRAM ECC" in
    # hsa_ext_amd.h; VMFaultHandler, with the driver's ECC error types); the driver's event:
    # Linux commit 9b54d2017687 ("drm/amdkfd: add RAS ECC event support"). The vendor's code,
    # not a log: no public log with these lines was found.
    # Any other reason of a memory access fault (e.g. "Page not present or supervisor
    # privilege", an address not mapped for the GPU, which a kernel's bad pointer gives) is no
    # hardware message.
    r"HW Exception by GPU node-\d+ \(Agent handle: [^)]*\) reason :ECC\b",
    r"Memory access fault by GPU node-\d+ .*Reason: (?:DRAM|SRAM) ECC failure",
]))
# Left out as ambiguous, a hardware fault or the code's (AMD's and NVIDIA's GPUs alike): ROCr's
# "reason :GPU Hang" (a kernel that never ends hangs the GPU too: e.g.
# https://github.com/ROCm/legacy-rocm-build/issues/4021); CUDA's "an illegal memory access was encountered"
# and "unspecified launch failure" (the CUDA runtime API's documentation names a bad device
# pointer as a common cause) and "unknown error" (also what a GPU gone gives:
# https://github.com/proteneer/timemachine/pull/1203); "GPU has fallen off the bus" (NVIDIA's
# Xid 79: in the kernel's log, never the rank's).
# What the signal that ended the batch script (job.sh's trap, --signal) says of the job
SIGNALS = {"TERM": "SIGTERM: scancel, or Slurm ended the job", "INT": "SIGINT: Ctrl-C", "HUP": "SIGHUP: its terminal closed"}


# ---------------------------------------------------------------- evidence

def read_text(paths):
    text = []
    for path in paths:  # (job.sh gives each file once)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text.append(handle.read())
        except OSError:
            pass
    return "\n".join(text)


def behind(beats):
    """(ranks, their step, the others' newest step) when some ranks' heartbeats are behind
    the others' step, else None: every rank at one step is no evidence."""
    steps = {rank: beat.step for rank, beat in beats.items() if beat.step >= 0}
    if len(set(steps.values())) < 2:
        return None
    low = min(steps.values())
    return sorted(r for r, s in steps.items() if s == low), low, max(steps.values())


class _NoObjects(pickle.Unpickler):
    """Flight Recorder dumps hold dicts, lists, strings and numbers only: nothing else is
    made from a file (pickle would run any class it names)."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError("a Flight Recorder dump names no class ({}.{})".format(module, name))


def dumps(directory):
    """{rank: dump} of the Flight Recorder files in ``directory``: PyTorch writes one per rank,
    named by TORCH_FR_DUMP_TEMP_FILE's prefix and the rank (rank-3)."""
    found = {}
    try:
        names = sorted(os.listdir(directory)) if directory else []
    except OSError:
        names = []
    for name in names:
        match = re.search(r"(\d+)$", name)
        if not match:
            continue
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                dump = _NoObjects(handle).load()
        except (OSError, ValueError, EOFError, pickle.UnpicklingError, AttributeError, IndexError):
            continue
        if isinstance(dump, dict) and isinstance(dump.get("entries"), list):
            found[int(match.group(1))] = dump
    return found


def align(found):
    """The Flight Recorder dumps of every rank, aligned by process group and collective
    sequence number: for each group, (group, seq, collective, waiting ranks, absent ranks)
    of the first collective some rank entered and did not complete, absent: the group's
    ranks whose newest collective of the group is older. The group's ranks are its
    pg_config's where the dump has one, else the ranks that recorded the group."""
    newest = {}   # group -> rank -> newest collective_seq_id entered
    pending = {}  # group -> seq -> (name, ranks waiting in it)
    members = {}
    for rank, dump in found.items():
        config = dump.get("pg_config") if isinstance(dump.get("pg_config"), dict) else {}
        for name, value in config.items():
            ranks = value.get("ranks") if isinstance(value, dict) else None
            if isinstance(ranks, str):
                ranks = [int(r) for r in re.findall(r"\d+", ranks)]
            if isinstance(ranks, list):
                members.setdefault(str(name), set()).update(int(r) for r in ranks)
        for entry in dump["entries"]:
            if not isinstance(entry, dict) or entry.get("is_p2p") or not isinstance(entry.get("collective_seq_id"), int):
                continue
            seq, group = entry["collective_seq_id"], entry.get("process_group")
            group = str(group[0]) if isinstance(group, (list, tuple)) and group else str(entry.get("pg_id", "0"))
            newest.setdefault(group, {})[rank] = max(newest.get(group, {}).get(rank, -1), seq)
            if entry.get("state") != "completed":
                pending.setdefault(group, {}).setdefault(seq, (entry.get("profiling_name", "?"), set()))[1].add(rank)
    out = []
    for group, seqs in sorted(pending.items()):
        seq = min(seqs)
        name, waiting = seqs[seq]
        ranks = members.get(group) or set(newest.get(group, {}))
        ranks = ranks & set(found) or ranks
        absent = sorted(r for r in ranks if newest.get(group, {}).get(r, -1) < seq and r not in waiting)
        out.append((group, seq, str(name), sorted(waiting), absent))
    return out


def flight_evidence(directory):
    """(ranks that never entered the collective the others wait in, a phrase) from the
    Flight Recorder dumps; ([], why there is none) without one."""
    found = dumps(directory)
    if not found:
        return [], "no Flight Recorder dump"
    culprits = [row for row in align(found) if row[4]]
    if not culprits:
        return [], "Flight Recorder ({} dump(s)): no rank missing from a collective".format(len(found))
    group, seq, name, waiting, absent = culprits[0]
    return absent, "Flight Recorder: rank(s) {} never entered collective {} ({}, process group {}) that rank(s) {} wait in".format(
        ", ".join(map(str, absent)), seq, name, group, ", ".join(map(str, waiting)))


# ---------------------------------------------------------------- the fault

def classify(text, status, time_up, signal=""):
    """(cause, details) from the job's log; details: rank, node, step, detail where the log
    names them. ``signal``: the one that ended the batch script ('' for none)."""
    lines = text.splitlines()
    if status == 0:
        return "finished", {}
    if signal:  # (after the time-limit warning, Slurm's SIGTERM at the limit itself)
        return ("time limit", {}) if time_up else ("cancelled", {"detail": SIGNALS.get(signal, "SIG" + signal)})
    for line in lines:
        match = STALL.match(line)
        if match:
            at = 4 if match.group(4) is not None else 1  # the rank furthest behind, else the last
            facts = {"rank": int(match.group(at)), "node": match.group(at + 1), "step": int(match.group(at + 2))}
            if at == 4:
                facts["ahead"] = int(match.group(3))
            return "heartbeat stall", facts
        if NO_BEAT.match(line):
            return "no heartbeat", {}
        match = OUTPUT_STALL.match(line)
        if match:
            return "output stall", {"detail": "no output for {} s, and the script never beats".format(match.group(1))}
    for line in lines:
        fallback = NET_FALLBACK.search(line)
        if fallback:
            return "network fallback", {"rank": 0, "detail": line.strip(), "library": fallback.group("library")}
    for line in lines:
        match = NCCL_TIMEOUT.search(line)
        if match:
            return "collective timeout", {"backend": "nccl", "timed_out": int(match.group(1)),
                                          "detail": "NCCL watchdog: {} #{} timed out on rank {}".format(
                                              match.group(3), match.group(2), match.group(1))}
        match = GLOO_TIMEOUT.search(line)
        if match:
            prefix = RANK_PREFIX.match(line)
            timed_out = int(prefix.group(1)) if prefix else None
            return "collective timeout", {"backend": "gloo", "timed_out": timed_out,
                                          "detail": "gloo: timed out waiting {} ms for a {}{}".format(
                                              match.group(1), match.group(2),
                                              "" if timed_out is None else " on rank {}".format(timed_out))}
    if time_up:
        return "time limit", {}
    died = dead_rank(text)
    return ("rank died", died) if died else ("failed", {})


def dead_rank(text):
    """The rank that ended first, from torchrun's root-cause record (the global rank), else
    from srun's line for the first task that ended before srun began to end the step (under
    srun a task is a rank; under torchrun it is a node's agent, and the line names the node)."""
    causes = ROOT_CAUSE.findall(text)
    if causes:  # (one per node's agent: the one a signal ended first, else the first)
        rank, local, code, sig = next((c for c in causes if c[3]), causes[0])
        return {"rank": int(rank), "detail": "torchrun: local_rank {} exited with {}{}".format(
            local, code, " " + sig.strip("()") if sig else "")}
    torchrun = "-m torch.distributed.run " in text
    for line in text.splitlines():
        if STEP_ENDING.search(line):
            break
        match = TASK_EXIT.search(line)
        if match:
            task = match.group(2).split(",")[0].split("-")[0]
            if torchrun:
                return {"node": match.group(1), "detail": "the torchrun of task {}: {}".format(task, match.group(3))}
            return {"rank": int(task), "node": match.group(1), "detail": match.group(3)}
    return None


def odd_stacks(text):
    """(ranks, a phrase) from the stacks watchdog.py printed: the innermost frame of each
    rank's main thread; the ranks in a frame fewer share than the one most share are named
    when all the others are in that one frame (where they wait for them)."""
    where = {}
    for match in [*STACKS.finditer(text), *PYSPY_STACKS.finditer(text)]:
        where[int(match["rank"])] = "{} ({}:{})".format(match["function"], os.path.basename(match["path"]), match["line"])
    if len(where) < 2:
        return [], ""
    frames = {}
    for rank, frame in where.items():
        frames.setdefault(frame, []).append(rank)
    common = max(frames, key=lambda f: len(frames[f]))
    odd = sorted(r for f, ranks in frames.items() if f != common for r in ranks)
    if not odd:
        return [], "stacks: every rank in {}".format(common)
    if len(frames[common]) <= len(odd):
        return [], "stacks: the ranks are in {} different places".format(len(frames))
    return odd, "stacks: rank(s) {} in {}, the other {} in {}".format(
        ", ".join(map(str, odd)), "; ".join(sorted({where[r] for r in odd})), len(frames[common]), common)


def culprit(cause, facts, text, beats, flight_dir):
    """Fills rank, node, step and the evidence for a hang; returns the node to exclude ('' for
    none: no evidence)."""
    nodes = {rank: beat.node for rank, beat in beats.items()}
    nodes.update((int(rank), node) for rank, node in RANK_LINE.findall(text))
    ranks, evidence, exclude, of_node = [], [], "", False
    if cause in HANG:
        # Evidence, strongest first: the Flight Recorder (the rank that never entered the
        # collective the others wait in), process states (a stopped rank), stacks (a rank
        # elsewhere than the others), heartbeats (a rank behind). Only the Flight Recorder and
        # heartbeats speak against a node (a stopped process or a rank in other code does not).
        ranks, said = flight_evidence(flight_dir)
        of_node = bool(ranks)
        if not ranks and (facts.get("backend") == "gloo" or NO_PIPE in text):
            said = ("Flight Recorder: none (only a NCCL/RCCL process group of PyTorch has one; "
                    "the ranks had no dump pipe)")
        evidence.append(said)
        frozen = FROZEN.findall(text)
        if frozen:
            evidence.append("process state: " + ", ".join("rank {} on {} {}".format(r, n, what) for r, n, what in frozen))
            ranks = ranks or sorted(int(r) for r, _, _ in frozen)
        odd, said = odd_stacks(text)
        if said:
            evidence.append(said)
            ranks = ranks or odd
        late = behind(beats)
        if late:
            evidence.append("heartbeats: rank(s) {} at step {}, the others at step {}".format(
                ", ".join(map(str, late[0])), late[1], late[2]))
            of_node = of_node or not ranks
            ranks = ranks or late[0]
        elif beats:
            evidence.append("heartbeats: every rank at step {}".format(max(b.step for b in beats.values())))
            if not ranks:  # no rank to blame: the watchdog's "furthest behind" is only the oldest beat
                facts.pop("rank", None)
                facts.pop("node", None)
        elif cause == "heartbeat stall" and "ahead" in facts and facts["step"] < facts["ahead"] and not ranks:
            ranks, of_node = [facts["rank"]], True
        if ranks:
            where = sorted({nodes.get(r, "") for r in ranks})
            if len(where) == 1 and where[0] and of_node:
                exclude = where[0]
            facts["rank"], facts["node"] = ranks[0], nodes.get(ranks[0], facts.get("node", ""))
            if len(ranks) > 1:
                facts["ranks"] = ranks
        elif facts.get("timed_out") is not None:
            evidence.append("rank {}{} timed out waiting; the rank it waited for is not named".format(
                facts["timed_out"], " on " + nodes[facts["timed_out"]] if facts["timed_out"] in nodes else ""))
    elif cause in ("rank died", "failed"):
        exclude = hardware(facts, text, nodes, evidence)
    if "rank" in facts and not facts.get("node"):
        facts["node"] = nodes.get(facts["rank"], "")
    if "step" not in facts and beats:
        facts["step"] = beats[facts["rank"]].step if facts.get("rank") in beats else max(b.step for b in beats.values())
    facts["evidence"] = "; ".join(evidence)
    return exclude


def hardware(facts, text, nodes, evidence):
    """The node a hardware message (HARDWARE) of the log is tied to ('' for none), said in
    ``evidence``. The log merges every rank's output: a message is a rank's by its [rankN]:
    prefix (torch.distributed's), else the node's of the rank that ended first, else the
    job's only node; a message tied to none of them blames no node."""
    found = [l.strip() for l in text.splitlines() if HARDWARE.search(l)]
    if not found:
        return ""
    said = found[0] if len(found[0]) <= 240 else found[0][:237] + "..."
    ranks = sorted({int(m.group(1)) for m in (RANK_PREFIX.match(l) for l in found) if m})
    everyone = sorted(set(nodes.values()))
    if ranks:
        where = sorted({nodes.get(r, "") for r in ranks})
        whose = "of rank{} {}".format("s" if len(ranks) > 1 else "", ", ".join(map(str, ranks)))
        untied = "its ranks {} ran on {}".format(", ".join(map(str, ranks)), ", ".join(w or "?" for w in where))
    elif facts.get("rank") is not None or facts.get("node"):
        where = [facts.get("node") or nodes.get(facts["rank"], "")]
        whose = "in the log; {} ended first".format(
            "rank {}".format(facts["rank"]) if facts.get("rank") is not None else "the task on " + where[0])
        untied = "no [rankN]: prefix, and the log names no node of rank {}, which ended first".format(facts.get("rank"))
    else:
        where = everyone if len(everyone) == 1 else []
        whose = "in the log of the job's only node"
        untied = "no [rankN]: prefix, and no rank named as the one that ended first"
    if len(where) != 1 or not where[0]:
        evidence.append("hardware message not tied to one node ({}; no node blamed): {}".format(untied, said))
        return ""
    if facts.get("rank") is None and ranks:
        facts["rank"] = ranks[0]
    facts["node"] = facts.get("node") or where[0]
    evidence.append("hardware message {} (on {}): {}".format(whose, where[0], said))
    return where[0]


def _without(node, chain):
    """How the run goes on without ``node``: in the job that replaces this one (``chain`` > 1),
    else by submitting again with --exclude."""
    if chain > 1:
        return "a job that replaces this one resumes without it"
    return "submitting again resumes without it (sbatch --exclude={} ...)".format(node)


def decide(cause, facts, exclude, hung_before, known_issues, status, chain=1, next_job=""):
    """(decision, reason): finished, resume, resume-elsewhere or stop. ``chain``: the jobs
    this one's chain has left (1: none after it); ``next_job``: the one already queued."""
    if cause == "finished":
        return "finished", "training finished"
    if cause == "time limit":
        return "resume", "Slurm's time-limit warning came: {} resumes from the newest checkpoint".format(
            "job " + next_job if next_job else "submitting again")
    if cause in HANG:
        if hung_before:
            return "stop", "the second hang of this chain (the first: {})".format(hung_before)
        how = "a job that replaces this one" if chain > 1 else "submitting again"
        if exclude:
            return "resume-elsewhere", "its ranks on {} are behind the others: {}".format(exclude, _without(exclude, chain))
        issues = known_issues or "none recorded for this image (scripts/values.sh)"
        if facts.get("rank") is not None:  # (a stopped rank, or one elsewhere in the code than the others)
            return "resume", ("the evidence names rank {} but nothing against its node: {} resumes on any nodes; "
                              "the image's known issues: {}".format(facts["rank"], how, issues))
        return "resume", ("software hang suspected (no rank is shown behind the others): {} resumes on any nodes; "
                          "the image's known issues: {}".format(how, issues))
    if exclude:  # (a rank that died with a hardware message tied to its node: hardware())
        if hung_before:
            return "stop", "this chain already replaced a job once (after: {})".format(hung_before)
        return "resume-elsewhere", "a hardware fault of {}: {}".format(exclude, _without(exclude, chain))
    if cause == "cancelled":
        return "stop", "the job was cancelled; submitting again resumes the run from its newest checkpoint"
    if cause == "no heartbeat":
        return "stop", ("no rank reached its first step within STARTUP_TIMEOUT: the next job would start the same way "
                        "(raise STARTUP_TIMEOUT for a slow start; the stacks above show where the ranks were)")
    if cause == "network fallback":
        return "stop", "{} fell back to TCP sockets: the next job would too (the fix above)".format(facts.get("library", "NCCL/RCCL"))
    first = ""
    if cause == "rank died":
        who = "rank {} ".format(facts["rank"]) if facts.get("rank") is not None else ""
        first = ": {}on {} first ({})".format(who, facts.get("node") or "?", facts.get("detail", ""))
    return "stop", ("training failed (status {}) before Slurm's time-limit warning{}, and the next job would fail "
                    "the same way".format(status, first))


def line(cause, facts, decision, reason):
    """The one line of the log."""
    where = []
    if facts.get("ranks"):
        where.append("ranks {}".format(", ".join(map(str, facts["ranks"]))))
    elif facts.get("rank") is not None:
        where.append("rank {}".format(facts["rank"]))
    elif cause != "cancelled":
        where.append("no rank to blame")
    if facts.get("node"):
        where.append("on {}".format(facts["node"]))
    if facts.get("step") is not None and facts["step"] >= 0:
        where.append("after step {}".format(facts["step"]))  # (its last heartbeat: at least that far)
    text = "fault: " + ("hang ({})".format(cause) if cause in HANG else cause) + (": " + " ".join(where) if where else "")
    if facts.get("detail"):
        text += " ({})".format(facts["detail"])
    if facts.get("evidence"):
        text += "; " + facts["evidence"]
    return text + ". Next: {}: {}.".format(decision.replace("-", " "), reason)


# ---------------------------------------------------------------- commands

def end(args):
    text = read_text(args.log)
    beats = jobfiles.heartbeats(args.heartbeats)
    cause, facts = classify(text, args.status, args.time_up, args.signal)
    exclude = culprit(cause, facts, text, beats, args.flight) if cause != "finished" else ""
    decision, reason = decide(cause, facts, exclude, args.hung_before, args.known_issues, args.status, args.chain,
                              args.next)
    against, exclude = exclude, exclude if decision == "resume-elsewhere" else ""
    stopped_by = None
    if cause != "finished":
        stopped_by = {"cause": cause, "hang": cause in HANG, "rank": facts.get("rank"), "node": facts.get("node") or None,
                      "step": facts.get("step"), "detail": facts.get("detail", ""),
                      "evidence": facts.get("evidence", ""), "decision": decision, "exclude": exclude or None,
                      "reason": reason}
        print(line(cause, facts, decision, reason), flush=True)
    if against and args.ledger_days and int(args.ledger_days) > 0:  # evidence against a node: the project's ledger
        said = line(cause, facts, decision, reason)[len("fault: "):].split(". Next: ")[0]
        ledger.add(against, args.job, said, int(args.ledger_days), args.support)
    if args.run_dir and args.job:
        steps = [b.step for b in beats.values() if b.step >= 0]
        try:
            jobfiles.complete_report(args.run_dir, args.job, args.status, cause, "hang" if cause in HANG else cause,
                                     stopped_by, max(steps) if steps else None)
        except OSError as exc:
            print("fault: the job report could not be written ({})".format(exc), file=sys.stderr)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write("cause={}\ndecision={}\nexclude={}\nreason={}\n".format(
                cause, decision, exclude, reason.replace("\n", " ")))
    return 0


def flight(args):
    found = dumps(args.dir)
    if not found:
        print("flight: no Flight Recorder dump in {}".format(args.dir))
        return 1
    for group, seq, name, waiting, absent in align(found):
        print("flight: process group {}: collective {} ({}): waiting: rank(s) {}; never entered: {}".format(
            group, seq, name, ", ".join(map(str, waiting)) or "-", ", ".join(map(str, absent)) or "no rank"))
    return 0


def main(argv):
    import argparse

    parser = argparse.ArgumentParser(prog="fault.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    command = sub.add_parser("end")  # (its arguments: the module's docstring)
    command.add_argument("--status", type=int, required=True)
    command.add_argument("--log", nargs="*", default=[])
    command.add_argument("--time-up", type=int, default=0)
    command.add_argument("--chain", type=int, default=1)
    for name in ("heartbeats", "flight", "signal", "hung-before", "next", "known-issues", "run-dir", "job", "out",
                 "ledger-days", "support"):
        command.add_argument("--" + name, default="")
    sub.add_parser("flight").add_argument("dir")
    args = parser.parse_args(argv)
    if args.command in ("end", "flight"):
        return end(args) if args.command == "end" else flight(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
