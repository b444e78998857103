"""scripts/lib/image_packages.py, which scripts/setup-venv.sh runs inside the container: the
record of what the image ships and in which tier, the venv that sees it, the constraints
that keep pip off its pinned packages, and the check that names a package the venv changed.
Here the "image" is this Python with a directory of made-up distributions on its path:
top needs mid, mid needs leaf; top and mid are pure Python, leaf is binary, and the
framework is `frame` (pure Python, pinned by name, as jax is); capper needs mid<1.4."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest


def dist(site: Path, name: str, version: str, *requires: str, binary: bool = False) -> Path:
    """A made-up distribution installed from a wheel: metadata, WHEEL and RECORD (which name
    a module or, when ``binary``, an extension module built for this platform)."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", *(f"Requires-Dist: {r}\n" for r in requires)]
    (info / "METADATA").write_text("".join(lines))
    tag = "cp3-cp3-linux_x86_64" if binary else "py3-none-any"
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: {'false' if binary else 'true'}\nTag: {tag}\n")
    module = f"{name}/_ext.cpython-3-x86_64-linux-gnu.so" if binary else f"{name}/__init__.py"
    (info / "RECORD").write_text(f"{module},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    return info


def run(python: str | Path, script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(python), script, *args], env={**environment, **env}, capture_output=True, text=True,
                          timeout=120)


# What a distribution's installed metadata holds -> its tier and why. Each is written as
# pip, setuptools or conda leave it: {file in the .dist-info or .egg-info: its text}.
WHEEL_PURE = "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
TIERS = {
    "pure wheel": ({"WHEEL": WHEEL_PURE, "RECORD": "pkg/__init__.py,,\npkg/data.json,,\n"},
                   ("upgradable", "pure Python")),
    "extension module in a pure-tagged wheel": (
        {"WHEEL": WHEEL_PURE, "RECORD": "pkg/__init__.py,,\npkg/_speedup.cpython-311-x86_64-linux-gnu.so,,\n"},
        ("pinned", "binary: compiled code (_speedup.cpython-311-x86_64-linux-gnu.so)")),
    "bundled versioned library": (
        {"WHEEL": WHEEL_PURE, "RECORD": "pkg/__init__.py,,\npkg.libs/libgomp-a34b3233.so.1.0.0,,\n"},
        ("pinned", "binary: compiled code (libgomp-a34b3233.so.1.0.0)")),
    "Root-Is-Purelib false": ({"WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-any\n",
                               "RECORD": "pkg/__init__.py,,\n"},
                              ("pinned", "binary: a platform wheel (Root-Is-Purelib: false)")),
    "platform tag, a program and no module (ninja)": (
        {"WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-manylinux_2_28_x86_64\n",
         "RECORD": "pkg/__init__.py,,\n../../../bin/ninja,,\n"},
        ("pinned", "binary: a platform wheel (py3-none-manylinux_2_28_x86_64)")),
    "egg-info listing an extension module": ({"installed-files.txt": "../pkg/__init__.py\n../pkg/_c.so\n"},
                                             ("pinned", "binary: compiled code (_c.so)")),
    "egg-info compiled at install (SOURCES.txt)": ({"SOURCES.txt": "setup.py\npkg/__init__.py\nsrc/fast.c\n"},
                                                   ("pinned", "binary: compiled at install (fast.c)")),
    "egg-info of Python sources": ({"SOURCES.txt": "setup.py\npkg/__init__.py\n"}, ("upgradable", "pure Python")),
    "no WHEEL, no list of files": ({}, ("pinned", "unknown: no record of its files, so it may be binary")),
}


@pytest.mark.parametrize("files, expected", TIERS.values(), ids=TIERS.keys())
def test_the_tier_of_a_distribution_comes_from_its_installed_metadata(image_packages, tmp_path, files, expected):
    egg = "WHEEL" not in files
    info = tmp_path / ("pkg-1.0-py3.11.egg-info" if egg else "pkg-1.0.dist-info")
    info.mkdir()
    (info / ("PKG-INFO" if egg else "METADATA")).write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    for name, text in files.items():
        (info / name).write_text(text)
    assert image_packages.tier(metadata.PathDistribution(info), set()) == expected


