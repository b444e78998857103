"""Requirements from several sources (a framework, its image, the tracker, the user's
``extra_requirements``) merged by package name, and judged for conflicts: two specifiers of
one package that no version satisfies (``flax==0.8.3`` from an image, ``flax>=0.10`` from a
framework), which pip would otherwise report only when the venv is built on the machine.

Only certain conflicts are reported: an exact pin the other requirement excludes, or bounds
that leave no version between them. Anything this module cannot read (``===``, a requirement
packaging does not parse) is kept as written and never judged."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import Specifier
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


def _parse(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def merged(requirements: Iterable[str]) -> list[str]:
    """One line per package, sorted: a package named once keeps its text; one named by
    several sources gets one requirement with every extra and every specifier of them."""
    texts: dict[str, list[str]] = {}
    for text in requirements:
        if not text:
            continue
        req = _parse(text)
        texts.setdefault(canonicalize_name(req.name) if req else text, []).append(text)
    lines = []
    for group in texts.values():
        distinct = list(dict.fromkeys(group))
        if len(distinct) == 1:
            lines.append(distinct[0])
            continue
        reqs = [r for r in map(_parse, distinct) if r is not None]
        extras = sorted({e for r in reqs for e in r.extras})
        specs = sorted({str(s) for r in reqs for s in r.specifier})
        lines.append(reqs[0].name + (f"[{','.join(extras)}]" if extras else "") + ",".join(specs))
    return sorted(lines)


def _bounds(spec: Specifier) -> tuple[tuple[Version, bool] | None, tuple[Version, bool] | None]:
    """(lower, upper) bound of one specifier, each (version, inclusive) or None."""
    op, text = spec.operator, spec.version
    if op == "==" and text.endswith(".*"):
        prefix = Version(text[:-2])
        return (prefix, True), (_next_release(prefix.release), False)
    if op == "~=":
        version = Version(text)
        return (version, True), (_next_release(version.release[:-1]), False)
    version = Version(text)
    return {
        "==": ((version, True), (version, True)),
        ">=": ((version, True), None),
        ">": ((version, False), None),
        "<=": (None, (version, True)),
        "<": (None, (version, False)),
    }.get(op, (None, None))  # != and ===: no bound


def _next_release(release: tuple[int, ...]) -> Version:
    """The first release after every release starting with ``release`` (1.4 -> 1.5)."""
    return Version(".".join(map(str, (*release[:-1], release[-1] + 1))))


def conflict(first: str, second: str) -> str:
    """Why no version satisfies both requirements of one package, or ''."""
    a, b = _parse(first), _parse(second)
    if a is None or b is None or canonicalize_name(a.name) != canonicalize_name(b.name):
        return ""
    try:
        for req, other in ((a, b), (b, a)):
            for spec in req.specifier:
                if spec.operator == "==" and not spec.version.endswith(".*") \
                        and not other.specifier.contains(spec.version, prereleases=True):
                    return f"{other} admits no {spec.version}"
        lower = upper = None
        for spec in [*a.specifier, *b.specifier]:
            low, high = _bounds(spec)
            if low and (lower is None or low[0] > lower[0] or (low[0] == lower[0] and not low[1])):
                lower = low
            if high and (upper is None or high[0] < upper[0] or (high[0] == upper[0] and not high[1])):
                upper = high
    except InvalidVersion:
        return ""
    if lower and upper and (lower[0] > upper[0] or (lower[0] == upper[0] and not (lower[1] and upper[1]))):
        return "no version lies between their bounds"
    return ""


def conflicts(ours: Iterable[str], theirs: Iterable[str]) -> list[tuple[str, str, str]]:
    """(ours, theirs, why) for each pair of conflicting requirements."""
    theirs = list(theirs)
    return [(x, y, why) for x in ours for y in theirs if (why := conflict(x, y))]


def requirement_clash(framework: str, ours: Iterable[str], image: str, theirs: Iterable[str]) -> str:
    """Why the venv of ``framework`` on container ``image`` could not be built (a package both
    require at versions no release satisfies), for the plugin check's line; or ''."""
    for mine, needed, why in conflicts(ours, theirs):
        return (f"framework {framework!r} requires {mine} and container {image!r} requires {needed}: {why}. "
                "Fix: change one of them so that a version satisfies both")
    return ""
