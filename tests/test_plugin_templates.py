"""A Jinja error in text a plugin supplies (a template file, a framework's example or smoke
test) names the plugin, the file and the line, shows no traceback and leaves no project."""

from __future__ import annotations

import types

import pytest

from lumi_scaffold import TemplateFile, cli, hookimpl
from lumi_scaffold.default_plugins._common import framework
from lumi_scaffold.errors import PluginTemplateError
from lumi_scaffold.testing import isolated_catalogue, render_project

ANSWERS = ["-d", "account=project_465000000", "-d", "framework=pytorch"]


def files_plugin(content: str) -> tuple[str, object]:
    @hookimpl
    def register_template_files(register):
        register(TemplateFile(owner="framework", owner_name="pytorch", directory="scripts", name="extra.sh", content=content))

    return "lumi-extra-files", types.SimpleNamespace(register_template_files=register_template_files)


def framework_plugin(example: str) -> tuple[str, object]:
    @hookimpl
    def register_frameworks(register):
        register(framework("jax").model_copy(update={"name": "myfw", "example": example}))

    @hookimpl
    def register_containers(register):
        from lumi_scaffold.default_plugins._common import containers

        for image in containers("jax"):
            register(image.model_copy(update={"id": image.id.replace("jax", "myfw"), "framework": "myfw",
                                              "replaced_by": image.replaced_by and image.replaced_by.replace("jax", "myfw")}))

    return "lumi-framework-myfw", types.SimpleNamespace(register_frameworks=register_frameworks,
                                                        register_containers=register_containers)


def new(template, dest, capsys, *answers: str) -> tuple[int, str]:
    code = cli.main(["new", str(dest), "--defaults", "--quiet", "--template", str(template), *answers])
    return code, capsys.readouterr().err


def test_a_plugin_file_that_fails_with_the_answers_is_one_line_and_leaves_nothing(template, tmp_path, capsys):
    dest = tmp_path / "p"
    with isolated_catalogue(files_plugin("#!/bin/bash\n\n\necho {{ project_name.nope() }}\n")):
        code, err = new(template, dest, capsys, *ANSWERS)
    assert code == 1
    assert err.startswith("lumi-scaffold: error: plugin 'lumi-extra-files': scripts/extra.sh, line 4: "
                          "UndefinedError: 'str object' has no attribute 'nope'"), err
    assert "use only the project's answers and plugin_data" in err and len(err.splitlines()) == 1
    assert "Traceback" not in err
    assert not dest.exists()


SYNTAX = "#!/bin/bash\necho ok\necho {{ project_name\n"


def test_a_syntax_error_in_a_plugin_file_is_refused_when_the_plugin_loads(template, tmp_path, capsys):
    """Parsed at load: `plugins --strict` names the file and line; copies go on without it."""
    with isolated_catalogue(files_plugin(SYNTAX)) as cat:
        assert [str(p) for p in cat.problems] == [
            "plugin 'lumi-extra-files': template file scripts/extra.sh (for framework 'pytorch'), line 3: unexpected "
            "end of template, expected 'end of print statement'; not written into projects. Fix: write a literal {{, "
            "{% or {# as {% raw %}...{% endraw %}, or close the tag"]
        assert cat.files == []
        code, err = new(template, tmp_path / "p", capsys, *ANSWERS)
    assert code == 0, err
    assert "warning: plugin 'lumi-extra-files': template file scripts/extra.sh" in err
    assert not (tmp_path / "p" / "scripts" / "extra.sh").exists()


def test_a_catalogues_problems_are_printed_by_its_first_copy_only(template, tmp_path, capsys):
    """Once per catalogue, not per Copier worker (an update runs three) or per process: a
    catalogue built again (plugins installed since) warns again."""
    warning = "warning: plugin 'lumi-extra-files': template file scripts/extra.sh"
    for again in ("a", "b"):
        with isolated_catalogue(files_plugin(SYNTAX)):
            first = new(template, tmp_path / again / "1", capsys, *ANSWERS)
            second = new(template, tmp_path / again / "2", capsys, *ANSWERS)
        assert first[0] == second[0] == 0
        assert first[1].count(warning) == 1 and warning not in second[1], (first, second)


@pytest.mark.parametrize("how", ["lumi-scaffold new", "copier copy"])
def test_a_destination_that_existed_is_left_as_it_was(template, tmp_path, capsys, how):
    """Copier removes a project it created when a copy fails, not a directory that was there:
    the plugin's text is tried before any file is written."""
    dest = tmp_path / "empty"
    dest.mkdir()
    with isolated_catalogue(files_plugin("{{ nosuch.attr }}")):
        if how == "lumi-scaffold new":
            code, err = new(template, dest, capsys, *ANSWERS)
            assert code == 1 and "scripts/extra.sh, line 1: UndefinedError: 'nosuch' is undefined" in err
        else:
            with pytest.raises(PluginTemplateError):
                render_project(template, dest, {"account": "project_465000000", "framework": "pytorch"})
    assert dest.is_dir() and list(dest.iterdir()) == []


def test_a_broken_framework_example_is_refused_at_load_or_names_plugin_and_script(template, tmp_path, capsys):
    with isolated_catalogue(framework_plugin('"""Example."""\nprint("{{ x }")\n')) as cat:
        assert "myfw" not in cat.frameworks
        assert str(cat.problems[0]) == (
            "plugin 'lumi-framework-myfw': framework 'myfw': its example (the project's train.py), line 2: unexpected "
            "'}'. Fix: write a literal {{, {% or {# as {% raw %}...{% endraw %}, or close the tag")
    dest = tmp_path / "p"
    with isolated_catalogue(framework_plugin('"""Example."""\nprint("{{ x.y }}")\n')):
        code, err = new(template, dest, capsys, "-d", "account=project_465000000", "-d", "framework=myfw")
    assert code == 1, err
    assert err.startswith("lumi-scaffold: error: plugin 'lumi-framework-myfw': Framework 'myfw' example "
                          "(the project's train.py), line 2: UndefinedError: 'x' is undefined"), err
    assert not dest.exists()


def test_plain_copier_copy_gets_a_message_copier_prints_without_traceback(template, tmp_path):
    """Copier's own CLI prints a copier UserMessageError's message alone."""
    from copier.errors import UserMessageError

    with isolated_catalogue(files_plugin("{{ 1 + nosuch.x }}")), pytest.raises(PluginTemplateError) as info:
        render_project(template, tmp_path / "p", {"account": "project_465000000", "framework": "pytorch"})
    assert isinstance(info.value, UserMessageError) and info.value.message == str(info.value)
    assert (info.value.plugin, info.value.file, info.value.line) == ("lumi-extra-files", "scripts/extra.sh", 1)
    assert not (tmp_path / "p").exists()


def test_a_good_plugin_file_still_renders(template, tmp_path, capsys):
    dest = tmp_path / "p"
    with isolated_catalogue(files_plugin("#!/bin/bash\necho {{ project_name }}\n")):
        code, err = new(template, dest, capsys, *ANSWERS, "-d", "project_name=demo")
    assert code == 0, err
    assert (dest / "scripts/extra.sh").read_text() == "#!/bin/bash\necho demo\n"