def test_the_framework_is_pinned_by_name_whatever_it_is_built_as(image_packages, tmp_path):
    """jax is pure Python, PyTorch's Triton for ROCm is binary: both are the framework's."""
    jax = metadata.PathDistribution(dist(tmp_path, "jax", "0.4.35.dev20250321"))
    triton = metadata.PathDistribution(dist(tmp_path, "pytorch_triton_rocm", "3.5.0", binary=True))
    framework = {"jax", "pytorch-triton-rocm"}
    assert image_packages.tier(jax, framework) == image_packages.tier(triton, framework) == ("pinned", "framework")
    assert image_packages.tier(jax, set()) == ("upgradable", "pure Python")


@pytest.fixture
def image(image_packages, tmp_path):
    """The record `freeze` wrote for the image (this Python, the made-up distributions on
    its path), and where."""
    site = tmp_path / "image-site"
    dist(site, "top", "1.0", "mid")
    dist(site, "mid", "1.0", "leaf>=1")
    dist(site, "leaf", "1.0", binary=True)
    dist(site, "frame", "1.0")
    dist(site, "capper", "1.0", "mid<1.4")
    record = tmp_path / "image-packages.json"
    frozen = run(sys.executable, image_packages.__file__, "freeze", str(record), "Frame", PYTHONPATH=str(site),
                 SINGULARITY_CONTAINER="/images/test.sif")
    assert frozen.returncode == 0, frozen.stderr
    assert frozen.stdout.startswith("image: ") and " pinned (the framework's and binary ones), " in frozen.stdout
    return json.loads(record.read_text()), record, site


def test_freeze_records_every_distribution_its_tier_and_where_it_comes_from(image):
    data, _, site = image
    assert data["python"] == sys.executable and data["image"] == "/images/test.sif" and data["framework"] == ["frame"]
    assert data["dists"]["top"] == {"name": "top", "version": "1.0", "tier": "upgradable", "why": "pure Python"}
    assert data["dists"]["leaf"] == {"name": "leaf", "version": "1.0", "tier": "pinned",
                                     "why": "binary: a platform wheel (cp3-cp3-linux_x86_64)"}
    assert data["dists"]["frame"]["tier"] == "pinned" and data["dists"]["frame"]["why"] == "framework"
    # pytest as installed here, a pure-Python wheel (or its egg-info)
    assert data["dists"]["pytest"] == {"name": "pytest", "version": pytest.__version__, "tier": "upgradable",
                                       "why": "pure Python"}
    assert data["sites"][0] == os.path.realpath(site)  # in the image's sys.path order
    assert os.path.realpath(Path(pytest.__file__).parents[1]) in data["sites"]  # where pytest comes from


def entry(name: str, version: str, tier: str, why: str) -> dict[str, str]:
    return {"name": name, "version": version, "tier": tier, "why": why}


