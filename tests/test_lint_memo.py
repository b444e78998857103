"""The suite's shellcheck memo (tests/lint_memo.py) gives what shellcheck gives."""

from __future__ import annotations

from pathlib import Path

from lumi_scaffold import lint

from .lint_memo import memo_shellcheck


def _project(root: Path, sourced: str) -> Path:
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "lib.sh").write_text(sourced)
    (root / "run.sh").write_text('#!/bin/bash\n# shellcheck source=scripts/lib.sh\nsource scripts/lib.sh\necho "$VALUE" $1\n')
    return root


def test_a_hit_names_this_calls_files_and_a_changed_sourced_file_is_a_miss(tmp_path):
    calls: list[list[Path]] = []

    def counted(files, *, cwd=None):
        calls.append(list(files))
        return lint.shellcheck(files, cwd=cwd)

    memo: dict = {}
    shellcheck = memo_shellcheck(counted, memo)
    one, two = _project(tmp_path / "one", "VALUE=1\n"), _project(tmp_path / "two", "VALUE=1\n")
    first = shellcheck([one / "run.sh"], cwd=one)
    assert first and all(line.startswith(f"{one / 'run.sh'}:") for line in first), first  # SC2086
    second = shellcheck([two / "run.sh"], cwd=two)
    assert len(calls) == 1 and second == [line.replace(str(one), str(two)) for line in first]
    (two / "scripts" / "lib.sh").write_text("VALUE=2\nunused=$1\n")  # reachable by `source`: a new run
    assert shellcheck([two / "run.sh"], cwd=two) == lint.shellcheck([two / "run.sh"], cwd=two)
    assert len(calls) == 2
