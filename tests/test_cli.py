"""The lumi-scaffold command's conventions: --version, help, completion, relative paths,
progress lines, and one line (never a traceback, never a half-written project) for every
bad answer, data file, destination or Ctrl-C."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lumi_scaffold import __version__, cli, plugins
from lumi_scaffold.questions import TEST_SITES_ENV
from lumi_scaffold.update import UpdateResult

from .helpers import REPO, render

GOOD = ["-d", "project_name=demo", "-d", "account=project_465001234"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lumi_scaffold.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_version_and_help_without_arguments():
    version = run_cli("--version")
    assert (version.returncode, version.stdout) == (0, f"lumi-scaffold {__version__}\n")
    bare = run_cli()
    assert bare.returncode == 0 and bare.stdout.startswith("usage: lumi-scaffold") and "completion" in bare.stdout
    assert bare.stderr == ""


@pytest.mark.parametrize("args", [["new"], ["frobnicate"], ["new", "p", "--bogus"], ["completion", "fish"]])
def test_a_command_line_argparse_refuses_is_one_line(capsys, args):
    with pytest.raises(SystemExit) as stop:
        cli.main(args)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("lumi-scaffold") and "error:" in err and "--help" in err


def _complete(script: str, *words: str) -> list[str]:
    """What the completion function offers for the last of ``words``."""
    quoted = " ".join(f"'{w}'" for w in words)
    code = f'{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _lumi_scaffold; printf "%s\\n" "${{COMPREPLY[@]}}"'
    result = subprocess.run(["bash", "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_bash_completion_offers_commands_options_and_questions(capsys):
    assert cli.main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0
    assert _complete(script, "lumi-scaffold", "ne") == ["new", "new-plugin"]
    assert _complete(script, "lumi-scaffold", "update", "--pr") == ["--pretend"]
    assert _complete(script, "lumi-scaffold", "new", "p", "-d", "node") == ["nodes="]
    assert _complete(script, "lumi-scaffold", "completion", "") == ["bash", "zsh"]
    assert cli.main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out
    assert "bashcompinit && bashcompinit\n" in zsh and zsh.endswith(script.split("\n", 1)[1])


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh is not installed")
def test_zsh_registers_the_completion_and_reads_its_words(capsys):
    assert cli.main(["completion", "zsh"]) == 0
    script = capsys.readouterr().out
    code = (f"{script}\nprint -r -- ${{_comps[lumi-scaffold]}}\n"
            "COMP_WORDS=(lumi-scaffold new p -d nod); COMP_CWORD=4; _lumi_scaffold; print -r -- ${COMPREPLY[7]}")
    result = subprocess.run(["zsh", "-f", "-c", code], capture_output=True, text=True)
    assert result.stdout.splitlines() == ["_bash_complete -o filenames -F _lumi_scaffold", "nodes="], result.stderr


# ---------------------------------------------------------------- the fuzz list


def _data_file(tmp_path: Path, text: str | bytes) -> list[str]:
    path = tmp_path / "answers.yml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return ["--data-file", str(path)]


BAD_DATA = [
    (["-d", "nod=2"], "no question 'nod'. Fix: did you mean nodes?"),
    (["-d", "prestage=maybe"], "prestage='maybe': not a yes/no answer"),
    (["-d", "nodes=2.5"], "nodes='2.5': not a whole number"),
    (["-d", "nodes=٢"], "not a whole number"),
    (["-d", "nodes=2 nodes"], "not a whole number"),
    (["-d", "nodes="], "not a whole number"),
    (["-d", "nodes=0"], "nodes: 0 nodes is out of range"),
    (["-d", "walltime=01: 00:00"], "walltime: '01: 00:00' is not a Slurm time"),
    (["-d", "walltime=01:00:00\n2"], "is not a Slurm time"),
    (["-d", "walltime=０1:00:00"], "is not a Slurm time"),
    (["-d", "walltime=1-00:00:00:00"], "is not a Slurm time"),
    (["-d", "walltime=1h"], "is not a Slurm time"),
    (["-d", "walltime=00:61:00"], "minutes and seconds below 60"),
    (["-d", "walltime=5-00:00:00"], "standard-g limit of 2-00:00:00. Use walltime=2-00:00:00. For a longer run, CHAIN=N sbatch"),
    (["-d", "project_name=de mo"], "is not a valid project name"),
    (["-d", "project_name=Demo"], "is not a valid project name"),
    (["-d", "account=project_465001234\nx"], "is not a lumi project account"),
    (["-d", "account=465001234"], "is not a lumi project account (like project_465000000). Did you mean project_465001234?"),
    (["-d", "profile_rank=3"], "profile_rank='3' applies only with a profiler"),
    (["-d", "site=nowhere"], "unknown site 'nowhere'"),
    (["-d", "framework=tensorflow"], "framework: "),
    (["-d", "container=custom", "-d", "container_path=rel.sif"], "must be an absolute path"),
    (["-d", "extra_requirements=$(reboot)"], "is not a pip requirement"),
    (["-d", "plugin_data=x"], "plugin_data='x': not JSON"),
    (["-d", "gpus_per_node"], "write NAME=VALUE"),
    (["-d", "=2"], "write NAME=VALUE"),
]
BAD_FILES = [
    ("nodes: 2\nnodes: 3\n", "answers.yml:2:1: not valid YAML"),
    ("nodes: [1,\n", "not valid YAML"),
    ("nodes: !!python/object/apply:os.system ['true']\n", "not valid YAML"),
    ("nodes: !mine 2\n", "not valid YAML"),
    ("\tnodes: 2\n", "not valid YAML"),
    ("nodes: 2.5\n", "nodes=2.5: not a whole number"),
    ("nodes: 2.0\n", "nodes=2.0: not a whole number"),
    ("nodes: true\n", "nodes=True: not a whole number"),
    ("prestage: 1\n", "prestage=1: not a yes/no answer"),
    ("prestage: maybe\n", "not a yes/no answer"),
    ("walltime: 3600\n", "walltime=3600: expected text"),
    ("extra_requirements: 12\n", "extra_requirements=12: expected text"),
    ("walltime: '01:00:00 x'\n", "is not a Slurm time"),
    ("- nodes\n", "expected a mapping of question: answer, found list"),
    ("just text\n", "expected a mapping of question: answer, found str"),
    ("", "expected a mapping of question: answer, found NoneType"),
    (b"\xff\xfe nodes: 2\n", "cannot read it"),
    ("nodz: 2\n", "no question 'nodz'"),
]


def _assert_one_line(capsys, code: int, fragment: str, dest: Path) -> None:
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("lumi-scaffold: error: ") and fragment in err, err
    assert not dest.exists() or not any(dest.iterdir())


@pytest.mark.parametrize(("args", "fragment"), BAD_DATA, ids=[" ".join(a) for a, _ in BAD_DATA])
def test_bad_data_is_one_line(template, tmp_path, capsys, args, fragment):
    dest = tmp_path / "p"
    code = cli.main(["new", str(dest), "--template", str(template), "--defaults", "-q", *GOOD, *args])
    _assert_one_line(capsys, code, fragment, dest)


@pytest.mark.parametrize(("text", "fragment"), BAD_FILES, ids=[repr(t)[:40] for t, _ in BAD_FILES])
def test_bad_data_file_is_one_line(template, tmp_path, capsys, text, fragment):
    dest = tmp_path / "p"
    code = cli.main(["new", str(dest), "--template", str(template), "--defaults", "-q", *GOOD, *_data_file(tmp_path, text)])
    _assert_one_line(capsys, code, fragment, dest)


def test_bad_destinations_and_template_are_one_line(template, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    for dest, extra, fragment in [
        (tmp_path / "file", [], "is a file, not a directory"),
        (tmp_path / "file" / "p", [], "is a file, not a directory"),
        (tmp_path / "p", ["--template", str(tmp_path / "nowhere")], f"template {tmp_path / 'nowhere'}: "),
        (tmp_path / "p", ["--data-file", str(tmp_path / "missing.yml")], "cannot read it: No such file"),
    ]:
        code = cli.main(["new", str(dest), "--template", str(template), "--defaults", "-q", *GOOD, *extra])
        _assert_one_line(capsys, code, fragment, tmp_path / "p")


def test_the_test_site_is_offered_only_when_asked_for(template, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(TEST_SITES_ENV)
    code = cli.main(["new", str(tmp_path / "p"), "--template", str(template), "--defaults", "-q", "-d", "site=local"])
    _assert_one_line(capsys, code, f"site 'local' is for lumi-scaffold's own tests. Set {TEST_SITES_ENV}=1", tmp_path / "p")


def test_ctrl_c_in_the_questionnaire_is_one_line_and_exit_130(template, tmp_path, capsys, monkeypatch):
    import copier._main

    asked = []

    def interrupted(questions, answers):
        asked.append(questions[0]["name"])
        raise KeyboardInterrupt

    monkeypatch.setattr(copier._main, "unsafe_prompt", interrupted)
    dest = tmp_path / "p"
    assert cli.main(["new", str(dest), "--template", str(template), "-d", "project_name=demo"]) == 130
    err = capsys.readouterr().err
    assert asked == ["site"]
    assert err.splitlines()[-1] == "lumi-scaffold: error: stopped at question 'site' (Ctrl-C); nothing was generated"
    assert "Traceback" not in err and "AnswersMap" not in err and not dest.exists()


# ---------------------------------------------------------------- placeholders


@pytest.mark.parametrize(("answers", "warned"), [
    (["-d", "account=project_465001234"], ""),
    ([], "account=project_465000000 (LUMI's example, not your project)"),
    (["-d", "account=project_465001234", "-d", "container=custom"], "container_path=/project/project_465001234/containers/p.sif"),
])
def test_placeholders_left_by_defaults_are_one_warning(template, tmp_path, capsys, answers, warned):
    code = cli.main(["new", str(tmp_path / "p"), "--template", str(template), "--defaults", "-q", *answers])
    err = capsys.readouterr().err
    assert code == 0, err
    if not warned:
        assert err == ""
    else:
        assert len(err.splitlines()) == 1 and err.startswith("lumi-scaffold: warning: placeholder answers left: ")
        assert warned in err and "lumi-scaffold update -d" in err


def test_plain_copier_defaults_name_the_placeholder_where_it_is_copied_and_in_the_readme(template, tmp_path):
    """`copier copy --defaults` (no lumi-scaffold new to warn): Copier's message after the copy
    warns with the fix, the README marks the account with the command, and the smoke job
    carries the line sbatch refuses it with; a real account gets none of it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}

    def copy(dest: Path, *data: str) -> subprocess.CompletedProcess:
        args = [arg for item in data for arg in ("-d", item)]
        return subprocess.run([sys.executable, "-m", "copier", "copy", "--trust", "--defaults", *args, str(template), str(dest)],
                              env=env, capture_output=True, text=True, timeout=300)

    result = copy(tmp_path / "p")
    assert result.returncode == 0, result.stderr
    warned = [line for line in (result.stdout + result.stderr).splitlines() if "placeholder" in line]
    assert warned == ["WARNING: placeholder answer account=project_465000000 (LUMI's example, not your project); every job "
                      "uses it. Fix: after the first commit, lumi-scaffold update -d account=<your project>"]
    readme = (tmp_path / "p/README.md").read_text()
    assert "| Account | `project_465000000` (**placeholder**: see below) |" in readme
    assert ("- `account=project_465000000` (LUMI's example, not your project): "
            "`lumi-scaffold update -d account=<your project>`") in readme
    smoke = (tmp_path / "p/jobs/smoke-test.sbatch").read_text()
    assert ('#SBATCH --placeholder-account="project_465000000 is LUMI\'s example, not your project. Fix: lumi-scaffold '
            'update -d account=<your project>"') in smoke.splitlines()
    header = [line for line in smoke.splitlines() if line.startswith("#SBATCH")]
    assert header[-1].startswith("#SBATCH --placeholder-account=")  # read by sbatch: before the first command
    for name in ("train.sbatch", "sweep.sbatch"):
        assert "placeholder" not in (tmp_path / "p/jobs" / name).read_text()

    result = copy(tmp_path / "q", "account=project_465001234")
    assert result.returncode == 0, result.stderr
    assert "placeholder" not in result.stdout + result.stderr
    assert "placeholder" not in (tmp_path / "q/README.md").read_text().lower()
    assert "placeholder" not in (tmp_path / "q/jobs/smoke-test.sbatch").read_text()


