"""`lumi-scaffold update`: copier update with the checks Copier leaves out.

Copier exits 0 even when the update leaves conflict markers or .rej files, and its
messages for a dirty or untracked project are easy to miss. This wrapper refuses a dirty
project up front, runs the update with trust (the template's own extension), and then
lists every file that still needs the user's hand. ``pretend`` runs the same update on a
throwaway clone and shows the diff without touching the project (check mode).
"""

from __future__ import annotations

import re
import shutil
from fnmatch import fnmatch
import subprocess
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .answers import ANSWERS_FILE, read_answers
from .errors import UserMessageError

__all__ = ["ANSWERS_FILE", "UpdateResult", "check_project", "project_notices", "read_answers", "template_answers", "update_available",
           "update_project"]
MARKER = re.compile(r"^(<<<<<<< |>>>>>>> )", re.M)
# 0.5 moved the library into scripts/lib/ (owned by the template) and each job's command
# into its job file (COMMAND=(...)); 0.4 had made it a static library with one values file.
# In a project from before, a job file the user had edited conflicts (or, resolved to its
# old form, still sources a file that is gone), and the old library files are removed, a
# user's change to one of them with it (git keeps it; docs/updating.md).
LIBRARY_05 = "scripts/lib/job.sh"
OLD_LIBRARY = {
    "scripts/job-env.sh": "scripts/lib/job.sh", "scripts/job-kinds.sh": "scripts/lib/job.sh and scripts/lib/sweep.sh",
    "scripts/values-lib.sh": "scripts/lib/values-lib.sh", "scripts/run.sh": "scripts/lib/run.sh",
    **{f"scripts/{name}": f"scripts/lib/{name}" for name in (
        "run-profile.sh", "caches.sh", "prestage.sh", "preflight.sh", "fault.py", "watchdog.py",
        "image_packages.py", "reports.py", "project_values.py")},
    # 0.5: the network check's name says no vendor (it was rccl_net.py, in scripts/ before 0.4).
    "scripts/rccl_net.py": "scripts/lib/collective_net.py", "scripts/lib/rccl_net.py": "scripts/lib/collective_net.py",
    **{f"src/*/{name}": f"scripts/lib/python/{name}" for name in ("heartbeat.py", "runlog.py")},
    "src/*/allreduce_bench.py": "scripts/lib/allreduce_bench.py",
}
OLD_JOB_FORM = re.compile(r"scripts/job-(env|kinds)\.sh")
NEW_JOB_FORM = ("the lines from its `source` on are now: source \"${{SLURM_SUBMIT_DIR:-.}}/scripts/lib/job.sh\", "
                "COMMAND=(...) (what every rank runs: {command}, with the arguments you added after {call}), "
                "WORKDIR=\"${{PROJECT_DIR}}\" and {call} \"$@\"; job options travel in the environment (CHAIN=N sbatch "
                "jobs/train.sbatch, not --chain N); a fresh project (lumi-scaffold new) shows the whole file")
JOB_CALLS = {"train.sbatch": "train_job", "profile.sbatch": "profile_job", "smoke-test.sbatch": "smoke_job",
             "sweep.sbatch": "sweep_job", "preflight.sbatch": "preflight_job"}


@dataclass
class UpdateResult:
    """What an update changed and what is left for the user."""

    changed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    diff: str = ""
    added: list[str] = field(default_factory=list)  # new files, untracked: `git diff` does not show them
    notices: list[str] = field(default_factory=list)


def _git(project: Path, *args: str, check: bool = True) -> str:
    result = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True)
    if check and result.returncode:
        raise UserMessageError(f"git {' '.join(args)} failed in {project}: {result.stderr.strip()}")
    return result.stdout


def template_answers(project: Path, answers: dict[str, Any] | None = None) -> dict[str, Any]:
    """The project's answers (``answers`` where the caller has read them), which must
    record the template version the project came from."""
    data = answers or read_answers(project)
    if not data.get("_src_path") or not data.get("_commit"):
        raise UserMessageError(
            f"{project / ANSWERS_FILE} lacks _src_path or _commit, so Copier cannot find the template version this project "
            "came from. Fix: generate from a tagged template repository (a URL or an absolute path)."
        )
    return data


def _check_plugin_data(project: Path, answers: dict[str, Any], data: dict[str, Any]) -> None:
    """Refuse plugin_data that would not pass as plugin data, before Copier starts: Copier
    renders the project's old template version with the recorded plugin_data, and template
    versions before 0.3 do not check it themselves."""
    from .answers import recorded_plugin_data
    from .plugin_data import validate_plugin_data

    if "plugin_data" in data:
        validate_plugin_data(_json(data["plugin_data"]), "--data plugin_data")
    if "plugin_data" in answers:
        recorded_plugin_data(project, answers)


def _json(value: Any) -> Any:
    import json

    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value  # not JSON: reported as not a mapping


