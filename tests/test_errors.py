"""One error root: every error raised on purpose is a LumiScaffoldError, and the command
prints it as one line with exit code 1; the CLI and new-plugin import no cycle, and the package has no import cycle."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys

import pytest

from lumi_scaffold import _types, cli, errors

from .helpers import REPO


def test_every_error_class_derives_from_the_root():
    classes = [getattr(errors, name) for name in errors.__all__ if isinstance(getattr(errors, name), type)]
    exceptions = [c for c in classes if issubclass(c, BaseException)]
    assert {c.__name__ for c in exceptions} == {
        "DataFileError", "Interrupted", "LumiScaffoldError", "PluginDataError", "PluginTemplateError", "SlurmUnreachable",
        "UsageError", "UserMessageError"}
    assert all(issubclass(c, errors.LumiScaffoldError) for c in exceptions)
    assert issubclass(errors.DataFileError, ValueError)  # 0.2 plugins may catch ValueError
    assert issubclass(errors.PluginDataError, ValueError)


def test_no_exception_class_is_defined_outside_errors_py():
    # Classes that only signal inside one module (datafile's _Decline) are private.
    for path in sorted((REPO / "lumi_scaffold").rglob("*.py")):
        if path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                assert not any(b.endswith(("Error", "Exception", "Unreachable")) or b == "Interrupted" for b in bases), \
                    f"{path.name}: class {node.name} derives from {bases}: define it in errors.py"


def test_the_moved_errors_keep_their_old_imports_and_carry_their_data():
    from lumi_scaffold import doctor, plugin_data

    assert plugin_data.PluginDataError is errors.PluginDataError and doctor.SlurmUnreachable is errors.SlurmUnreachable
    with pytest.raises(errors.PluginDataError) as info:
        plugin_data.validate_plugin_data({"schema": "two"})
    assert (info.value.field, info.value.value) == ("plugin_data.schema", "two")
    assert info.value.message.startswith("plugin_data.schema='two': ")
    unreachable = errors.SlurmUnreachable("slurm_load_ctl: Unable to contact slurm controller")
    assert unreachable.reason == str(unreachable) == "slurm_load_ctl: Unable to contact slurm controller"


def test_plugin_problem_is_a_record_not_an_exception():
    problem = errors.PluginProblem("mine", "cannot load: ImportError: x")
    assert not isinstance(problem, BaseException) and dataclasses.is_dataclass(problem)
    assert str(problem) == "plugin 'mine': cannot load: ImportError: x"
    assert problem == errors.PluginProblem("mine", "cannot load: ImportError: x")


def test_dead_code_is_gone():
    assert not hasattr(errors, "AnswerError") and not hasattr(_types, "format_slurm_time")
    from lumi_scaffold import newplugin

    assert not hasattr(newplugin, "main") and not hasattr(cli, "CliError")


def test_cli_and_newplugin_import_no_cycle():
    code = ("import sys, lumi_scaffold.newplugin; assert 'lumi_scaffold.cli' not in sys.modules, 'newplugin imports cli'; "
            "import lumi_scaffold.cli")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    source = (REPO / "lumi_scaffold" / "newplugin.py").read_text()
    assert "from .cli" not in source and "import cli" not in source


ENTRY_POINTS = {"cli", "copier_ext", "testing"}  # what the user, Copier and plugin tests start from


def imports_of_the_package() -> dict[str, set[str]]:
    """Each lumi_scaffold module, subpackages' included (``models.base``; a package by its
    name), and the package modules it imports, at the top or inside a function (a lazy
    import closes a cycle too). An import of a name from a package counts as an import of
    the package (its __init__), one of a submodule as that submodule's."""
    package = REPO / "lumi_scaffold"

    def dotted(path: Path) -> str:
        parts = path.relative_to(package).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {dotted(p): p for p in package.rglob("*.py") if dotted(p)}

    def resolve(base: list[str], names: list[str]) -> set[str]:
        where = ".".join(base)
        found = {f"{where}.{n}" if where else n for n in names}
        return {m for m in found if m in modules} or ({where} if where in modules else set())

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = here[:len(here) - node.level + 1] + (node.module.split(".") if node.module else [])
                found |= resolve(base, [a.name for a in node.names])
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lumi_scaffold"):
                found |= resolve(node.module.split(".")[1:], [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".", 1)[1] for a in node.names if a.name.startswith("lumi_scaffold.")} & set(modules)
        graph[name] = found - {name}
    return graph


def test_the_models_import_only_the_bottom_layer():
    """models/ (the data plugins give) imports nothing above _types.py (issue 43: it
    imported jobs.OWN_OPTIONS, the rules module above it)."""
    graph = imports_of_the_package()
    assert {"models", "models.base", "models.site"} <= set(graph) and "models.base" in graph["models.site"]
    above = {(name, dep) for name, deps in graph.items() if name.startswith("models")
             for dep in deps if not dep.startswith("models") and dep != "_types"}
    assert above == set()


