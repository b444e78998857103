"""Ships the Copier template inside the wheel, as ``lumi_scaffold/_template/``.

Plugin authors test against the template (``lumi_scaffold.testing.template_source``)
with lumi-scaffold installed from an index, not from a checkout; the template itself
stays at the repository root, where Copier wants it. Editable installs use the
checkout, so nothing is copied for them. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithTemplate(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "lumi_scaffold" / "_template"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        shutil.copy2(HERE / "copier.yml", target / "copier.yml")
        shutil.copytree(HERE / "project-templates", target / "project-templates",
                        ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))


setup(cmdclass={"build_py": BuildPyWithTemplate})