def check_project(project: Path) -> None:
    if not project.is_dir():
        raise UserMessageError(f"{project} is not a directory")
    if _git(project, "rev-parse", "--is-inside-work-tree", check=False).strip() != "true":
        raise UserMessageError(f"{project} is not under git. Fix: git init && git add -A && git commit -m 'Generated project'")
    dirty = _git(project, "status", "--porcelain", "--", ".").splitlines()
    if dirty:
        files = ", ".join(line[3:] for line in dirty[:10]) + (" ..." if len(dirty) > 10 else "")
        raise UserMessageError(f"{project} has uncommitted changes ({files}). Fix: commit or stash them, then update.")


def _conflicts(project: Path, changed: list[str]) -> list[str]:
    found = set(_git(project, "diff", "--name-only", "--diff-filter=U").split())
    for rel in changed:
        path = project / rel
        if rel.endswith(".rej"):
            found.add(rel)
        elif path.is_file():
            try:
                if MARKER.search(path.read_text(errors="replace")):
                    found.add(rel)
            except OSError:
                continue
    return sorted(found)


def _changed(project: Path, untracked_only: bool = False) -> list[str]:
    lines = _git(project, "status", "--porcelain", "--untracked-files=all", "--", ".").splitlines()
    return sorted({line[3:].split(" -> ")[-1] for line in lines if not untracked_only or line.startswith("??")})


def _is_relative_path(src: str) -> bool:
    """A local template path that Copier would read from the current directory."""
    return not src.startswith(("/", "~")) and ":" not in src


def _update_ref(project: Path, src: str, vcs_ref: str | None) -> str | None:
    """The template version to update to, looked up once.

    The bundled template (bundle.py) is refreshed from the installed package and defaults to
    that package's template. For other sources the newest PEP 440 tag is found here, once:
    Copier would look it up in each of its three renders and, in a template without tags,
    print "No git tags found in template; using HEAD as ref" three times.
    """
    from .bundle import template_ref

    if _is_relative_path(src):
        raise UserMessageError(
            f"{project / ANSWERS_FILE} records the template as the relative path _src_path: {src}, which Copier "
            "reads from the current directory, not from the project. Fix: set _src_path to the template's "
            "absolute path or URL, commit, and update again."
        )
    ref = template_ref(src, vcs_ref)
    if ref is not None:
        return ref
    try:
        from copier._vcs import get_latest_tag, get_repo

        url = get_repo(src)
        return get_latest_tag(url) if url else None  # prints Copier's warning, once, when there are no tags
    except Exception:  # noqa: BLE001 - an unreachable or odd source: Copier reports it in its own words
        return None


def _run_copier_update(project: Path, data: dict[str, Any], vcs_ref: str | None, quiet: bool) -> None:
    import copier
    from copier.errors import CopierError

    from .bundle import is_bundled

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            copier.run_update(
                str(project),
                data=data,
                defaults=True,
                overwrite=True,
                unsafe=True,
                conflict="inline",
                vcs_ref=vcs_ref,
                quiet=quiet,
            )
    except (CopierError, ValueError) as exc:
        fix = ""
        if is_bundled(read_answers(project).get("_src_path")) and ("Unknown revision" in str(exc) or "downgrading" in str(exc)):
            from . import __version__

            fix = (f". The template of lumi-scaffold {__version__} installed here is older than the one that made "
                   "this project. Fix: pipx upgrade lumi-scaffold (or uv tool upgrade lumi-scaffold), then update again")
        raise UserMessageError(f"copier update failed: {exc}{fix}") from None


def update_project(
    project: Path | str,
    data: dict[str, Any] | None = None,
    *,
    pretend: bool = False,
    vcs_ref: str | None = None,
    quiet: bool = False,
) -> UpdateResult:
    """Update ``project`` from its template; with ``pretend`` only compute the diff."""
    project = Path(project).resolve()
    check_project(project)
    answers = template_answers(project)
    _check_plugin_data(project, answers, data or {})
    vcs_ref = _update_ref(project, str(answers["_src_path"]), vcs_ref)
    before_05 = (project / LIBRARY_05).exists()
    if pretend:
        return _pretend(project, data or {}, vcs_ref, before_05)
    _run_copier_update(project, data or {}, vcs_ref, quiet)
    changed = _changed(project)
    conflicts = _conflicts(project, changed)
    return UpdateResult(changed=changed, conflicts=conflicts, added=_changed(project, untracked_only=True),
                        notices=project_notices(project) + _layout_05(project, before_05, conflicts))


