"""Generated scripts that run outside a Slurm job: setup-venv.sh, run.sh, prestage.sh,
attach.sh.

The container runtime is the test stand-in tests/slurm/fakebin/singularity (Singularity
cannot be installed on the CI machines); `python` inside it is this machine's Python.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lumi_scaffold.lint import lint_project
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.testing import lint_projects

from .helpers import REPO, need_module, render
from .images import add_wheel, image_venv
from .jobs import image_env
from .slurm.harness import FAKEBIN


def env_for(tmp_path: Path, python_dir: str | Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a login shell, with the stand-in container whose Python is
    ``python_dir``'s (default: this interpreter's, an image whose framework lives in the
    base interpreter, like the former LUST images' conda env)."""
    site = tmp_path / "site"
    for rel in ("pfs", "scratch", "projappl", "project", "flash", "appl"):
        (site / rel).mkdir(parents=True, exist_ok=True)
    image = tmp_path / "image.sif"
    image.write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SINGULARITY", "PIP_"))}
    env.update(PATH=f"{FAKEBIN}:{python_dir or Path(sys.executable).parent}:{env['PATH']}", SIF=str(image),
               FAKE_SINGULARITY_SITE_ROOT=str(site), PIP_CACHE_DIR=str(tmp_path / "pip-cache"), PIP_NO_INDEX="1",
               PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def setup_venv(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "scripts/setup-venv.sh"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)


def venv_version(project: Path, name: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({name!r}))"
    return subprocess.run([str(project / "venv/bin/python"), "-c", code], capture_output=True, text=True).stdout.strip()


def test_setup_venv_builds_on_the_container_python_and_keeps_the_framework(template, tmp_path):
    """Former-LUST layout: the framework in the image's own interpreter (here: this one, with
    its real torch). Every distribution it sees is frozen at its exact version."""
    need_module("torch", "the image stand-in's framework is this Python's torch (pip install torch)")
    torch_version = importlib.metadata.version("torch")  # (not imported: ~2.5 CPU-s in the worker)
    project = render(template, tmp_path / "p", container="lust-pytorch-2.7.1", extra_requirements="numpy")
    env = env_for(tmp_path, **image_env(tmp_path, WITH_CONDA="true"))
    result = setup_venv(project, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"venv ready; the image's \d+ pinned distributions are intact, 0 of its \d+ others shadowed\.",
                     result.stdout), result.stdout
    frozen = (project / "venv/image-constraints.txt").read_text().splitlines()
    assert f"torch=={torch_version}   # pinned: framework" in frozen
    assert f"pytest>={pytest.__version__}   # upgradable: pure Python" in frozen  # (this machine's pytest: a pure wheel)
    assert venv_version(project, "torch") == torch_version  # the image's framework, seen through the venv
    record = json.loads((project / "venv/image-packages.json").read_text())
    assert record["image"] == env["SIF"]
    assert record["dists"]["numpy"]["tier"] == "pinned" and record["dists"]["numpy"]["why"].startswith("binary: ")
    # A second run reuses the record; another image needs a new venv.
    again = setup_venv(project, env)
    assert again.returncode == 0, again.stdout + again.stderr
    other = tmp_path / "other.sif"
    other.write_bytes(b"")
    moved = setup_venv(project, {**env, "SIF": str(other)})
    assert moved.returncode == 1 and f"the venv was made for {env['SIF']}, and this is {other}" in moved.stderr


LAIF_IMAGE = {"torch": "2.10.0+rocm7.0.0.lw.git1234", "flash_attn": "2.8.3", "xformers": "0.0.32+d9b9c5f.d20260401",
              "bitsandbytes": "0.48.0.dev0", "vllm": "0.11.1+rocm700", "deepspeed": "0.18.2", "apex": "1.8.0",
              "transformers": "4.44.0"}


@pytest.fixture
def laif(tmp_path):
    """A LAIF-like image: its Python is a venv (/opt/venv) with ROCm builds of torch,
    flash-attention, xformers, bitsandbytes, vLLM, DeepSpeed and apex (binary) and a pure-Python
    transformers; a local index with generic wheels of some of them and packages that ask for
    them."""
    bin_dir = image_venv(tmp_path / "opt-venv", LAIF_IMAGE, pure=("transformers",))
    wheels = tmp_path / "wheels"
    add_wheel(wheels, "flash_attn", "2.9.0")
    add_wheel(wheels, "needs-new-flash", "1.0", ["flash-attn>=2.9"])
    add_wheel(wheels, "uses-flash", "1.0", ["flash-attn"])
    add_wheel(wheels, "plain", "1.0")
    add_wheel(wheels, "torch", "2.11.0")
    add_wheel(wheels, "needs-new-torch", "1.0", ["torch>=2.11"])
    for version in ("4.39.0", "4.46.1"):
        add_wheel(wheels, "transformers", version)
    add_wheel(wheels, "needs-old-transformers", "1.0", ["transformers<4.40"])
    return bin_dir, env_for(tmp_path, bin_dir, PIP_FIND_LINKS=str(wheels)), wheels


def test_setup_venv_sees_an_image_whose_python_is_a_venv(template, tmp_path, laif):
    """--system-site-packages from a venv's Python reaches the base interpreter, where this
    machine's torch (not the image's) lives: the venv must see the image's own packages."""
    bin_dir, env, _ = laif
    project = render(template, tmp_path / "p", extra_requirements="plain uses-flash")
    result = setup_venv(project, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "venv: sees the image's packages in" in result.stdout
    for name, version in LAIF_IMAGE.items():
        assert venv_version(project, name) == version, name
    frozen = (project / "venv/image-constraints.txt").read_text()
    assert "flash_attn==2.8.3" in frozen and "vllm==0.11.1+rocm700" in frozen
    assert venv_version(project, "plain") == "1.0"  # the requirements, installed into the venv


def test_setup_venv_refuses_a_requirement_that_needs_another_flash_attention(template, tmp_path, laif):
    """A binary package of the image is pinned: pip names the clash, the script names the
    package, why it is pinned and the fix; a line in constraints.txt takes it over."""
    _, env, _ = laif
    project = render(template, tmp_path / "p", extra_requirements="needs-new-flash")
    result = setup_venv(project, env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "flash-attn>=2.9" in result.stderr or "flash-attn>=2.9" in result.stdout  # pip names the clash
    assert result.stderr.splitlines()[-1] == (
        "ERROR: pip cannot keep flash_attn at the image's 2.8.3, which is pinned: binary: a platform wheel "
        "(cp3-cp3-linux_x86_64) (pip's lines above name what asks for another). Fix: remove or loosen the requirement "
        "that needs it, then rerun scripts/setup-venv.sh; or take it over from the image: add flash-attn>=2.9 to "
        "constraints.txt (a generic build may lack what the image's was built for).")
    assert venv_version(project, "flash_attn") == "2.8.3"
    # The fix it names: the project takes flash-attention over from the image.
    with (project / "constraints.txt").open("a") as constraints:
        constraints.write("flash-attn>=2.9\n")
    taken = setup_venv(project, env)
    assert taken.returncode == 0, taken.stdout + taken.stderr
    assert [line for line in taken.stdout.splitlines() if "shadowed by" in line] == [
        "venv: flash_attn 2.8.3 of the image is shadowed by 2.9.0 (pulled in by needs-new-flash in requirements.txt; "
        "constraints.txt: flash-attn>=2.9)"]
    assert venv_version(project, "flash_attn") == "2.9.0" and venv_version(project, "torch") == LAIF_IMAGE["torch"]


def test_setup_venv_lets_requirements_upgrade_a_pure_python_package_of_the_image(template, tmp_path, laif):
    """transformers is pure Python in the image: a requirement may upgrade it (one line says
    which version shadows which), never downgrade it (unless constraints.txt says so)."""
    _, env, _ = laif
    project = render(template, tmp_path / "p", extra_requirements="transformers==4.46.1")
    result = setup_venv(project, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line for line in result.stdout.splitlines() if "shadowed by" in line] == [
        "venv: transformers 4.44.0 of the image is shadowed by 4.46.1 (requirements.txt)"]
    assert venv_version(project, "transformers") == "4.46.1"
    assert all(venv_version(project, name) == version for name, version in LAIF_IMAGE.items() if name != "transformers")
    frozen = (project / "venv/image-constraints.txt").read_text().splitlines()
    assert "transformers>=4.44.0   # upgradable: pure Python" in frozen
    assert "torch==2.10.0+rocm7.0.0.lw.git1234   # pinned: framework" in frozen
    assert "flash_attn==2.8.3   # pinned: binary: a platform wheel (cp3-cp3-linux_x86_64)" in frozen
    tiers = {k: (d["tier"], d["why"]) for k, d in json.loads((project / "venv/image-packages.json").read_text())["dists"].items()}
    assert tiers["transformers"] == ("upgradable", "pure Python") and tiers["torch"] == ("pinned", "framework")
    assert tiers["vllm"] == ("pinned", "binary: a platform wheel (cp3-cp3-linux_x86_64)")
    # Down: refused with the reason, unless constraints.txt takes it over.
    older = render(template, tmp_path / "q", extra_requirements="needs-old-transformers")
    refused = setup_venv(older, env)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[-1].startswith(
        "ERROR: pip cannot keep transformers at the image's 4.44.0 or newer (pure Python: upgradable, never "
        "downgraded; pip's lines above name what asks for older). Fix: ")
    with (older / "constraints.txt").open("a") as constraints:
        constraints.write("transformers<4.40\n")
    taken = setup_venv(older, env)
    assert taken.returncode == 0, taken.stdout + taken.stderr
    assert venv_version(older, "transformers") == "4.39.0"


def test_setup_venv_refuses_a_requirement_that_would_replace_torch(template, tmp_path, laif):
    """The framework is pinned whatever constraints.txt says."""
    _, env, _ = laif
    project = render(template, tmp_path / "p", extra_requirements="needs-new-torch")
    (project / "constraints.txt").write_text("torch>=2.11\n")
    result = setup_venv(project, env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1] == (
        "ERROR: pip cannot keep torch at the image's 2.10.0+rocm7.0.0.lw.git1234, which is pinned: framework (pip's "
        "lines above name what asks for another). Fix: remove or loosen the requirement that needs it, then rerun "
        "scripts/setup-venv.sh; the framework is never replaced in the venv (for another version, move the project "
        "to another image).")
    assert venv_version(project, "torch") == LAIF_IMAGE["torch"]


def test_setup_venv_guard_names_a_replaced_package_and_what_pulls_it_in(template, tmp_path, laif):
    """Past the constraints (a pip install by hand): the next run names the change and the
    requirement that needs the package."""
    _, env, wheels = laif
    project = render(template, tmp_path / "p", extra_requirements="uses-flash")
    assert setup_venv(project, env).returncode == 0
    subprocess.run([str(project / "venv/bin/python"), "-m", "pip", "install", "--no-deps", "--no-index",
                    str(wheels / "flash_attn-2.9.0-py3-none-any.whl")], env=env, check=True, capture_output=True)
    result = setup_venv(project, env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("ERROR: flash_attn 2.8.3 of the image was replaced by 2.9.0 (pulled in by uses-flash in requirements.txt); "
            "it is pinned: binary: a platform wheel (cp3-cp3-linux_x86_64). Fix: ") in result.stderr


JAX_IMAGE = {"jax": "0.4.35.dev20250321", "jaxlib": "0.4.35.dev20250321", "jax-rocm60-plugin": "0.4.35.dev20250321",
             "jax-rocm60-pjrt": "0.4.35.dev20250321", "numpy": "2.2.4", "scipy": "1.15.2"}


def test_jax_requirements_set_up_against_dev_versions_of_jax(template, tmp_path):
    """The JAX 0.4.35 image ships jax 0.4.35.dev20250321 [EBC]: flax and optax at the
    versions the catalogue gives must install without touching jax, jaxlib or the ROCm
    plugins, while PyPI (here: a local index with the real packages' requirements) offers
    jax 0.4.35 and newer flax/optax that want a newer jax. A pin jax==0.4.35, as the
    catalogue had, is refused instead of installing PyPI's jax."""
    bin_dir = image_venv(tmp_path / "image", JAX_IMAGE, pure=("jax",))  # jax is pure Python, jaxlib is not
    wheels = tmp_path / "wheels"
    for version in ("0.4.35", "0.8.0"):
        add_wheel(wheels, "jax", version, [f"jaxlib>={version}"])
        add_wheel(wheels, "jaxlib", version)
    add_wheel(wheels, "flax", "0.10.4", ["jax>=0.4.27", "optax", "msgpack"])
    add_wheel(wheels, "flax", "0.12.0", ["jax>=0.8.0", "optax", "msgpack"])
    add_wheel(wheels, "optax", "0.2.5", ["jax>=0.4.27", "jaxlib>=0.4.27", "chex>=0.1.87"])
    add_wheel(wheels, "optax", "0.2.6", ["jax>=0.5.3", "jaxlib>=0.5.3", "chex>=0.1.87"])
    add_wheel(wheels, "chex", "0.1.90", ["jax>=0.4.27", "jaxlib>=0.4.27"])
    add_wheel(wheels, "msgpack", "1.1.0")
    project = render(template, tmp_path / "p", framework="jax")
    assert (project / "requirements.txt").read_text().splitlines()[-2:] == ["flax==0.10.4", "optax==0.2.5"]
    env = env_for(tmp_path, bin_dir, PIP_FIND_LINKS=str(wheels),
                  **image_env(tmp_path, WITH_CONDA=f"export PATH={bin_dir}:$PATH"))
    result = setup_venv(project, env)
    assert result.returncode == 0, result.stdout + result.stderr
    for name, version in JAX_IMAGE.items():
        assert venv_version(project, name) == version, name
    assert (venv_version(project, "flax"), venv_version(project, "chex")) == ("0.10.4", "0.1.90")
    # Unpinned, pip backtracks to the flax and optax that accept the image's jax.
    (project / "requirements.txt").write_text("flax\noptax\n")
    result = setup_venv(project, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (venv_version(project, "optax"), venv_version(project, "jax")) == ("0.2.5", "0.4.35.dev20250321")
    # The catalogue's old pin: refused, where it used to install jax 0.4.35 from PyPI.
    (project / "constraints.txt").write_text("jax==0.4.35\n")
    result = setup_venv(project, env)
    output = result.stdout + result.stderr
    assert result.returncode == 1 and re.search(r"\(constraint\) jax==0\.4\.35,==0\.4\.35\.dev20250321", output), output
    assert venv_version(project, "jax") == "0.4.35.dev20250321"


@pytest.mark.parametrize("image", [{}, {"container": "custom", "container_path": "/project/p/own.sif"}], ids=["catalogue", "custom"])
def test_constraints_stop_pip_from_replacing_the_framework(template, tmp_path, image):
    """A generic torch from the index must not replace the image's, whatever the catalogue
    knows of the image (nothing, for your own image)."""
    need_module("torch", "the image stand-in's framework is this Python's torch (pip install torch)")
    torch_version = importlib.metadata.version("torch")  # (not imported: ~2.5 CPU-s in the worker)
    wheels = tmp_path / "wheels"
    add_wheel(wheels, "torch", "99.0")
    project = render(template, tmp_path / "p", extra_requirements="torch==99.0", **image)
    result = setup_venv(project, env_for(tmp_path, PIP_FIND_LINKS=str(wheels)))
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert f"The user requested (constraint) torch=={torch_version}" in output and "torch==99.0" in output
    assert venv_version(project, "torch") == torch_version


def test_run_sh_works_outside_slurm(template, tmp_path):
    project = render(template, tmp_path / "p", container="lust-pytorch-2.7.1")
    env = env_for(tmp_path, WITH_CONDA="echo activated", USER="tester")
    result = subprocess.run(["scripts/lib/run.sh", "bash", "-c", 'echo "$RANK $WORLD_SIZE $MIOPEN_USER_DB_PATH $PYTHONNOUSERSITE"'],
                            cwd=project, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["activated", "0 1 /tmp/tester-miopen-cache-0-0 1"]
    del env["WITH_CONDA"]
    result = subprocess.run(["scripts/lib/run.sh", "true"], cwd=project, env=env, capture_output=True, text=True)
    assert result.returncode != 0 and "this image should define WITH_CONDA" in result.stderr


# TEST STAND-IN for a conda activation script: like conda's, it reads variables that may be
# unset (set -u would end the script that sources it).
ACTIVATE = """if [ -n "${CONDA_SHLVL_OF_THIS_TEST}" ]; then echo nested; fi
export PATH="/stand-in/conda/bin:${PATH}" STAND_IN_ACTIVATED="${PS1_OF_THIS_TEST}yes"
"""


def test_run_sh_activates_the_image_env_under_set_u(template, tmp_path):
    """$WITH_CONDA runs with nounset off (run.sh is `set -u`), inside the stand-in container,
    and `set -u` is back on for the rest of run.sh."""
    project = render(template, tmp_path / "p", container="lust-pytorch-2.7.1")
    activate = tmp_path / "activate.sh"
    activate.write_text(ACTIVATE)
    env = env_for(tmp_path, USER="tester", **image_env(tmp_path, WITH_CONDA=f"source {activate}"))
    result = subprocess.run(["singularity", "exec", env["SIF"], "scripts/lib/run.sh", "bash", "-c",
                             'echo "$STAND_IN_ACTIVATED ${PATH%%:*}"'],
                            cwd=project, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["yes /stand-in/conda/bin"]
    nounset = "\n".join(line if not line.startswith("exec ") else "echo \"${UNSET_AFTER_ACTIVATION}\"" for line in
                         (project / "scripts/lib/run.sh").read_text().splitlines())
    (project / "scripts/lib/run.sh").write_text(nounset)
    result = subprocess.run(["singularity", "exec", env["SIF"], "scripts/lib/run.sh"], cwd=project, env=env,
                            capture_output=True, text=True)
    assert result.returncode != 0 and "UNSET_AFTER_ACTIVATION: unbound variable" in result.stderr


@pytest.mark.parametrize("shape, limit", [
    ({"gpus_per_node": 4, "partition": "small-g"}, "small-g gives jobs on a shared node about 64 GB of /tmp"),
    ({"gpus_per_node": 8, "partition": "small-g"}, "the job may use 368640 MiB of its memory for it"),
])
def test_prestage_checks_the_archive_against_the_partitions_tmp_limit(template, tmp_path, shape, limit):
    """On small-g a job that shares the node gets about 64 GB of /tmp whatever its memory
    [AIG-04] (4 GCDs x 60G would allow 180 GB); with the whole node it is its memory."""
    archive = tmp_path / "data.tar"
    with open(archive, "wb") as handle:  # sparse: 65 GB of size, no space on disk
        handle.truncate(65 * 10**9)
    project = render(template, tmp_path / "p", prestage=True, dataset_archive=str(archive), **shape)
    gpus = shape["gpus_per_node"]
    env = {**os.environ, "DATASET_ARCHIVE": str(archive), "NODE_TMP": str(tmp_path), "STAGE_DIR": str(tmp_path / "stage"),
           "SLURM_NODEID": "0", "SLURM_GPUS_ON_NODE": str(gpus)}
    env.update({"SLURM_MEM_PER_GPU": "61440"} if gpus < 8 else {"SLURM_MEM_PER_NODE": "491520"})
    result = subprocess.run(["bash", "scripts/lib/prestage.sh"], cwd=project, env=env, capture_output=True, text=True)
    if gpus == 8 and result.returncode == 0:
        return  # the whole node's memory allows 65 GB, and this disk had room for it
    assert result.returncode == 1 and "needs 61988 MiB" in result.stderr, result.stderr
    assert limit in result.stderr, result.stderr


def test_jax_projects_say_nothing_about_pytorch(template, tmp_path):
    """The files made for this project (the static library, scripts/lib/job.sh, run.sh and
    run-profile.sh, is the same in every project and describes both launchers)."""
    project = render(template, tmp_path / "p", framework="jax", nodes=2, profiler="rocprof")
    for name in ("scripts/values.sh", "jobs/train.sbatch",
                 "jobs/profile.sbatch", "jobs/smoke-test.sbatch", "jobs/interactive.sh", "README.md"):
        text = (project / name).read_text().split("\n## Sources\n")[0]  # (source titles may name PyTorch)
        assert not re.search(r"torch|DDP|DataLoader", text), (name, re.findall(r".*(?:torch|DDP|DataLoader).*", text))


def test_attach_requires_a_job_id_and_has_help(template, tmp_path):
    project = render(template, tmp_path / "p")
    result = subprocess.run(["scripts/attach.sh"], cwd=project, capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.startswith("Usage: scripts/attach.sh JOBID")
    result = subprocess.run(["scripts/attach.sh", "--help"], cwd=project, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("Usage: scripts/attach.sh JOBID")
    # Settled on LUMI by the workshop's own exercise: an attached step sees the job's GPUs.
    assert "UNCONFIRMED" not in result.stdout and "--gpus-per-node" not in result.stdout
    assert ("Such a step sees the job's GPUs without\nasking for them: LUMI's AI workshop and course watch a running "
            "job's GCDs with rocm-smi\nfrom a step attached this way. [WS-04], [TM-ai-E08]\n") in result.stdout
    for bad in (["12x"], ["1234", "nid005001", "--frob"], ["1234", "--"]):
        result = subprocess.run(["scripts/attach.sh", *bad], cwd=project, capture_output=True, text=True)
        assert result.returncode == 2 and "See --help." in result.stderr, bad


def test_lint_command_finds_a_broken_header(template, tmp_path):
    project = render(template, tmp_path / "p", gpus_per_node=2)
    assert lint_project(project, get_catalogue()) == []
    train = project / "jobs/train.sbatch"
    train.write_text(train.read_text().replace("--time=01:00:00", "--time=4-00:00:00").replace('train_job "$@"', "train_job $@"))
    problems = lint_project(project, get_catalogue())
    assert any("train.sbatch: '4-00:00:00' exceeds the small-g limit of 3-00:00:00 (the catalogue installed now). "
               "Fix: lumi-scaffold update -d walltime=3-00:00:00" in p for p in problems)
    assert any("SC2068" in p for p in problems)


def test_lint_shellchecks_the_projects_own_files_and_a_changed_library_file(template, tmp_path, monkeypatch):
    """lint_project (lumi-scaffold lint and doctor) shellchecks the files that are not the
    library as the template wrote it (scripts/lib/SHA256SUMS; the full matrix shellchecks
    that, test_render.py), and a library file once it was changed; bash -n reads every one."""
    from lumi_scaffold import lint

    project = render(template, tmp_path / "p", nodes=2)
    given: list[list[str]] = []
    checked = lint.shellcheck

    def recorded(files, cwd=None):
        given.append(sorted(path.relative_to(project).as_posix() for path in files))
        return checked(files, cwd=cwd)

    monkeypatch.setattr(lint, "shellcheck", recorded)
    assert lint_project(project, get_catalogue()) == []
    library = {line.split("  ", 1)[1] for line in (project / lint.LIBRARY_SUMS).read_text().splitlines()}
    every = [path.relative_to(project).as_posix() for path in lint.shell_files(project)]
    assert given == [sorted(set(every) - library)]
    assert {"jobs/train.sbatch", "jobs/preflight.sbatch", "scripts/values.sh"} <= set(given[0])
    assert not {"scripts/lib/job.sh", "scripts/setup-venv.sh", "scripts/lib/preflight.sh"} & set(given[0])
    job = project / "scripts/lib/job.sh"
    job.write_text(job.read_text().replace("\nDRY_RUN=", "\necho $not_set_anywhere\nDRY_RUN=", 1))
    problems = lint_project(project, get_catalogue())
    assert "scripts/lib/job.sh" in given[-1] and "scripts/lib/run.sh" not in given[-1]
    line = job.read_text().splitlines().index("echo $not_set_anywhere") + 1
    assert [p.split(": ", 1)[0] for p in problems if "not_set_anywhere" in p] == [f"{job}:{line}:6"], problems
    (project / "scripts/lib/run.sh").write_text("if then\n")  # bash -n reads the library too
    assert any("run.sh: bash -n:" in p for p in lint_project(project, get_catalogue()))


_ABOUT_VALUES = {".copier-answers.yml", ".shellcheckrc", "scripts/values.sh", "scripts/lib/values-lib.sh", "scripts/lib/job.sh",
                 "jobs/train.sbatch"}


def test_many_projects_lint_each_distinct_line_and_job_once_and_findings_name_the_project_file(template, tmp_path):
    """lint_projects checks scripts/values.sh line by line and job files that differ only in
    comments and option words once; a finding still names the project's own file and line."""
    one = render(template, tmp_path / "one", gpus_per_node=2)
    two = render(template, tmp_path / "two", nodes=2, framework="jax")
    # Each project keeps the files these checks are about: values.sh, a job file and what it
    # sources. (A values.sh of new names is new to every file that sources it: the rest of
    # the library would be shellchecked again for each, ~30 CPU-s, and show nothing more.)
    for project in (one, two):
        for path in project.rglob("*"):
            if path.is_file() and path.relative_to(project).as_posix() not in _ABOUT_VALUES:
                path.unlink()
    three = shutil.copytree(one, tmp_path / "three")  # (its other files lint alike with one's: linted once)
    values, train = two / "scripts/values.sh", two / "jobs/train.sbatch"
    text, job = values.read_text(), train.read_text()
    # (Two lint runs, each a few seconds: what needs no finding beside a file of another
    # shape, then two findings at once.)
    # one name a string in one project and an array in the other: no finding; job files that
    # differ only in comments lint once
    (one / "scripts/values.sh").write_text((one / "scripts/values.sh").read_text().replace("{\n", "{\nextra='a'\n", 1))
    values.write_text(text.replace("{\n", "{\nextra=('a' 'b')\n", 1))
    train.write_text(job.replace("#SBATCH --time=", "# a comment of mine\n#SBATCH --time=", 1))
    # a file of another shape is linted whole: its finding, and no other
    whole = three / "scripts/values.sh"
    whole.write_text(whole.read_text() + "echo $1\n")
    found = lint_projects([one, two, three])
    assert found and all(p.startswith(f"{whole}:") for p in found), found
    assert any("SC2086" in p for p in found), found
    # a line of the union with a finding is said of the file and line it came from; a job file
    # whose command changed is linted on its own
    values.write_text(text.replace("\nsite='LUMI'\n", "\nsite='~/LUMI'\n", 1))
    line = values.read_text().split("\n").index("site='~/LUMI'") + 1
    train.write_text(job.replace('train_job "$@"', "train_job $@"))
    found = lint_projects([one, two])
    assert [p.split(": ")[0] for p in found if p.startswith(f"{values}:")] == [f"{values}:{line}:6"], found
    assert [p for p in found if not p.startswith(f"{values}:")] != [] and all(
        p.startswith(f"{train}:") and "SC2068" in p for p in found if not p.startswith(f"{values}:")), found

# TEST STAND-INS for container/build.sh: srun records its options and runs the command after
# them; cotainr records its arguments and the bind variables it was started with.
FAKE_SRUN = """#!/bin/bash
printf '%s\\n' "$*" >"${BUILD_LOG}.srun"
while [ "${1#-}" != "$1" ]; do shift; done
exec "$@"
"""
FAKE_COTAINR = """#!/bin/bash
{ printf '%s\\n' "$*"; env | grep -E '^(SINGULARITY|APPTAINER)_BIND' || true; } >"${BUILD_LOG}.cotainr"
"""


def _build(project: Path, tmp_path: Path, **extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Runs container/build.sh with the srun and cotainr stand-ins; returns its result and
    the log prefix (.srun: srun's options, .cotainr: cotainr's arguments)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("srun", FAKE_SRUN), ("cotainr", FAKE_COTAINR)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "build"
    env = env_for(tmp_path, BUILD_LOG=str(log), FAKE_MODULE_LOG=str(tmp_path / "module.log"), **extra)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    return subprocess.run(["bash", "container/build.sh"], cwd=project, env=env, capture_output=True, text=True), log


def test_cotainr_build_starts_clean_of_modules_and_bind_paths(template, tmp_path):
    """A bindings module loaded by hand sets SINGULARITY_BIND, and the build stops on its
    missing targets [TM-Cont]: build.sh purges the modules and unsets every bind variable
    before cotainr starts."""
    project = render(template, tmp_path / "p", container="cotainr")
    base = tmp_path / "base.sif"
    base.write_bytes(b"")
    result, log = _build(project, tmp_path, BASE_IMAGE=str(base), SINGULARITY_BIND="/var/spool/slurmd,/opt/cray",
                         SINGULARITY_BINDPATH="/pfs", APPTAINER_BIND="/appl")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "module.log").read_text().splitlines() == ["module purge", "module load CrayEnv cotainr"]
    cotainr = Path(f"{log}.cotainr").read_text().splitlines()
    assert cotainr == [f"build container/demo.sif --base-image={base} --conda-env=container/environment.yml "
                       "--accept-licenses"]  # and no bind variable


LAIF_MPICH = re.compile(r"^cotainr_base_image='(/appl/local/laifs/containers/lumi-multitorch-u24r70f21m50t210-(\d{8}_\d{6})/"
                        r"lumi-multitorch-mpich-u24r70f21m50t210-\2\.sif)'$", re.M)


def test_cotainr_builds_on_the_laif_rocm7_mpich_image_on_a_cpu_partition(template, tmp_path):
    """The 2026 workshop's cotainr build [WS-06-2026], [WS-PR33]: LAIF's ROCm 7.0 mpich image
    as --base-image (not the ROCm 6.4 lumi-g system), torch 2.10.0+rocm7.0 and triton-rocm
    3.6.0 from the rocm7.0 index, and the build submitted to a CPU partition with no GPU
    asked for (on small-g it is billed in GPU-hours)."""
    project = render(template, tmp_path / "p", container="cotainr")
    values = (project / "scripts/values.sh").read_text()  # (container/build.sh is the same in every project)
    match = LAIF_MPICH.search(values)
    assert match, values
    assert "\ncotainr_system=''\n" in values
    environment = (project / "container/environment.yml").read_text()
    pins = re.findall(r"^    - (.+)$", environment, re.M)
    assert pins[:4] == ["--extra-index-url https://download.pytorch.org/whl/rocm7.0", "triton-rocm==3.6.0",
                        "torch==2.10.0+rocm7.0", "torchvision==0.25.0+rocm7.0"], environment

    base = tmp_path / "base.sif"
    base.write_bytes(b"")
    result, log = _build(project, tmp_path, BASE_IMAGE=str(base))
    assert result.returncode == 0, result.stderr
    srun = Path(f"{log}.srun").read_text().split()
    partition = next(o.split("=", 1)[1] for o in srun if o.startswith("--partition="))
    lumi = get_catalogue().sites["lumi"]
    assert partition == "small" and lumi.partition(partition) is None  # not one of LUMI-G's partitions
    assert not [o for o in srun if o.startswith(("--gpus", "--gres", "--qos"))], srun
    assert "--cpus-per-task=32" in srun and "--mem=60G" in srun

    # The default base, where it is missing: one line naming it and the fix, nothing submitted.
    Path(f"{log}.srun").unlink()
    result, log = _build(project, tmp_path)
    assert result.returncode == 2 and not Path(f"{log}.srun").exists()
    assert result.stderr.count("\n") == 1 and match.group(1) in result.stderr and "Fix: give a current one with BASE_IMAGE=" in result.stderr


def test_cotainr_build_without_a_build_partition_uses_the_smoke_test_partition_and_qos(template, tmp_path, monkeypatch):
    """A site whose cotainr data names no build partition builds where the smoke test runs,
    QOS included (found in review), from its --system."""
    cat = get_catalogue()
    lumi = cat.sites["lumi"]
    parts = [p.model_copy(update={"qos": "shortq"}) if p.name == lumi.partial_node_partition else p for p in lumi.partitions]
    cotainr = lumi.cotainr.model_copy(update={"build_partition": None, "base_image": None, "system": "lumi-g"})
    monkeypatch.setitem(cat.sites, "lumi", lumi.model_copy(update={"partitions": parts, "cotainr": cotainr}))
    p = render(template, tmp_path / "p", container="cotainr")
    result, log = _build(p, tmp_path, BASE_IMAGE=str(tmp_path / "ignored.sif"))
    assert result.returncode == 0, result.stderr
    assert f"--partition={lumi.partial_node_partition} --qos=shortq " in Path(f"{log}.srun").read_text()
    assert Path(f"{log}.cotainr").read_text().split()[:3] == ["build", "container/demo.sif", "--system=lumi-g"]
    assert "`cotainr build --system=lumi-g`" in (p / "README.md").read_text()
    assert [m for m in lint_project(p, cat) if "build.sh" in m] == []  # bash -n and shellcheck


def _can_mount_namespaces() -> bool:
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True)
    return os.geteuid() == 0 and probe.returncode == 0


@pytest.mark.skipif(not _can_mount_namespaces(), reason="the stand-in mounts binds in a mount namespace (root, unshare)")
def test_a_packed_venv_is_one_squashfs_file_the_jobs_bind_at_user_software(template, tmp_path, laif, mksquashfs):
    """setup-venv.sh --pack builds the venv at /user-software and packs it with mksquashfs
    [AIG-02]; a job's container binds venv.sqsh there (image-src=/) and run.sh uses it
    instead of venv/, with the image's packages unchanged."""
    _, env, _ = laif
    env = {**env, "FAKE_SINGULARITY_MOUNT_NS": "1"}
    project = render(template, tmp_path / "p", extra_requirements="plain")
    # No mksquashfs: one line, nothing packed.
    missing = subprocess.run(["bash", "scripts/setup-venv.sh", "--pack"], cwd=project, capture_output=True, text=True,
                             env={**env, "MKSQUASHFS": "no-such-mksquashfs"}, timeout=300)
    assert missing.returncode == 1 and missing.stderr.strip().splitlines() == [
        "ERROR: --pack needs mksquashfs (no-such-mksquashfs), not found on this node. Fix: install squashfs-tools, "
        "or run without --pack."] and not (project / "venv.sqsh").exists()
    packed = subprocess.run(["bash", "scripts/setup-venv.sh", "--pack"], cwd=project, capture_output=True, text=True,
                            env={**env, "MKSQUASHFS": mksquashfs}, timeout=300)
    assert packed.returncode == 0, packed.stdout + packed.stderr
    assert "venv packed into venv.sqsh" in packed.stdout
    assert (project / "venv.sqsh").is_file() and not (project / "venv").exists() and not (project / ".venv-pack").exists()
    assert (project / "venv.sqsh").read_bytes()[:4] == b"hsqs"  # a SquashFS file, one file on the file system
    # A step as the jobs start it: job-env.sh's container, run.sh inside.
    code = ("import sys, plain_fake, importlib.metadata as m; "
            "print(sys.prefix, plain_fake.__file__, m.version('flash_attn'))")
    step = subprocess.run(["bash", "-c", 'source scripts/lib/job.sh && "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/lib/run.sh" '
                           'python -c "$1"', "step", code], cwd=project, capture_output=True, text=True, env=env,
                          timeout=120)
    assert step.returncode == 0, step.stdout + step.stderr
    said, last = step.stdout.splitlines()[0], step.stdout.splitlines()[-1]
    assert said == f"venv: {project / 'venv.sqsh'} bound at /user-software (used instead of venv/)"  # in the job log
    prefix, plain_file, flash = last.split()
    assert prefix == "/user-software" and plain_file.startswith("/user-software/lib/")
    assert flash == LAIF_IMAGE["flash_attn"]  # the image's build, not a wheel from the index
    # Without the pack (VENV_PACK=) the step has no venv: the index's package is not there.
    bare = subprocess.run(["bash", "-c", 'source scripts/lib/job.sh && "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/lib/run.sh" '
                           'python -c "import plain_fake"'], cwd=project, capture_output=True, text=True,
                          env={**env, "VENV_PACK": ""}, timeout=120)
    assert bare.returncode != 0 and "No module named 'plain_fake'" in bare.stderr


# TEST STAND-IN for Lmod's `module`, as a shell function so that it can change the job's
# environment as Lmod does: lumi-aif-singularity-bindings loads only once its directory is
# on MODULEPATH (by `module use`, or by loading Local-LAIF where the site has it), and then
# sets SINGULARITY_BIND. Every call goes to MODULE_CALLS.
STAND_IN_MODULE = r"""
module() {
    printf '%s\n' "$*" >>"${MODULE_CALLS}"
    case "$1" in
        purge) unset MODULEPATH ;;
        use) MODULEPATH="$2${MODULEPATH:+:${MODULEPATH}}" ;;
        is-avail) [ "$2" = Local-LAIF ] && [ "${HAS_LOCAL_LAIF}" = 1 ] ;;
        load)
            shift
            for name in "$@"; do
                case "${name}" in
                    Local-LAIF) [ "${HAS_LOCAL_LAIF}" = 1 ] || return 1
                                MODULEPATH="/appl/local/laifs/modules${MODULEPATH:+:${MODULEPATH}}" ;;
                    lumi-aif-singularity-bindings)
                        [[ ":${MODULEPATH:-}:" == *:/appl/local/laifs/modules:* ]] || { echo "no module ${name}" >&2; return 1; }
                        export SINGULARITY_BIND=/pfs,/scratch,/projappl,/project,/flash,/appl,/var/spool/slurmd ;;
                    *) return 1 ;;
                esac
            done ;;
        *) return 1 ;;
    esac
}
"""


@pytest.mark.parametrize("container", ["recommended", "cotainr"])
@pytest.mark.parametrize("has_local_laif", [True, False], ids=["Local-LAIF", "module-use"])
def test_job_env_loads_the_laif_bindings_module_in_either_module_form(template, tmp_path, container, has_local_laif):
    """Where LUMI has Local-LAIF, job-env.sh loads it (the 2026 workshop's form
    [WS-06-2026]); where not, `module use /appl/local/laifs/modules` (the user guide's, while
    [UG-PR315] is open). Either way the bindings module loads and sets the binds, for LAIF
    images and for a cotainr image alike."""
    project = render(template, tmp_path / "p", container=container)
    calls = tmp_path / "calls"
    env = env_for(tmp_path, MODULE_CALLS=str(calls), HAS_LOCAL_LAIF="1" if has_local_laif else "0")
    script = STAND_IN_MODULE + 'set -euo pipefail; source scripts/lib/job.sh; echo "BIND=${SINGULARITY_BIND}"'
    result = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "BIND=/pfs,/scratch,/projappl,/project,/flash,/appl,/var/spool/slurmd" in result.stdout.splitlines()
    first = ["load Local-LAIF"] if has_local_laif else ["use /appl/local/laifs/modules"]
    assert calls.read_text().splitlines() == ["purge", "is-avail Local-LAIF", *first, "load lumi-aif-singularity-bindings"]


def test_cotainr_image_runs_as_a_laif_image(template, tmp_path):
    """A cotainr image built on the LAIF base runs like LAIF images [WS-06-2026]:
    `singularity run` with the bindings module and no legacy binds, and run.sh exports no
    NCCL_NET_GDR_LEVEL, which hangs LAIF ROCm 7 jobs [LAIF-I30], on one node or two."""
    for nodes in (1, 2):
        project = render(template, tmp_path / f"p{nodes}", container="cotainr", nodes=nodes)
        env = env_for(tmp_path, MODULE_CALLS=str(tmp_path / "calls"), HAS_LOCAL_LAIF="1")
        script = STAND_IN_MODULE + 'set -euo pipefail; source scripts/lib/job.sh; printf "%s\\n" "${CONTAINER[@]}"'
        result = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        # The container command (its binds: the image generation's only, no legacy CPE binds).
        assert result.stdout.splitlines()[-5:] == ["singularity", "run", "--bind", "/pfs", env["SIF"]], result.stdout
        run = subprocess.run(["bash", "scripts/lib/run.sh", "env"], cwd=project, capture_output=True, text=True,
                             env=env_for(tmp_path))
        assert run.returncode == 0, run.stderr
        exported = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
        assert "NCCL_NET_GDR_LEVEL" not in exported and exported["NCCL_SOCKET_IFNAME"] == "hsn0,hsn1,hsn2,hsn3"


def test_run_sh_gives_each_job_its_own_node_local_tmpdir(template, tmp_path):
    """As LAIF's DDP tests set TMPDIR per job [LAIF-T]: in a job, every rank's temporary
    files (Python's tempfile here) go to one directory of that job and node in node-local
    /tmp, private to the user; another job, or another node of the job, gets another; outside
    a job, TMPDIR is left alone."""
    project = render(template, tmp_path / "p")
    job = 900000 + os.getpid() % 100000
    probe = ["bash", "scripts/lib/run.sh", "python", "-c", "import os, tempfile; d = tempfile.gettempdir(); "
             "print(d, oct(os.stat(d).st_mode & 0o777), os.stat(d).st_uid == os.getuid())"]
    user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    made = []
    try:
        seen = {}
        for job_id, node, rank in ((job, 0, 0), (job, 0, 1), (job, 1, 8), (job + 1, 0, 0)):
            env = env_for(tmp_path, SLURM_JOB_ID=str(job_id), SLURM_NODEID=str(node), SLURM_PROCID=str(rank),
                          USER=user, TMPDIR=str(tmp_path))
            result = subprocess.run(probe, cwd=project, env=env, capture_output=True, text=True)
            assert result.returncode == 0, result.stderr
            path, mode, mine = result.stdout.split()[-3:]
            made.append(path)
            seen[(job_id, node, rank)] = path
            assert path == f"/tmp/{user}-tmp-{job_id}-{node}" and mode == "0o700" and mine == "True"
        assert seen[(job, 0, 0)] == seen[(job, 0, 1)]  # the ranks of one node share it
        assert len({seen[(job, 0, 0)], seen[(job, 1, 8)], seen[(job + 1, 0, 0)]}) == 3
        outside = subprocess.run(probe, cwd=project, env=env_for(tmp_path, TMPDIR=str(tmp_path)), capture_output=True, text=True)
        assert outside.stdout.split()[-3] == str(tmp_path)
        if os.geteuid() == 0:  # a directory of that name made by another user: one line, no run
            taken = Path(f"/tmp/{user}-tmp-{job + 2}-0")
            taken.mkdir()
            made.append(str(taken))
            os.chown(taken, 65534, 65534)
            env = env_for(tmp_path, SLURM_JOB_ID=str(job + 2), SLURM_NODEID="0", USER=user)
            result = subprocess.run(probe, cwd=project, env=env, capture_output=True, text=True)
            assert result.returncode == 2 and result.stdout == ""
            assert result.stderr.count("\n") == 1 and f"TMPDIR={taken} could not be made, or is another user's" in result.stderr
    finally:
        for path in made:
            subprocess.run(["rm", "-rf", path])


def test_the_smoke_test_checks_numactl_where_torchrun_binds_with_numa_binding(template, tmp_path):
    """torchrun --numa-binding runs numactl in the image and fails without it (torch/numa/binding.py): the
    smoke test of a project whose training job relies on it stops with one line naming the
    fix where numactl is missing, and says where it found it otherwise. A project launched
    with srun (CPU masks) does not look for it."""
    project = render(template, tmp_path / "p", launcher="torchrun")
    assert "--numa-binding=exclusive" in (project / "jobs" / "train.sbatch").read_text()
    smoke = project / "src" / "demo" / "smoke_test.py"
    empty, tools = tmp_path / "empty", tmp_path / "tools"
    empty.mkdir()
    tools.mkdir()
    (tools / "numactl").write_text("#!/bin/sh\n")
    (tools / "numactl").chmod(0o755)
    missing = subprocess.run([sys.executable, str(smoke)], env={"PATH": str(empty)}, capture_output=True, text=True,
                             timeout=300)
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        "numactl is not in the image: jobs/train.sbatch's torchrun --numa-binding needs it. Fix: lumi-scaffold update "
        "-d launcher=srun (srun binds each rank with CPU masks), or use an image that has numactl"]
    found = subprocess.run([sys.executable, str(smoke)], env={"PATH": str(tools)}, capture_output=True, text=True,
                           timeout=300)
    assert found.returncode == 0 and f"numactl: {tools / 'numactl'} (torchrun --numa-binding" in found.stdout
    assert "and that the image has numactl, which\n# jobs/train.sbatch's torchrun --numa-binding runs." in (
        project / "jobs" / "smoke-test.sbatch").read_text()
    srun = render(template, tmp_path / "q")
    plain = subprocess.run([sys.executable, str(srun / "src" / "demo" / "smoke_test.py")], env={"PATH": str(empty)},
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "numactl" not in plain.stdout + plain.stderr
    assert 'NUMA_BINDING = ""' in (srun / "src" / "demo" / "smoke_test.py").read_text()
    assert "numactl" not in (srun / "jobs" / "smoke-test.sbatch").read_text()


# TEST STAND-IN for the image's run.sh: `python -c ...` prints FAKE_TORCH (the image's torch
# version from its package metadata) after a line of its own, as run.sh may print one; with
# FAKE_TORCH empty it fails as Python does for a package that is not installed.
FAKE_RUN_SH = """#!/bin/bash
echo "venv: a line run.sh printed first"
[ -n "${FAKE_TORCH}" ] || { echo "PackageNotFoundError: torch" >&2; exit 1; }
echo "${FAKE_TORCH}"
"""


@pytest.mark.parametrize("version, names", [
    ("2.13.0+cpu", "FR"), ("2.10.1+rocm7.0", "FR"), ("3.0.0", "FR"),
    ("2.9.1", "NCCL"), ("2.7.1", "NCCL"), ("", "both")])
def test_the_flight_recorder_variables_follow_the_images_torch(tmp_path, version, names):
    """job.sh's flight_recorder names the buffer and the dump file as the image's torch
    reads them (read once, through the container's run.sh): the TORCH_FR_ names alone from
    2.10 on (torch 2.13 warns on every rank where the older ones are set too), the
    TORCH_NCCL_ names before, both where the image has no torch to ask; a value the user set
    under either name is kept."""
    job_env = (REPO / "project-templates/project/scripts/lib/job.sh").read_text()
    functions = "".join(re.findall(r"^(?:flight_recorder)\(\) \{\n.*?^\}\n", job_env, re.M | re.S))
    assert functions.count("() {") == 1, functions
    (tmp_path / "scripts/lib").mkdir(parents=True)
    (tmp_path / "scripts/lib/run.sh").write_text(FAKE_RUN_SH)
    (tmp_path / "scripts/lib/run.sh").chmod(0o755)
    show = 'env | grep -E "^TORCH_(FR|NCCL)_" | sort'
    env = {"PATH": os.environ["PATH"], "FAKE_TORCH": version, "LIB": str(tmp_path / "scripts/lib"), "DRY_RUN": "0",
           "RUN_DIR": str(tmp_path / "run"), "SLURM_JOB_ID": "7"}
    found = subprocess.run(["bash", "-c", f"set -euo pipefail; CONTAINER=(env); {functions} flight_recorder; {show}"],
                           capture_output=True, text=True, env=env, timeout=30)
    assert found.returncode == 0, found.stderr
    dump = f"{tmp_path}/run/flight-recorder/7/rank-"
    new = ["TORCH_FR_BUFFER_SIZE=2000", f"TORCH_FR_DUMP_TEMP_FILE={dump}"]
    old = [f"TORCH_NCCL_DEBUG_INFO_TEMP_FILE={dump}", "TORCH_NCCL_TRACE_BUFFER_SIZE=2000"]
    expected = {"FR": new, "NCCL": old, "both": new + old}[names]
    assert found.stdout.splitlines() == sorted(expected + ["TORCH_NCCL_DUMP_ON_TIMEOUT=1"]), found.stdout
    assert (tmp_path / "run/flight-recorder/7").is_dir()
    # a value the user gave under the older name is kept, under the name this torch reads
    kept = subprocess.run(["bash", "-c", f"set -euo pipefail; CONTAINER=(env); {functions} flight_recorder; {show}"],
                          capture_output=True, text=True, env={**env, "TORCH_NCCL_TRACE_BUFFER_SIZE": "500"}, timeout=30)
    size = "TORCH_FR_BUFFER_SIZE=500" if names != "NCCL" else "TORCH_NCCL_TRACE_BUFFER_SIZE=500"
    assert size in kept.stdout.splitlines(), kept.stdout
