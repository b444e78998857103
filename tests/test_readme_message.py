"""The generated README and Copier's message after the copy tell the same first steps
(the README's home link: tests/test_home_url.py)."""

from __future__ import annotations

import pytest

from lumi_scaffold import cli

from .test_site_needs import ANSWERS, cat  # noqa: F401 - the Setonix-like catalogue fixture


def _new(template, dest, capsys, *data: str) -> str:
    """stderr of a `lumi-scaffold new` that shows Copier's messages (no --quiet)."""
    assert cli.main(["new", str(dest), "--template", str(template), "--defaults", *data]) == 0
    return capsys.readouterr().err


def test_the_cotainr_build_step_is_in_the_message_as_in_the_readme(template, tmp_path, capsys):
    err = _new(template, tmp_path / "p", capsys, "-d", "account=project_465001234", "-d", "container=cotainr")
    steps = err[err.index("Project p is ready."):].splitlines()
    # (a cotainr image holds the packages itself: no venv step)
    assert [s.split("#")[0].strip() for s in steps[2:4]] == ["bash container/build.sh", "sbatch jobs/smoke-test.sbatch"]
    readme = (tmp_path / "p" / "README.md").read_text()
    assert readme.index("    bash container/build.sh") < readme.index("    sbatch jobs/smoke-test.sbatch")
    assert "    bash scripts/setup-venv.sh" not in readme and "bash scripts/setup-venv.sh" not in err
    plain = _new(template, tmp_path / "q", capsys, "-d", "account=project_465001234")
    assert "build.sh" not in plain and "pull" not in plain[plain.index("is ready."):]


def test_the_pull_step_is_in_the_message_as_in_the_readme(template, tmp_path, capsys, cat):  # noqa: F811
    err = _new(template, tmp_path / "p", capsys, *[f"-d{k}={v}" for k, v in ANSWERS.items()])
    pull = "singularity pull /software/projects/pawsey0001/containers/pytorch.sif docker://quay.io/pawsey/pytorch"
    assert pull in err
    assert pull in (tmp_path / "p" / "README.md").read_text()