def test_no_module_of_the_package_is_over_600_lines():
    """A module a newcomer can read whole (issue 32): split by subject where one grows past it."""
    long = {str(path.relative_to(REPO)): n for path in sorted((REPO / "lumi_scaffold").rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > 600}
    assert long == {}

def test_the_package_has_no_import_cycle_and_no_module_imports_an_entry_point():
    graph = imports_of_the_package()
    assert {"cli", "jobs", "plugin_data"} <= set(graph) and "errors" in graph["cli"]  # the scan sees the package
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, "import cycle: " + " -> ".join(path[path.index(name):] + (name,))
        if name not in done:
            for dep in sorted(graph[name]):
                visit(dep, path + (name,))
            done.add(name)

    for name in sorted(graph):
        visit(name, ())
    upward = sorted((name, dep) for name, deps in graph.items() for dep in deps & ENTRY_POINTS)
    assert upward == [], "modules importing an entry point"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (errors.UsageError("nodes='x': not a whole number"), "lumi-scaffold: error: nodes='x': not a whole number"),
        (errors.DataFileError("a.yaml", ["a.yaml:1:1: name: Field required"]), "lumi-scaffold: error: a.yaml:1:1: name: Field required"),
        (errors.PluginTemplateError("p", "scripts/x.sh", 3, "unexpected '}'", "close the tag"),
         "lumi-scaffold: error: plugin 'p': scripts/x.sh, line 3: unexpected '}'. Fix: close the tag"),
        (errors.LumiScaffoldError("anything raised on purpose"), "lumi-scaffold: error: anything raised on purpose"),
    ],
)
def test_cli_prints_any_lumi_scaffold_error_as_one_message(monkeypatch, capsys, error, expected):
    def fail(args):
        raise error

    monkeypatch.setattr(cli, "cmd_lint", fail)
    assert cli.main(["lint", "."]) == 1
    captured = capsys.readouterr()
    assert captured.err == expected + "\n" and captured.out == ""


def test_cli_usage_errors_are_one_line_without_traceback(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "f").write_text("x")
    for args, fragment in [
        (["new", str(tmp_path / "taken"), "--defaults"], "exists and is not empty"),
        (["new", str(tmp_path / "p"), "-d", "nodes"], "--data 'nodes': write NAME=VALUE"),
        (["new", str(tmp_path / "p"), "-d", "nodes=two"], "nodes='two': not a whole number"),
        (["lint", str(tmp_path)], "does not look like a generated project"),
        (["update", str(tmp_path / "missing")], "is not a directory"),
    ]:
        assert cli.main(args) == 1, args
        err = capsys.readouterr().err
        assert err.startswith("lumi-scaffold: error: ") and fragment in err, (args, err)
        assert len(err.splitlines()) == 1, err


def test_the_built_in_plugins_use_only_the_public_api():
    """LUMI, PyTorch, JAX and the profilers are plugins like a third party's: they import
    only what `lumi_scaffold` exports (its __all__), as llm's default plugins use llm's own
    API; their own helpers (`._common`) are theirs."""
    import lumi_scaffold

    wrong = []
    for path in sorted((REPO / "lumi_scaffold" / "default_plugins").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            names = [a.name for a in node.names]
            if node.level >= 2 or (node.module or "").startswith("lumi_scaffold."):
                wrong.append(f"{path.name}: from {'.' * node.level}{node.module or ''} import {', '.join(names)}")
            elif node.module == "lumi_scaffold" and (private := [n for n in names if n not in lumi_scaffold.__all__]):
                wrong.append(f"{path.name}: {private} are not in lumi_scaffold.__all__")
    assert wrong == []


def test_every_switch_is_read_in_one_module_and_documented():
    """The LUMI_SCAFFOLD_* switches of the package are read in lumi_scaffold/settings.py only
    (a name elsewhere is a constant's value there, or a variable of the generated project),
    and docs/install.md lists each with what settings.SWITCHES says."""
    import re

    from lumi_scaffold import settings

    names = {s.name for s in settings.SWITCHES}
    for path in sorted((REPO / "lumi_scaffold").glob("*.py")):
        if path.name == "settings.py":
            continue
        text = path.read_text()
        assert not re.search(r"environ(?:\.get)?\(\s*[\"']LUMI_SCAFFOLD_|environ\[\s*[\"']LUMI_SCAFFOLD_", text), path.name
        assert not [n for n in re.findall(r"[\"'](LUMI_SCAFFOLD_[A-Z_]+)[\"']", text) if n in names], path.name
    page = (REPO / "docs/install.md").read_text()
    for switch in settings.SWITCHES:
        assert f"| `{switch.name}` | {switch.meaning} |" in page