def _layout_05(project: Path, had_lib: bool, conflicts: list[str]) -> list[str]:
    """For a project from before 0.5, after its update: what to do with a job file that
    conflicts or still has the 0.4 form, and where the old library files went (a change the
    user had made to one of them is in git, not in the project any more)."""
    if had_lib or not (project / LIBRARY_05).exists():
        return []
    out = []
    for job in sorted((project / "jobs").glob("*.sbatch")):
        try:
            text = job.read_text(errors="replace")
        except OSError:
            continue
        rel, call = f"jobs/{job.name}", JOB_CALLS.get(job.name, "train_job")
        command = "python -u src/<package>/smoke_test.py" if call == "smoke_job" else "python -u src/<package>/train.py"
        if rel in conflicts:
            out.append(f"{rel}: your edit conflicts with 0.5's layout. Fix: keep the new lines; {NEW_JOB_FORM.format(command=command, call=call)}; "
                       "limit lines such as PROGRESS_TIMEOUT=... may stay above the call")
        elif OLD_JOB_FORM.search(text):
            out.append(f"{rel}: still sources the 0.4 library, which 0.5 removed, so the job fails at its first "
                       f"line. Fix: {NEW_JOB_FORM.format(command=command, call=call)}")
    tracked = _tracked(project)
    removed = [name for old in OLD_LIBRARY for name in tracked if fnmatch(name, old) and not (project / name).exists()]
    if removed:
        out.append(f"0.5 moved the library into scripts/lib/ (owned by the template) and removed {', '.join(removed)}; "
                   "a change you had made to one of them is not carried over. Fix: git diff HEAD -- scripts/ src/ shows "
                   "what was removed; put a change of yours in the job file (jobs/) or scripts/values.sh")
    out.append("0.5's jobs give your script no --output and no --data: it finds RUN_DIR, CHECKPOINT_DIR and DATA_DIR "
               "in its environment. Fix: if your own script took them as arguments, write them into COMMAND in "
               "jobs/train.sbatch: --output \"${RUN_DIR}\" --data \"${DATA_DIR}\" (docs/updating.md)")
    return out


def _tracked(project: Path) -> list[str]:
    """The files under scripts/ and src/ that git has at HEAD (before the update's changes)."""
    return _git(project, "ls-tree", "-r", "--name-only", "HEAD", "--", "scripts", "src").split()


def _pretend(project: Path, data: dict[str, Any], vcs_ref: str | None, had_lib: bool = True) -> UpdateResult:
    top = Path(_git(project, "rev-parse", "--show-toplevel").strip())
    sub = project.relative_to(top)
    scratch = Path(tempfile.mkdtemp(prefix="lumi-update-pretend-"))
    try:
        clone = scratch / "clone"
        _git(scratch, "clone", "--quiet", str(top), str(clone))
        target = clone / sub
        _run_copier_update(target, data, vcs_ref, quiet=True)
        changed, added = _changed(target), _changed(target, untracked_only=True)
        _git(target, "add", "--all", "--", ".")
        diff = _git(target, "diff", "--cached", "--", ".")
        conflicts = _conflicts(target, changed)
        return UpdateResult(changed=changed, conflicts=conflicts, diff=diff, added=added,
                            notices=project_notices(target) + _layout_05(target, had_lib, conflicts))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def project_notices(project: Path, answers: dict[str, Any] | None = None) -> list[str]:
    """Legacy/removed images and plugins whose versions differ from those that made the
    project (``answers``: its answers where the caller has read them)."""
    from .answers import recorded_plugin_data
    from .plugins import get_catalogue
    from .known_issues import notices

    answers = template_answers(project, answers)
    data = recorded_plugin_data(project, answers)
    cat = get_catalogue()
    out = notices(data, cat)
    current = cat.plugin_versions()
    for name, version in sorted(data.plugins.items()):
        if name not in current:
            out.append(f"plugin {name} {version} made this project but is not installed now; its choices are gone")
        elif current[name] != version:
            out.append(f"plugin {name} was {version} when this project was made, now {current[name]}")
    return out


def update_available(answers: dict[str, Any]) -> str | None:
    """What ``copier check-update`` says, for a project made from the bundled template: the
    installed lumi-scaffold's template (HEAD of its bundle) when it is newer than the one the
    project records (``_commit``), as one line with the command; None where the project is up
    to date, comes from another source (``copier check-update`` asks that one), or records a
    version the installed template does not have (``update`` says so)."""
    from . import __version__
    from .bundle import is_bundled, package_bundle

    recorded = str(answers.get("_commit") or "")
    if not recorded or not is_bundled(str(answers.get("_src_path") or "")):
        return None
    try:
        data = package_bundle()
    except UserMessageError:
        return None
    with tempfile.TemporaryDirectory(prefix="lumi-scaffold-check-") as tmp:
        bundle = Path(tmp) / "t.bundle"
        bundle.write_bytes(data)
        repo = Path(tmp) / "t.git"
        if subprocess.run(["git", "clone", "--quiet", "--bare", str(bundle), str(repo)], capture_output=True).returncode:
            return None

        def git(*args: str) -> str | None:
            result = subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True)
            return result.stdout.strip() if result.returncode == 0 else None

        head = git("rev-parse", "HEAD")
        mine = git("rev-parse", "--verify", "--quiet", f"{recorded}^{{commit}}")  # a tag or `git describe` output
        if not head or not mine or mine == head or git("merge-base", "--is-ancestor", mine, head) is None:
            return None
        installed = git("describe", "--tags", "--always", "HEAD") or head[:7]
    return (f"an update is available: this project was made from template {recorded}, and lumi-scaffold {__version__} "
            f"installed here has {installed} (its CHANGELOG says what that brings). Fix: lumi-scaffold update --pretend to "
            "see it, then lumi-scaffold update")