def test_a_site_whose_example_account_works_has_no_placeholder(template, tmp_path, monkeypatch):
    """(The local test site: its Slurm takes any account.)"""
    cat = plugins.get_catalogue()
    lumi = cat.sites["lumi"]
    monkeypatch.setitem(cat.sites, "lumi", lumi.model_copy(update={"account": lumi.account.model_copy(update={"example_works": True})}))
    p = render(template, tmp_path / "p")
    assert "placeholder" not in (p / "jobs/smoke-test.sbatch").read_text()
    assert "placeholder" not in (p / "README.md").read_text().lower()


# ---------------------------------------------------------------- lint, doctor, update


@pytest.fixture
def project(template, tmp_path_factory) -> Path:
    return render(template, tmp_path_factory.mktemp("work") / "proj", account="project_465001234")


def test_lint_and_doctor_take_a_relative_path(project, capsys, monkeypatch):
    monkeypatch.chdir(project.parent)
    assert cli.main(["lint", "proj"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "clean\n", captured.out
    assert captured.err.startswith("lumi-scaffold: running bash -n, shellcheck")
    seen = []
    monkeypatch.setattr("lumi_scaffold.update.project_notices", lambda p, answers=None: seen.append(p) or [])
    assert cli.main(["doctor", "proj"]) == 0
    assert capsys.readouterr().out.endswith("No problems found.\n") and seen == [project]


def test_update_takes_a_relative_path_and_says_what_takes_time(project, capsys, monkeypatch):
    (project / "new-file").write_text("x")
    assert cli.main(["update", str(project)]) == 1
    assert capsys.readouterr().err.startswith("lumi-scaffold: error: ")  # the quick checks before the progress line
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "generated"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    seen = []
    monkeypatch.setattr("lumi_scaffold.update.update_project", lambda p, *a, **k: seen.append(p) or UpdateResult())
    monkeypatch.chdir(project.parent)
    assert cli.main(["update", "proj"]) == 0
    assert seen == [project]
    assert capsys.readouterr().err == "lumi-scaffold: rendering the old and new template versions (this takes a few seconds)...\n"
    assert cli.main(["update", "proj", "-q"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", ["update", "doctor", "lint", "explain"])
def test_an_answers_file_with_a_yaml_error_is_one_line(project, capsys, command):
    answers = project / ".copier-answers.yml"
    answers.write_text(answers.read_text() + "site: [\n")
    assert cli.main([command, str(project)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"answers file {answers}:" in err and "not valid YAML" in err and "git checkout -- .copier-answers.yml" in err


def test_update_after_the_plugin_was_uninstalled_names_it(template, tmp_path, capsys, monkeypatch):
    project = render(template, tmp_path / "p", site="local", account="local", partition="debug", gpus_per_node=1)
    monkeypatch.setenv(plugins.ENV_DISABLE, "lumi-site-local,lumi-site-frontier,lumi-framework-deepspeed")
    plugins.reset()
    assert cli.main(["update", str(project)]) == 1
    err = capsys.readouterr().err
    assert err == ("lumi-scaffold: error: plugin lumi-site-local made this project (site 'local') and is not "
                   "installed: pip install lumi-site-local\n")


def test_the_console_script_never_shows_a_traceback(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "bad.yml").write_text("nodes: 1\nnodes: 2\n")
    for args in (["new", "file", "--defaults"], ["new", "p", "--defaults", "--data-file", "bad.yml"],
                 ["lint", "nowhere"], ["update", "file"]):
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.startswith("lumi-scaffold: error: ") and len(result.stderr.splitlines()) == 1, result.stderr


def test_ctrl_c_while_rendering_leaves_no_half_written_project(template, tmp_path, capsys, monkeypatch):
    import copier._main

    def interrupted(worker):
        worker.subproject.local_abspath.mkdir(parents=True, exist_ok=True)
        (worker.subproject.local_abspath / "half.txt").write_text("x")
        raise KeyboardInterrupt

    monkeypatch.setattr(copier._main.Worker, "_render_template", interrupted)
    dest = tmp_path / "p"
    assert cli.main(["new", str(dest), "--template", str(template), "--defaults", "-q", *GOOD]) == 130
    assert capsys.readouterr().err == "lumi-scaffold: error: stopped (Ctrl-C); nothing was generated\n"
    assert not dest.exists()


def test_the_bundled_templates_questions_are_copier_ymls(capsys):
    from lumi_scaffold.bundle import SOURCE

    from lumi_scaffold.cli_data import bundled_questions

    assert cli.question_types(str(REPO)) == bundled_questions() == cli.question_types(SOURCE)
    assert cli.main(["new", "p", "--template", SOURCE, "-d", "nod=2", "--defaults"]) == 1  # refused before Copier
    assert "there is no question 'nod'. Fix: did you mean nodes?" in capsys.readouterr().err


@pytest.mark.parametrize(("given", "written"), [("90", "01:30:00"), ("120:00:00", "5-00:00:00"), ("45:30", "00:45:30"),
                                                ("1-12", "1-12:00:00"), ("1-02:30", "1-02:30:00"), ("1-02:03:04", "1-02:03:04")])
def test_every_slurm_time_form_is_taken_and_written_back_normalised(given, written):
    from lumi_scaffold._types import slurm_time_normal

    assert slurm_time_normal(given) == written


def test_answers_are_trimmed_and_written_back_normalised(template, tmp_path):
    dest = tmp_path / "p"
    assert cli.main(["new", str(dest), "--template", str(template), "--defaults", "-q", "-d", "project_name=demo",
                     "-d", "account= project_465001234 ", "-d", "walltime=90", "-d", "nodes= 2"]) == 0
    train = (dest / "jobs/train.sbatch").read_text()
    assert "#SBATCH --time=01:30:00\n" in train and "#SBATCH --nodes=2\n" in train
    assert "#SBATCH --account=project_465001234\n" in train
    answers = (dest / ".copier-answers.yml").read_text()
    assert "\naccount: project_465001234\n" in answers and "\nwalltime: 01:30:00\n" in answers
    assert "\nnodes: 2\n" in answers  # a number, as before 0.5 (copier.yml asks it as text)


def test_no_colour_codes_where_the_output_is_not_a_terminal(tmp_path):
    """`lumi-scaffold new ... | tee log`: Copier's coloured `create` lines arrive without codes."""
    made = run_cli("new", str(tmp_path / "p"), "--defaults", "-d", "project_name=demo")
    assert made.returncode == 0, made.stderr
    assert "create" in made.stderr and "jobs/train.sbatch" in made.stderr
    assert "\x1b[" not in made.stderr + made.stdout


def test_after_an_update_the_advice_names_the_files_it_added(tmp_path, capsys, monkeypatch):
    """`git diff` does not show new (untracked) files: the advice lists them."""
    from lumi_scaffold import update

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "kept").write_text("a")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "kept").write_text("b")
    (repo / "scripts").mkdir()
    (repo / "scripts/new.sh").write_text("c")
    assert update._changed(repo) == ["kept", "scripts/new.sh"]
    assert update._changed(repo, untracked_only=True) == ["scripts/new.sh"]
    advice = cli.updated_advice(["kept", "scripts/new.sh"], ["scripts/new.sh"])
    assert "`git diff`" in advice and "scripts/new.sh" in advice and "git add -A" in advice
    assert cli.updated_advice(["kept"], []) == "Updated 1 file(s); review with `git diff`, then commit."
