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


def _counted(calls: list[list[str]]):
    """lint.shellcheck, noting the names of the files of each run in ``calls``."""
    def counted(files, *, cwd=None):
        calls.append([Path(f).name for f in files])
        return lint.shellcheck(files, cwd=cwd)

    return counted


def _values_project(root: Path, assignment: str) -> Path:
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "values.sh").write_text(f"#!/bin/bash\n# shellcheck disable=SC2034\n{{\n# what it is\n{assignment}\n}}\n")
    (root / "scripts" / "run.sh").write_text('#!/bin/bash\n# shellcheck source=values.sh\nsource "$(dirname "$0")/values.sh"\n'
                                              'echo "$name"\n')
    return root


def test_a_sourced_values_file_is_seen_by_its_names_and_each_file_by_itself(tmp_path):
    calls: list[list[str]] = []
    shellcheck = memo_shellcheck(_counted(calls), {})
    files = ["scripts/run.sh", "scripts/values.sh"]
    one = _values_project(tmp_path / "one", "name='a'")
    assert shellcheck([one / f for f in files], cwd=one) == []
    # Another value for the same name: run.sh sees the same, values.sh itself is linted again.
    two = _values_project(tmp_path / "two", "name='$b'")
    assert shellcheck([two / f for f in files], cwd=two) == lint.shellcheck([two / f for f in files], cwd=two)
    assert calls == [["run.sh", "values.sh"], ["values.sh"]]
    # The name as an array: what run.sh sees has changed (SC2128), both are linted.
    three = _values_project(tmp_path / "three", "name=('a' 'b')")
    found = shellcheck([three / f for f in files], cwd=three)
    assert found == lint.shellcheck([three / f for f in files], cwd=three) and "SC2128" in "".join(found), found
    assert calls[-1] == ["run.sh", "values.sh"]


def test_a_file_that_no_source_line_names_is_not_seen_unless_a_source_cannot_be_told(tmp_path):
    calls: list[list[str]] = []
    shellcheck = memo_shellcheck(_counted(calls), {})
    one, two = _project(tmp_path / "one", "VALUE=1\n"), _project(tmp_path / "two", "VALUE=1\n")
    (one / "other.sh").write_text("#!/bin/bash\necho one\n")
    (two / "other.sh").write_text("#!/bin/bash\necho two $1\n")
    shellcheck([one / "run.sh", one / "other.sh"], cwd=one)
    assert shellcheck([two / "run.sh", two / "other.sh"], cwd=two) == lint.shellcheck([two / "run.sh", two / "other.sh"], cwd=two)
    assert calls == [["run.sh", "other.sh"], ["other.sh"]]
    # A source line whose file cannot be told (no directive, no file of that name): every file counts.
    # The same file in both, but other.sh differs between them.
    for project in (one, two):
        (project / "dynamic.sh").write_text('#!/bin/bash\nsource "$1"\necho here\n')
    shellcheck([one / "dynamic.sh"], cwd=one)
    shellcheck([two / "dynamic.sh"], cwd=two)
    assert calls[-2:] == [["dynamic.sh"], ["dynamic.sh"]]


def test_files_of_several_projects_are_each_read_in_their_own_project(tmp_path, monkeypatch):
    """lint_projects lints projects and its temporary union files in one batch: each file's
    key is read in its project (the nearest directory with a .shellcheckrc), the files of
    no project in the directory above them, never the directory above all of them (/tmp, /:
    seconds a batch); what a key holds is as before, so a file of another project is a hit."""
    from . import lint_memo

    walked: list[Path] = []
    tree = lint_memo._Tree

    def recorded(root: Path):
        walked.append(Path(root))
        return tree(root)

    monkeypatch.setattr(lint_memo, "_Tree", recorded)
    calls: list[list[str]] = []
    shellcheck = memo_shellcheck(_counted(calls), {})
    one, two = (_project(tmp_path / "deep" / name / "p", "VALUE=1\n") for name in ("a", "b"))
    for project in (one, two):
        (project / ".shellcheckrc").write_text("source-path=SCRIPTDIR\n")
    (tmp_path / "elsewhere" / "union").mkdir(parents=True)
    (tmp_path / "elsewhere" / "junk").mkdir()
    (tmp_path / "elsewhere" / "junk" / "other.sh").write_text("echo $1\n")
    loose = tmp_path / "elsewhere" / "union" / "values-0.sh"
    loose.write_text("#!/bin/bash\nname='x'\necho \"$name\"\n")
    found = shellcheck([one / "run.sh", loose, two / "run.sh"])
    assert set(walked) == {one, two, loose.parent}  # (the suite's own memo, in lint.shellcheck here, too)
    assert found == lint.shellcheck([one / "run.sh", loose, two / "run.sh"])
    assert shellcheck([two / "run.sh"]) == [line for line in found if line.startswith(str(two))]
    assert len(calls) == 1  # the same file in another project: its key, a hit
