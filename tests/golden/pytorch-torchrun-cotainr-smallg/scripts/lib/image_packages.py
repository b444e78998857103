# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""What the container image ships, in which tier, and whether the venv changed it. Run by
scripts/setup-venv.sh in the container (standard library, and the `packaging` pip carries):

  python scripts/lib/image_packages.py freeze FILE.json [FRAMEWORK_PACKAGE...]
      with the image's Python: every distribution it sees (name, version, tier and why) and
      the site directories they come from; the framework's packages: venv_framework in values.sh.
  venv/bin/python scripts/lib/image_packages.py link FILE.json
      adds the image's site directories after the venv's own (a .pth file) and checks that the
      venv sees every distribution (`--system-site-packages` is not enough: a venv made from
      a venv's Python, such as an image's /opt/venv, sees the base interpreter's packages).
  venv/bin/python scripts/lib/image_packages.py constraints FILE.json [constraints.txt]
      a pip constraints file: PINNED distributions ==, UPGRADABLE ones >= their version; a
      package constraints.txt names is left to that line, unless it is the framework's.
  venv/bin/python scripts/lib/image_packages.py check FILE.json requirements.txt [constraints.txt]
      a line for each distribution of the image the venv shadows; exit 1, a line each, when a
      PINNED one changed, an UPGRADABLE one went down or one is missing, naming the requirement
      that pulls it in.
  venv/bin/python scripts/lib/image_packages.py explain FILE.json PIP_OUTPUT [constraints.txt]
      after pip failed: a line for each of the image's distributions its clash names as a
      constraint, with its tier and the fix; exit 1 when it names none.

The tiers (`tier`): PINNED, the framework's packages and every binary one (built for this
image's platform, GPU and interconnect); UPGRADABLE, the pure-Python ones.
"""

from __future__ import annotations

import json
import os
import re
import site
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

PTH = "_image_site_packages.pth"
PINNED, UPGRADABLE = "pinned", "upgradable"
FRAMEWORK = "framework"

# Compiled code in a distribution's files (libfoo.so.1 too), and sources compiled at install
COMPILED = re.compile(r"\.(so(\.\d+)*|pyd|dylib|dll)$", re.IGNORECASE)
COMPILED_SOURCES = re.compile(r"\.(c|cc|cpp|cxx|cu|hip|pyx|f|f90)$", re.IGNORECASE)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _packaging():
    try:
        from packaging import requirements, version
    except ImportError:  # pip carries its own copy
        from pip._vendor.packaging import requirements, version  # type: ignore[no-redef]
    return requirements, version


def requirement(text: str):
    """``text`` as a Requirement; None where it is none."""
    requirements, _ = _packaging()
    try:
        return requirements.Requirement(text)
    except requirements.InvalidRequirement:
        return None


def named_in(path: Path) -> list:
    """(line, Requirement) of each requirement in a requirements or constraints file (pip's
    comments, a # after a blank, and its options, -r -c ..., left out)."""
    lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in (path.read_text() if path.is_file() else "").splitlines())
    found = [(text, requirement(text)) for text in lines if text and not text.startswith("-")]
    return [(text, req) for text, req in found if req is not None]


def applies(req) -> bool:
    """Whether a requirement holds without extras (its marker true here)."""
    return req.marker is None or req.marker.evaluate({"extra": ""})


def tier(dist: metadata.Distribution, framework: set[str]) -> tuple[str, str]:
    """(PINNED or UPGRADABLE, why) of an installed distribution, from its metadata alone:
    PINNED for the framework's packages (``framework``: canonical names) and for a binary
    one: its WHEEL says `Root-Is-Purelib: false` or has a `Tag:` other than `*-none-any`;
    its list of installed files (RECORD, installed-files.txt) holds compiled code (a pure-
    tagged wheel may bundle a library); or it has no WHEEL and its file list (an .egg-info's
    SOURCES.txt) names C, C++, CUDA, HIP, Cython or Fortran sources. With neither a WHEEL
    nor a file list it cannot be judged: pinned, to be safe."""
    if canonical(dist.metadata["Name"] or "") in framework:
        return PINNED, FRAMEWORK
    wheel = dist.read_text("WHEEL")
    fields = [tuple(part.strip() for part in line.partition(":")[::2]) for line in (wheel or "").splitlines()]
    platform = [value for key, value in fields if key.lower() == "tag" and not value.endswith("-none-any")]
    if platform:
        return PINNED, f"binary: a platform wheel ({platform[0]})"
    if any(key.lower() == "root-is-purelib" and value.lower() == "false" for key, value in fields):
        return PINNED, "binary: a platform wheel (Root-Is-Purelib: false)"
    files = dist.files  # RECORD, or an .egg-info's SOURCES.txt (installed-files.txt too, from Python 3.12)
    names = [f.name for f in files] if files is not None else None
    listed = dist.read_text("installed-files.txt") if names is None else None
    if listed is not None:
        names = [Path(line).name for line in listed.splitlines()]
    if names is None:
        if wheel is None:
            return PINNED, "unknown: no record of its files, so it may be binary"
        names = []
    compiled = next((name for name in names if COMPILED.search(name)), None)
    if compiled is not None:
        return PINNED, f"binary: compiled code ({compiled})"
    if wheel is None:
        built = next((name for name in names if COMPILED_SOURCES.search(name)), None)
        if built is not None:
            return PINNED, f"binary: compiled at install ({built})"
    return UPGRADABLE, "pure Python"


def visible() -> dict[str, tuple[str, str, str, metadata.Distribution]]:
    """canonical name -> (name, version, site directory, distribution) of every distribution
    this Python sees; the first on sys.path wins, as for imports."""
    found: dict[str, tuple[str, str, str, metadata.Distribution]] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        found.setdefault(canonical(name), (name, dist.version, os.path.realpath(dist.locate_file("")), dist))
    return found


def freeze(out: Path, framework: list[str] | tuple[str, ...] = ()) -> None:
    dists = visible()
    homes = {where for _, _, where, _ in dists.values()}
    sites = [os.path.realpath(entry) for entry in sys.path if entry and os.path.realpath(entry) in homes]
    names = {canonical(n) for n in framework}
    entries = {}
    for key, (name, version, _, dist) in sorted(dists.items()):
        level, why = tier(dist, names)
        entries[key] = {"name": name, "version": version, "tier": level, "why": why}
    record = {"python": sys.executable, "version": sys.version.split()[0],
              "image": os.environ.get("SINGULARITY_CONTAINER") or os.environ.get("APPTAINER_CONTAINER") or "",
              "framework": sorted(names), "sites": list(dict.fromkeys(sites)), "dists": entries}
    out.write_text(json.dumps(record, indent=1) + "\n")
    pinned = sum(d["tier"] == PINNED for d in entries.values())
    print(f"image: {len(entries)} distributions in {', '.join(record['sites'])}: {pinned} pinned "
          f"(the framework's and binary ones), {len(entries) - pinned} upgradable (pure Python)")


def load(path: Path) -> dict:
    record = json.loads(path.read_text())
    if any(not isinstance(d, dict) for d in record["dists"].values()):
        raise SystemExit(f"ERROR: {path} was written by an older scripts/setup-venv.sh (no tiers in it). "
                         "Fix: rm -rf venv and rerun scripts/setup-venv.sh.")
    return record


def link(record: dict) -> None:
    own = os.path.realpath(sysconfig.get_path("purelib"))
    others = [path for path in record["sites"] if path != own]
    Path(own, PTH).write_text("".join(f"import site; site.addsitedir({path!r})\n" for path in others))
    for path in others:  # this process too, as the .pth does at the next start
        site.addsitedir(path)
    seen = visible()  # (once: it reads every distribution's metadata)
    missing = [d["name"] for key, d in record["dists"].items() if key not in seen]
    if missing:
        raise SystemExit(f"ERROR: the venv does not see {', '.join(missing[:10])} of the image; "
                         "rm -rf venv and rerun scripts/setup-venv.sh.")
    print(f"venv: sees the image's packages in {', '.join(record['sites'])} (after its own)")


def yours(constraints_file: Path) -> dict[str, str]:
    """canonical name -> line, for each package the user's constraints.txt names (its first)."""
    return {canonical(req.name): text for text, req in reversed(named_in(constraints_file))}


def taken_over(key: str, entry: dict, mine: dict[str, str]) -> bool:
    """constraints.txt names this package and it is not the framework's: its line rules."""
    return key in mine and entry["why"] != FRAMEWORK


def constraints(record: dict, constraints_file: Path = Path("constraints.txt")) -> None:
    _, version_module = _packaging()
    mine = yours(constraints_file)
    print("# The container image's distributions, by tier (scripts/setup-venv.sh writes this file from")
    print(f"# {record['python']} in {record['image'] or 'the image'}; constraints.txt says how to change a tier):")
    print("#   pinned (==): the framework's packages and every binary one; pip may change none.")
    print("#   upgradable (>=): pure Python; your requirements may upgrade them, never downgrade them.")
    for key, entry in record["dists"].items():
        name, version = entry["name"], entry["version"]
        if taken_over(key, entry, mine):
            print(f"# {name} {version}: {entry['tier']}, {entry['why']}; constraints.txt takes it over ({mine[key]})")
            continue
        try:
            parsed = version_module.Version(version)
        except version_module.InvalidVersion:  # pip cannot read it as a constraint; `check` still compares it
            print(f"# {name}=={version}   (not a PEP 440 version: checked after installing, not constrained)")
            continue
        if entry["tier"] == PINNED:
            print(f"{name}=={version}   # pinned: {entry['why']}")
        else:  # (a local label, +xyz, is not allowed after >=)
            print(f"{name}>={parsed.public}   # upgradable: {entry['why']}")


def pulled_in_by(changed: str, requirements_file: Path) -> list[str]:
    """The requirements (from requirements.txt) whose dependencies, as installed, reach ``changed``."""
    def requires(name: str) -> set[str]:
        try:
            declared = [requirement(text) for text in metadata.requires(name) or []]
        except metadata.PackageNotFoundError:
            return set()
        return {canonical(req.name) for req in declared if req and applies(req)}

    culprits = []
    for _, top in named_in(requirements_file):
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


def source(key: str, requirements_file: Path) -> str:
    """Which requirement brought another version of ``key``, in words."""
    culprits = pulled_in_by(key, requirements_file)
    if any(canonical(c) == key for c in culprits):
        return "requirements.txt"
    if culprits:
        return f"pulled in by {', '.join(culprits)} in requirements.txt"
    return "no requirement in requirements.txt needs it: installed by hand?"


def is_lower(new: str, old: str) -> bool:
    _, version_module = _packaging()
    try:
        return version_module.Version(new) < version_module.Version(old)
    except version_module.InvalidVersion:  # not comparable: not constrained either (see constraints)
        return False


def fix(entry: dict, line: str, again: str = "rm -rf venv and rerun scripts/setup-venv.sh") -> str:
    """The fix, in words; ``line``: what constraints.txt would need to take the package over."""
    if entry["why"] == FRAMEWORK:
        return (f"remove or loosen the requirement that needs it, then {again}; the framework is never "
                "replaced in the venv (for another version, move the project to another image).")
    if entry["tier"] == PINNED:
        return (f"remove or loosen the requirement that needs it, then {again}; or take it over from the image: "
                f"add {line} to constraints.txt (a generic build may lack what the image's was built for).")
    return f"loosen the requirement that needs it, then {again}; or take it over: add {line} to constraints.txt."


def refused_by(key: str, new: str, record: dict, now: dict) -> list[tuple[str, str]]:
    """(``name version``, requirement) of each of the image's distributions, as the venv sees
    them, whose requirements do not allow ``key`` at version ``new`` (pip warns about them
    too, once, among its install's output)."""
    requirements, version_module = _packaging()
    out = []
    for other, entry in record["dists"].items():
        seen = now.get(other)
        if other == key or seen is None or seen[1] != entry["version"]:
            continue  # (shadowed too: its own line)
        for text in seen[3].requires or []:
            try:
                req = requirements.Requirement(text)
                wrong = (canonical(req.name) == key and applies(req)
                         and not req.specifier.contains(version_module.Version(new), prereleases=True))
            except Exception:  # (a requirement this packaging cannot read or evaluate: not ours to judge)
                continue
            if wrong:
                out.append((f"{entry['name']} {entry['version']}", f"{req.name}{req.specifier}"))
    return out


def check(record: dict, requirements_file: Path, constraints_file: Path = Path("constraints.txt")) -> None:
    now = visible()
    mine = yours(constraints_file)
    shadowed, problems = [], []
    for key, entry in record["dists"].items():
        name, version = entry["name"], entry["version"]
        got = now.get(key)
        if got and got[1] == version:
            continue
        if not got:
            problems.append(f"ERROR: {name} {version} of the image is missing from the venv. "
                            "Fix: rm -rf venv and rerun scripts/setup-venv.sh.")
            continue
        new, why = got[1], source(key, requirements_file)
        if entry["tier"] == PINNED and not taken_over(key, entry, mine):
            problems.append(f"ERROR: {name} {version} of the image was replaced by {new} ({why}); it is pinned: "
                            f"{entry['why']}. Fix: {fix(entry, f'{name}=={new}')}")
        elif entry["tier"] == UPGRADABLE and not taken_over(key, entry, mine) and is_lower(new, version):
            problems.append(f"ERROR: {name} {version} of the image was downgraded to {new} ({why}); pure-Python "
                            f"packages of the image may be upgraded, not downgraded. Fix: {fix(entry, f'{name}=={new}')}")
        else:
            mine_too = f"; constraints.txt: {mine[key]}" if key in mine else ""
            shadowed.append(f"venv: {name} {version} of the image is shadowed by {new} ({why}{mine_too})"
                            + "".join(f"; {other} of the image requires {needs}"
                                      for other, needs in refused_by(key, new, record, now)))
    print("\n".join(shadowed), end="\n" if shadowed else "")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        raise SystemExit(1)
    pinned = sum(entry["tier"] == PINNED for entry in record["dists"].values())
    print(f"venv ready; the image's {pinned} pinned distributions are intact, {len(shadowed)} of its "
          f"{len(record['dists']) - pinned} others shadowed.")


def wanted(pip_output: str, key: str) -> str | None:
    """What the clash in pip's output asks of ``key`` (``flash-attn>=2.9``), other than the constraint."""
    for text in re.findall(r"(?:depends on|The user requested)\s+(?!\(constraint\))([^\s;]+)", pip_output):
        req = requirement(text)
        if req is not None and canonical(req.name) == key and str(req.specifier):
            return f"{req.name}{req.specifier}"
    return None


def explain(record: dict, pip_output: Path, constraints_file: Path = Path("constraints.txt")) -> None:
    """After pip failed: which of the image's distributions its clash names as a constraint."""
    text = pip_output.read_text(errors="replace") if pip_output.is_file() else ""
    named = {canonical(m) for m in re.findall(r"\(constraint\)\s+([A-Za-z0-9][A-Za-z0-9._-]*)", text)}
    mine = yours(constraints_file)
    again = "rerun scripts/setup-venv.sh"  # (pip installed nothing)
    lines = []
    for key in sorted(named):
        entry = record["dists"].get(key)
        if entry is None or taken_over(key, entry, mine):
            continue  # a pin of constraints.txt: pip's lines above name it
        name, version = entry["name"], entry["version"]
        line = wanted(text, key) or f"{name}==VERSION"
        if entry["tier"] == PINNED:
            lines.append(f"ERROR: pip cannot keep {name} at the image's {version}, which is pinned: {entry['why']} "
                         f"(pip's lines above name what asks for another). Fix: {fix(entry, line, again)}")
        else:
            lines.append(f"ERROR: pip cannot keep {name} at the image's {version} or newer (pure Python: upgradable, "
                         f"never downgraded; pip's lines above name what asks for older). Fix: {fix(entry, line, again)}")
    print("\n".join(lines), end="\n" if lines else "")
    if not lines:
        raise SystemExit(1)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("freeze", "link", "constraints", "check", "explain"):
        raise SystemExit(__doc__)
    command, path, rest = argv[0], Path(argv[1]), [Path(arg) for arg in argv[2:]]
    if command == "freeze":
        return freeze(path, argv[2:])
    record = load(path)
    if command == "check":
        rest = rest or [Path("requirements.txt")]
    run = {"link": (link, 0), "constraints": (constraints, 1), "check": (check, 2), "explain": (explain, 2)}[command]
    run[0](record, *rest[:run[1]])


if __name__ == "__main__":
    main(sys.argv[1:])
