"""What the container image ships, and whether the venv changed any of it.

Run by scripts/setup-venv.sh inside the container (standard library, plus the
`packaging` module that every pip carries):

  python scripts/lib/image_packages.py freeze FILE.json
      with the image's Python, before the venv exists: every distribution it sees (name,
      exact version) and the site directories they come from.
  venv/bin/python scripts/lib/image_packages.py link FILE.json
      with the new venv's Python: adds the image's site directories, in the image's order,
      after the venv's own (a .pth file), and checks that the venv sees every distribution.
      `python -m venv --system-site-packages` is not enough: a venv made from a venv's
      Python (an image may keep its framework in a venv, such as /opt/venv) sees the base
      interpreter's packages, not the image's.
  venv/bin/python scripts/lib/image_packages.py constraints FILE.json
      prints a pip constraints file: every image distribution at its exact version, so
      pip can replace none of them.
  venv/bin/python scripts/lib/image_packages.py check FILE.json requirements.txt
      exit 1 when a distribution of the image is missing or at another version in the
      venv, naming it and the requirements that pull it in.
"""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

PTH = "_image_site_packages.pth"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def visible() -> dict[str, tuple[str, str, str]]:
    """canonical name -> (name, version, site directory) of every distribution this Python
    sees; the first on sys.path wins, as for imports."""
    found: dict[str, tuple[str, str, str]] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        found.setdefault(canonical(name), (name, dist.version, os.path.realpath(dist.locate_file(""))))
    return found


def freeze(out: Path) -> None:
    dists = visible()
    homes = {where for _, _, where in dists.values()}
    sites = [os.path.realpath(entry) for entry in sys.path if entry and os.path.realpath(entry) in homes]
    record = {
        "python": sys.executable,
        "version": sys.version.split()[0],
        "image": os.environ.get("SINGULARITY_CONTAINER") or os.environ.get("APPTAINER_CONTAINER") or "",
        "sites": list(dict.fromkeys(sites)),
        "dists": {key: [name, version] for key, (name, version, _) in sorted(dists.items())},
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"image: {len(record['dists'])} distributions in {', '.join(record['sites'])}")


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def link(record: dict) -> None:
    own = os.path.realpath(sysconfig.get_path("purelib"))
    lines = [f"import site; site.addsitedir({site!r})\n" for site in record["sites"] if site != own]
    Path(own, PTH).write_text("".join(lines))
    import site

    for site_dir in record["sites"]:  # this process too, as the .pth does at the next start
        if site_dir != own:
            site.addsitedir(site_dir)
    seen = visible()  # (once: it reads every distribution's metadata)
    missing = [name for key, (name, _) in record["dists"].items() if key not in seen]
    if missing:
        raise SystemExit(f"ERROR: the venv does not see {', '.join(missing[:10])} of the image; "
                         "rm -rf venv and rerun scripts/setup-venv.sh.")
    print(f"venv: sees the image's packages in {', '.join(record['sites'])} (after its own)")


def constraints(record: dict) -> None:
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pip carries its own copy
        from pip._vendor.packaging.version import InvalidVersion, Version
    print("# Every distribution the container image ships, at its exact version: pip must change none.")
    print(f"# Written by scripts/setup-venv.sh from {record['python']} in {record['image'] or 'the image'}.")
    for name, version in record["dists"].values():
        try:
            Version(version)
        except InvalidVersion:  # pip cannot read it as a constraint; `check` still compares it
            print(f"# {name}=={version}   (not a PEP 440 version: checked after installing, not constrained)")
            continue
        print(f"{name}=={version}")


def pulled_in_by(changed: str, requirements: Path) -> list[str]:
    """The requirements (from requirements.txt) whose dependencies, as installed, reach ``changed``."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:
        from pip._vendor.packaging.requirements import InvalidRequirement, Requirement

    def requires(name: str) -> set[str]:
        try:
            declared = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            return set()
        out = set()
        for text in declared:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                out.add(canonical(req.name))
        return out

    culprits = []
    lines = requirements.read_text().splitlines() if requirements.is_file() else []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        try:
            top = Requirement(line)
        except InvalidRequirement:
            continue
        todo, seen = [canonical(top.name)], set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(requires(name))
        if changed in seen:
            culprits.append(top.name)
    return culprits


def check(record: dict, requirements: Path) -> None:
    now = visible()
    problems = []
    for key, (name, version) in record["dists"].items():
        got = now.get(key)
        if got and got[1] == version:
            continue
        after = got[1] if got else "missing"
        culprits = pulled_in_by(key, requirements)
        why = (f"pulled in by {', '.join(culprits)} in requirements.txt" if culprits
               else "no requirement in requirements.txt needs it: installed by hand?")
        problems.append(f"  {name} {version} -> {after} ({why})")
    if problems:
        print("ERROR: the venv changed packages the container image ships:", file=sys.stderr)
        print("\n".join(problems), file=sys.stderr)
        print("Fix: remove or loosen the requirement named, then rm -rf venv and rerun scripts/setup-venv.sh. "
              "A generic wheel from PyPI lacks the image's ROCm and interconnect builds.", file=sys.stderr)
        raise SystemExit(1)
    print(f"venv ready; the image's {len(record['dists'])} distributions are intact.")


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("freeze", "link", "constraints", "check"):
        raise SystemExit(__doc__)
    command, path = argv[0], Path(argv[1])
    if command == "freeze":
        freeze(path)
    elif command == "link":
        link(load(path))
    elif command == "constraints":
        constraints(load(path))
    else:
        check(load(path), Path(argv[2]) if len(argv) > 2 else Path("requirements.txt"))


if __name__ == "__main__":
    main(sys.argv[1:])
