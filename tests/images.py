"""TEST STAND-INS for container images' Python environments, and a local package index.

The CI machines have no LUMI images, so tests build what matters about them here: a
Python environment that holds the image's distributions at their exact versions (dev and
local suffixes included), laid out as in the real images (LAIF: the framework in a venv,
/opt/venv; former LUST images: a conda env, i.e. a Python of its own), and a directory of
wheels standing in for PyPI. The distributions are metadata only (a .dist-info with name,
version and requirements): pip and importlib.metadata read nothing else, and nothing here
imports them; each says whether it is binary as an installed wheel does (WHEEL, RECORD).
"""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name)


def _metadata(name: str, version: str, requires: list[str]) -> str:
    return "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                    *(f"Requires-Dist: {r}\n" for r in requires)])


def add_dist(site: Path, name: str, version: str, requires: list[str] | None = None, binary: bool = False) -> None:
    """An installed distribution (metadata only) in the site directory ``site``, installed from
    a wheel as the image's own are: a pure-Python one (py3-none-any, a module in its RECORD),
    or with ``binary`` one built for the image (a platform wheel with an extension module in
    its RECORD), which is what scripts/lib/image_packages.py reads to tell them apart."""
    info = site / f"{_norm(name)}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata(name, version, requires or []))
    (info / "INSTALLER").write_text("image\n")
    module = _norm(name).lower()
    tag, module_file = (("cp3-cp3-linux_x86_64", f"{module}/_C.cpython-3-x86_64-linux-gnu.so") if binary
                        else ("py3-none-any", f"{module}/__init__.py"))
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nGenerator: lumi-scaffold tests\n"
                                f"Root-Is-Purelib: {'false' if binary else 'true'}\nTag: {tag}\n")
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in (
        module_file, *(f"{info.name}/{f}" for f in ("METADATA", "INSTALLER", "WHEEL", "RECORD")))))


def add_wheel(wheelhouse: Path, name: str, version: str, requires: list[str] | None = None) -> Path:
    """A wheel of ``name`` ``version`` (metadata and one empty module) in ``wheelhouse``."""
    wheelhouse.mkdir(parents=True, exist_ok=True)
    stem = f"{_norm(name)}-{version}"
    files = {
        f"{_norm(name).lower()}_fake.py": "",
        f"{stem}.dist-info/METADATA": _metadata(name, version, requires or []),
        f"{stem}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: lumi-scaffold tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{stem}.dist-info/RECORD,,")
    wheel = wheelhouse / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{stem}.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


def image_venv(root: Path, dists: dict[str, str], pure: tuple[str, ...] = ()) -> Path:
    """A LAIF-like image Python: a venv (as /opt/venv) holding ``dists`` {name: version}, all
    binary but those named in ``pure``, and seeing this machine's packages (pip among them)
    behind them. Returns its bin directory."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    if sys.prefix != sys.base_prefix:  # the tests run in a venv: its packages (pip...) behind the image's
        import site as site_module

        (site / "_outer.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n"
                                                  for d in site_module.getsitepackages()))
    for name, version in dists.items():
        add_dist(site, name, version, binary=name not in pure)
    return root / "bin"