def test_constraints_pin_the_pinned_and_keep_the_upgradable_from_going_down(image_packages, tmp_path, capsys):
    record = {"python": "/usr/bin/python3", "image": "", "sites": [], "dists": {
        "torch": entry("torch", "2.10.0+rocm7.0.0.lw.git1234", "pinned", "framework"),
        "flash-attn": entry("flash_attn", "2.8.3", "pinned", "binary: compiled code (x.so)"),
        "xformers": entry("xformers", "0.0.32", "pinned", "binary: compiled code (y.so)"),
        "transformers": entry("transformers", "4.44.0", "upgradable", "pure Python"),
        "local": entry("local", "1.0+image", "upgradable", "pure Python"),
        "odd": entry("odd", "2024.1.x", "pinned", "binary: compiled code (z.so)")}}
    mine = tmp_path / "constraints.txt"
    mine.write_text("# my pins\nflash-attn>=2.8  # take it over\ntorch==2.10.0\n")
    try:
        image_packages.constraints(record, mine)
    except ImportError:
        pytest.skip("this Python has neither packaging nor pip")
    out = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#   ")]
    assert out[2:] == [
        "torch==2.10.0+rocm7.0.0.lw.git1234   # pinned: framework",  # named in constraints.txt: still pinned
        "# flash_attn 2.8.3: pinned, binary: compiled code (x.so); constraints.txt takes it over (flash-attn>=2.8)",
        "xformers==0.0.32   # pinned: binary: compiled code (y.so)",
        "transformers>=4.44.0   # upgradable: pure Python",
        "local>=1.0   # upgradable: pure Python",  # (>= takes no local label)
        "# odd==2024.1.x   (not a PEP 440 version: checked after installing, not constrained)",
    ]


@pytest.fixture
def venv(image_packages, image, tmp_path):
    """`link` in a new venv: it sees the image's distributions after its own. Returns its
    Python, its own site directory, and `check` as setup-venv.sh runs it."""
    _, record, _ = image
    root = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], capture_output=True, text=True)
    if made.returncode:
        pytest.skip(f"this Python cannot make a venv: {made.stderr.strip()}")
    python = root / "bin/python"
    linked = run(python, image_packages.__file__, "link", str(record))
    assert linked.returncode == 0 and linked.stdout.startswith("venv: sees the image's packages in "), linked.stderr
    requirements, constraints = tmp_path / "requirements.txt", tmp_path / "constraints.txt"
    requirements.write_text("top  # the project's own requirement\n")
    constraints.write_text("")
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()

    def check() -> subprocess.CompletedProcess[str]:
        return run(python, image_packages.__file__, "check", str(record), str(requirements), str(constraints))

    return Path(own), requirements, constraints, check


def test_an_intact_venv_passes_the_check(venv):
    *_, check = venv
    intact = check()
    assert intact.returncode == 0, intact.stderr
    assert re.fullmatch(r"venv ready; the image's \d+ pinned distributions are intact, 0 of its \d+ others shadowed\.\n",
                        intact.stdout)


def test_an_upgraded_pure_python_package_is_one_line_and_a_downgrade_is_refused(venv):
    own, requirements, constraints, check = venv
    dist(own, "mid", "1.3", "leaf>=1")  # as pip would install it into the venv
    upgraded = check()
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout.splitlines()[0] == "venv: mid 1.0 of the image is shadowed by 1.3 (pulled in by top in requirements.txt)"
    (own / "mid-1.3.dist-info").rename(own / "older")
    dist(own, "mid", "1.5", "leaf>=1")  # newer than an image package allows: said on the same line
    upgraded = check()
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout.splitlines()[0] == ("venv: mid 1.0 of the image is shadowed by 1.5 (pulled in by top in "
                                               "requirements.txt); capper 1.0 of the image requires mid<1.4")
    assert " intact, 1 of its " in upgraded.stdout.splitlines()[1]
    requirements.write_text("mid>=1.5\n")
    assert check().stdout.splitlines()[0].startswith("venv: mid 1.0 of the image is shadowed by 1.5 (requirements.txt);")
    (own / "mid-1.5.dist-info").rename(own / "old")
    dist(own, "mid", "0.9")
    down = check()
    assert down.returncode == 1 and down.stderr.splitlines() == [
        "ERROR: mid 1.0 of the image was downgraded to 0.9 (requirements.txt); pure-Python packages of the image may "
        "be upgraded, not downgraded. Fix: loosen the requirement that needs it, then rm -rf venv and rerun "
        "scripts/setup-venv.sh; or take it over: add mid==0.9 to constraints.txt."]
    constraints.write_text("mid<1\n")  # the user's line rules instead
    assert check().stdout.splitlines()[0] == "venv: mid 1.0 of the image is shadowed by 0.9 (requirements.txt; constraints.txt: mid<1)"


