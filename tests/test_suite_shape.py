"""The suite's own shape: every test function checks something (an assert, pytest.raises or
warns, or a helper named _assert_* / assert_*), and no assert compares constants alone. A
case that checks nothing passes whatever the code does (issue 43); per-case evidence that
each case can fail came from mutations (the issue's note), this keeps the cheap part."""

from __future__ import annotations

import ast
from pathlib import Path

from .helpers import REPO

CHECKS = {"raises", "warns", "fail", "deprecated_call"}


def _test_files() -> list[Path]:
    return sorted([*REPO.glob("tests/test_*.py"), *REPO.glob("plugins/*/tests/test_*.py")])


def problems(source: str) -> list[str]:
    """Test functions of ``source`` that check nothing, and asserts of constants alone."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.name.startswith("test_"):
            continue
        checks = False
        for inner in ast.walk(node):
            if isinstance(inner, ast.Assert):
                checks = True
                parts = [inner.test.left, *inner.test.comparators] if isinstance(inner.test, ast.Compare) else [inner.test]
                if all(isinstance(p, ast.Constant) for p in parts):
                    out.append(f"{node.name}: line {inner.lineno} asserts constants alone")
            elif isinstance(inner, ast.Call):
                name = inner.func.attr if isinstance(inner.func, ast.Attribute) else getattr(inner.func, "id", "")
                checks = checks or name in CHECKS or name.startswith(("_assert", "assert_"))
        if not checks:
            out.append(f"{node.name}: checks nothing")
    return out


def test_every_test_checks_something():
    found = {str(path.relative_to(REPO)): p for path in _test_files() if (p := problems(path.read_text()))}
    assert len(_test_files()) > 60 and found == {}


def test_a_test_that_checks_nothing_or_constants_is_found():
    source = ("def test_a():\n    run()\n\ndef test_b():\n    assert 1 == 1\n\ndef test_c():\n    _assert_one_line(x)\n\n"
              "def test_d():\n    with pytest.raises(ValueError):\n        f()\n\ndef helper():\n    pass\n")
    assert problems(source) == ["test_a: checks nothing", "test_b: line 5 asserts constants alone"]
