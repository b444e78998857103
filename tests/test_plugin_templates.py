"""A Jinja error in text a plugin supplies (a template file, a framework's example or smoke
test) names the plugin, the file and the line, shows no traceback and leaves no project."""

from __future__ import annotations

import types

import copier
import pytest

from lumi_scaffold import TemplateFile, cli, hookimpl
from lumi_scaffold.default_plugins._common import framework
from lumi_scaffold.errors import PluginTemplateError
from lumi_scaffold.testing import isolated_catalogue

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


@pytest.mark.parametrize(
    ("content", "line", "reason", "fix"),
    [
        ("#!/bin/bash\necho ok\necho {{ project_name\n", 3, "TemplateSyntaxError: unexpected end of template",
         "as {% raw %}...{% endraw %}"),
        ("#!/bin/bash\n\n\necho {{ project_name.nope() }}\n", 4, "UndefinedError: 'str object' has no attribute 'nope'",
         "use only the project's answers and plugin_data"),
    ],
    ids=["syntax", "runtime"],
)
def test_broken_plugin_file_is_one_line_and_leaves_nothing(template, tmp_path, capsys, content, line, reason, fix):
    dest = tmp_path / "p"
    with isolated_catalogue(files_plugin(content)):
        code, err = new(template, dest, capsys, *ANSWERS)
    assert code == 1
    assert err.startswith(f"lumi-scaffold: error: plugin 'lumi-extra-files': scripts/extra.sh, line {line}: {reason}"), err
    assert fix in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not dest.exists()


def test_an_empty_destination_is_left_empty(template, tmp_path, capsys):
    dest = tmp_path / "empty"
    dest.mkdir()
    with isolated_catalogue(files_plugin("{% if %}")):
        code, err = new(template, dest, capsys, *ANSWERS)
    assert code == 1 and "scripts/extra.sh, line 1" in err
    assert dest.is_dir() and list(dest.iterdir()) == []


def test_broken_framework_example_names_plugin_and_script(template, tmp_path, capsys):
    dest = tmp_path / "p"
    with isolated_catalogue(framework_plugin('"""Example."""\nprint("{{ x }")\n')):
        code, err = new(template, dest, capsys, "-d", "account=project_465000000", "-d", "framework=myfw")
    assert code == 1, err
    assert err.startswith("lumi-scaffold: error: plugin 'lumi-framework-myfw': Framework 'myfw' example "
                          "(the project's train.py), line 2: TemplateSyntaxError: unexpected '}'"), err
    assert not dest.exists()


def test_plain_copier_copy_gets_a_message_copier_prints_without_traceback(template, tmp_path):
    """Copier's own CLI prints a copier UserMessageError's message alone."""
    from copier.errors import UserMessageError

    with isolated_catalogue(files_plugin("{{ 1 +  }}")), pytest.raises(PluginTemplateError) as info:
        copier.run_copy(str(template), str(tmp_path / "p"), data={"account": "project_465000000", "framework": "pytorch"},
                        defaults=True, unsafe=True, quiet=True)
    assert isinstance(info.value, UserMessageError) and info.value.message == str(info.value)
    assert (info.value.plugin, info.value.file, info.value.line) == ("lumi-extra-files", "scripts/extra.sh", 1)
    assert not (tmp_path / "p").exists()


def test_a_good_plugin_file_still_renders(template, tmp_path, capsys):
    dest = tmp_path / "p"
    with isolated_catalogue(files_plugin("#!/bin/bash\necho {{ project_name }}\n")):
        code, err = new(template, dest, capsys, *ANSWERS, "-d", "project_name=demo")
    assert code == 0, err
    assert (dest / "scripts/extra.sh").read_text() == "#!/bin/bash\necho demo\n"
