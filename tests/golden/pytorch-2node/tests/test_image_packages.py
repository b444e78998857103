"""scripts/lib/image_packages.py, which scripts/setup-venv.sh runs inside the container: the
record of what the image ships, the venv that sees it, the constraints that keep pip off
it, and the check that names a package the venv changed. Here the "image" is this Python
with a directory of made-up distributions (top needs mid, mid needs leaf) on its path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def dist(site: Path, name: str, version: str, *requires: str) -> None:
    """A made-up installed distribution: metadata only."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", *(f"Requires-Dist: {r}\n" for r in requires)]
    (info / "METADATA").write_text("".join(lines))


def run(python: str | Path, script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(python), script, *args], env={**environment, **env}, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def image(image_packages, tmp_path):
    """The record `freeze` wrote for the image (this Python, the made-up distributions on
    its path), and where."""
    site = tmp_path / "image-site"
    dist(site, "top", "1.0", "mid")
    dist(site, "mid", "1.0", "leaf>=1")
    dist(site, "leaf", "1.0")
    record = tmp_path / "image-packages.json"
    frozen = run(sys.executable, image_packages.__file__, "freeze", str(record), PYTHONPATH=str(site),
                 SINGULARITY_CONTAINER="/images/test.sif")
    assert frozen.returncode == 0, frozen.stderr
    return json.loads(record.read_text()), record, site


def test_freeze_records_every_distribution_and_where_it_comes_from(image):
    data, _, site = image
    assert data["python"] == sys.executable and data["image"] == "/images/test.sif"
    assert data["dists"]["leaf"] == ["leaf", "1.0"] and data["dists"]["top"] == ["top", "1.0"]
    assert data["dists"]["pytest"] == ["pytest", pytest.__version__]
    assert data["sites"][0] == os.path.realpath(site)  # in the image's sys.path order
    assert os.path.realpath(Path(pytest.__file__).parents[1]) in data["sites"]  # where pytest comes from


def test_constraints_pin_every_distribution_and_leave_out_what_pip_cannot_read(image_packages, capsys):
    record = {"python": "/usr/bin/python3", "image": "", "sites": [],
              "dists": {"torch": ["torch", "2.10.0+rocm7.0.0.lw.git1234"], "odd": ["odd", "2024.1.x"]}}
    try:
        image_packages.constraints(record)
    except ImportError:
        pytest.skip("this Python has neither packaging nor pip")
    out = capsys.readouterr().out.splitlines()
    assert "torch==2.10.0+rocm7.0.0.lw.git1234" in out
    assert "# odd==2024.1.x   (not a PEP 440 version: checked after installing, not constrained)" in out


def test_a_venv_sees_the_image_and_the_check_names_what_changed_it(image_packages, image, tmp_path):
    """`link` in a new venv: it sees the image's distributions after its own. A leaf the
    venv then gets at another version fails `check`, naming the requirement that pulls it in."""
    _, record, _ = image
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True)
    if made.returncode:
        pytest.skip(f"this Python cannot make a venv: {made.stderr.strip()}")
    python = venv / "bin/python"
    linked = run(python, image_packages.__file__, "link", str(record))
    assert linked.returncode == 0 and linked.stdout.startswith("venv: sees the image's packages in "), linked.stderr
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("top  # the project's own requirement\n")
    intact = run(python, image_packages.__file__, "check", str(record), str(requirements))
    assert intact.returncode == 0 and intact.stdout.startswith("venv ready; the image's "), intact.stderr
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    dist(Path(own), "leaf", "2.0")  # as pip would install it into the venv
    changed = run(python, image_packages.__file__, "check", str(record), str(requirements))
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert changed.stderr.splitlines()[:2] == ["ERROR: the venv changed packages the container image ships:",
                                               "  leaf 1.0 -> 2.0 (pulled in by top in requirements.txt)"]