def test_a_changed_binary_package_is_refused_unless_constraints_txt_takes_it_over(venv):
    own, _, constraints, check = venv
    dist(own, "leaf", "2.0")  # a generic wheel, as pip would install it into the venv
    changed = check()
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert changed.stderr.splitlines() == [
        "ERROR: leaf 1.0 of the image was replaced by 2.0 (pulled in by top in requirements.txt); it is pinned: "
        "binary: a platform wheel (cp3-cp3-linux_x86_64). Fix: remove or loosen the requirement that "
        "needs it, then rm -rf venv and rerun scripts/setup-venv.sh; or take it over from the image: add leaf==2.0 "
        "to constraints.txt (a generic build may lack what the image's was built for)."]
    constraints.write_text("Leaf==2.0\n")
    taken = check()
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.splitlines()[0] == ("venv: leaf 1.0 of the image is shadowed by 2.0 "
                                            "(pulled in by top in requirements.txt; constraints.txt: Leaf==2.0)")


def test_the_framework_cannot_be_taken_over(venv):
    own, _, constraints, check = venv
    dist(own, "frame", "2.0")
    constraints.write_text("frame==2.0\n")
    changed = check()
    assert changed.returncode == 1 and changed.stderr.splitlines() == [
        "ERROR: frame 1.0 of the image was replaced by 2.0 (no requirement in requirements.txt needs it: installed by "
        "hand?); it is pinned: framework. Fix: remove or loosen the requirement that needs it, then rm -rf venv and "
        "rerun scripts/setup-venv.sh; the framework is never replaced in the venv (for another version, move the "
        "project to another image)."]


def test_explain_names_the_image_package_in_pips_clash(image_packages, image, tmp_path, capsys):
    data, _, _ = image
    output = tmp_path / "pip-install.log"
    output.write_text("ERROR: Cannot install needs-new-leaf==1.0 because these package versions have conflicting "
                      "dependencies.\n\nThe conflict is caused by:\n    needs-new-leaf 1.0 depends on leaf>=2\n"
                      "    The user requested (constraint) leaf==1.0\n    needs-old-top 1.0 depends on top<1\n"
                      "    The user requested (constraint) top>=1.0\n")
    try:
        image_packages.explain(data, output, tmp_path / "no-constraints.txt")
    except ImportError:
        pytest.skip("this Python has neither packaging nor pip")
    assert capsys.readouterr().out.splitlines() == [
        "ERROR: pip cannot keep leaf at the image's 1.0, which is pinned: binary: a platform wheel "
        "(cp3-cp3-linux_x86_64) (pip's lines above name what asks for another). Fix: remove or loosen "
        "the requirement that needs it, then rerun scripts/setup-venv.sh; or take it over from the image: add "
        "leaf>=2 to constraints.txt (a generic build may lack what the image's was built for).",
        "ERROR: pip cannot keep top at the image's 1.0 or newer (pure Python: upgradable, never downgraded; pip's "
        "lines above name what asks for older). Fix: loosen the requirement that needs it, then rerun "
        "scripts/setup-venv.sh; or take it over: add top<1 to constraints.txt."]
    output.write_text("ERROR: No matching distribution found for plain\n")  # no clash with the image
    with pytest.raises(SystemExit):
        image_packages.explain(data, output, tmp_path / "no-constraints.txt")


def test_a_record_without_tiers_asks_for_a_new_venv(image_packages, tmp_path):
    old = tmp_path / "image-packages.json"
    old.write_text(json.dumps({"python": "/usr/bin/python3", "image": "", "sites": [], "dists": {"x": ["x", "1.0"]}}))
    with pytest.raises(SystemExit) as stopped:
        image_packages.load(old)
    assert str(stopped.value) == (f"ERROR: {old} was written by an older scripts/setup-venv.sh (no tiers in it). "
                                  "Fix: rm -rf venv and rerun scripts/setup-venv.sh.")
