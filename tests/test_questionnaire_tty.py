"""The interactive questionnaire, driven in a pseudo-terminal as a user types: each answer
`-d` refuses is refused (or its choice disabled) there with the same one-line reason."""

from __future__ import annotations

import os
import re
import sys

import pytest

from lumi_scaffold import cli
from lumi_scaffold.cli_data import whole_number_problem
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.questions import check

from .helpers import REPO

pexpect = pytest.importorskip("pexpect")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|[\r\x07]")
BASE = {"project_name": "demo", "site": "lumi", "account": "project_465001234", "framework": "pytorch",
        "container": "recommended", "gpus_per_node": 8}


def _reasons() -> dict[str, str]:
    """What `-d` says for each case, as lumi-scaffold new prints it after 'name: '."""
    cat = get_catalogue()
    return {
        "account": check("account", "465001234", BASE, cat),
        "nodes": whole_number_problem("nodes", "yes"),
        "partition": check("partition", "small-g", {**BASE, "nodes": 10}, cat),
        "walltime": check("walltime", "5-00:00:00", {**BASE, "nodes": 10, "partition": "standard-g"}, cat),
    }


def test_the_reasons_are_what_dash_d_prints(tmp_path, capsys):
    reasons = _reasons()
    assert "Did you mean project_465001234?" in reasons["account"]
    assert "small-g allows at most 4 nodes, not 10. Use partition=standard-g or nodes=4." == reasons["partition"]
    assert "CHAIN=N sbatch jobs/train.sbatch" in reasons["walltime"]
    for name, data in (("account", ["account=465001234"]), ("nodes", ["nodes=yes"]),
                       ("partition", ["nodes=10", "partition=small-g"]), ("walltime", ["nodes=10", "walltime=5-00:00:00"])):
        args = [a for d in data for a in ("-d", d)]
        assert cli.main(["new", str(tmp_path / name), "--defaults", "-q", *args]) == 1
        err = capsys.readouterr().err.strip()
        assert err.endswith(reasons[name]), (name, err)
        assert not (tmp_path / name).exists()


def test_the_questionnaire_in_a_terminal_refuses_what_dash_d_refuses(tmp_path):
    reasons = _reasons()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "400", "LINES": "60",
           "PROMPT_TOOLKIT_NO_CPR": "1"}  # no terminal here answers where the cursor is: no waiting for it
    child = pexpect.spawn(sys.executable, ["-m", "lumi_scaffold.cli", "new", str(tmp_path / "p")], env=env,
                          encoding="utf-8", dimensions=(60, 400), timeout=30)
    log: list[str] = []
    child.logfile_read = type("Log", (), {"write": lambda self, s: log.append(s), "flush": lambda self: None})()

    def answer(prompt: str, text: str | None, refused: str = "") -> None:
        """Wait for ``prompt``; type ``text`` over the default (Enter alone for None)."""
        if prompt:
            child.expect(prompt)
        if text is not None:
            child.sendcontrol("u")
            child.send(text)
        child.send("\r")
        if refused:
            # The prompt checks as it is typed and redraws only what changed from the last
            # message: Ctrl-L (after Enter) redraws the screen, the message whole.
            child.sendcontrol("l")
            child.expect_exact("\x1b[2J")  # the screen cleared: what follows is drawn whole
            child.expect(re.escape(refused))

    try:
        answer("Project name", None)
        answer("Which site", None)
        answer("Slurm account", "465001234", "Did you mean project_465001234?")
        answer("", "project_465001234")  # the same prompt, again
        answer("framework", None)
        answer("Container image", None)
        answer("Nodes per training job", "yes", "not a whole number")
        answer("", "10")
        answer("GPUs", None)
        child.expect("Slurm partition")
        child.expect("standard-g")  # the list drawn
        answer("", None)  # the default: standard-g
        answer("Wall time", "5-00:00:00", "resuming from the last checkpoint.")
        child.sendcontrol("c")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    screen = _ANSI.sub("", "".join(log))
    flat = re.sub(r"\s+", " ", screen)
    for name, reason in reasons.items():
        assert re.sub(r"\s+", " ", reason) in flat, (name, reason, screen[-3000:])
    # small-g offered but disabled, with the reason beside it; never chosen
    assert re.search(r"small-g[^\n]*\(" + re.escape(reasons["partition"]), screen), screen[-3000:]
    assert "Invalid input" not in screen
    assert not (tmp_path / "p").exists()
