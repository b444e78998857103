"""Public training scripts nobody on our team wrote, for the job tests (CPU PyTorch, gloo, 2 ranks).

Their code is not in this repository: materialize() reads each one from a git clone at the
commit recorded here, applies our patches (each must apply exactly once, and each says which
limit of these CPU-only test machines forces it), adds our own small stand-ins for what cannot
be installed or downloaded here, writes small synthetic data in the format the script reads,
and returns the directory to use as the project root (the job's COMMAND starts there).

Where the clones are: LUMI_SCAFFOLD_PUBLIC_REPOS names a directory holding one clone per
repository, as <owner>+<name> or <owner>/<name>: a work tree, a bare git directory, or the
<owner>+<name>/repo layout of a mirror. A test skips with why_missing(name) when the clone or a
Python package the script imports is missing; LUMI_SCAFFOLD_REQUIRE_PUBLIC_SCRIPTS=1 turns that
skip into a failure (skip_or_fail()).

Plain stdlib, except numpy (nanoGPT's data) and pyarrow (nanochat's), which those scripts need anyway.
"""

from __future__ import annotations

import importlib.util
import io
import os
import pickle
import random
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPOS_ENV = "LUMI_SCAFFOLD_PUBLIC_REPOS"
REQUIRE_ENV = "LUMI_SCAFFOLD_REQUIRE_PUBLIC_SCRIPTS"


@dataclass(frozen=True)
class Patch:
    path: str  # the file in the repository
    old: str  # must occur exactly once
    new: str
    why: str  # the limit of this machine that forces it


@dataclass(frozen=True)
class PublicScript:
    name: str
    repo: str  # owner/name on GitHub
    commit: str
    licence: str
    paths: tuple[str, ...]  # files and folders taken from the clone, at the same place under the root
    command: tuple[str, ...]  # COMMAND=(...) as a user writes it, run in the root
    patches: tuple[Patch, ...] = ()
    stand_ins: dict[str, str] = field(default_factory=dict)  # our own files, path -> text
    data: Callable[[Path], None] | None = None  # writes the synthetic data under the root
    prepare: tuple[tuple[str, ...], ...] = ()  # run once in the root after the data ("python" = this interpreter)
    env: dict[str, str] = field(default_factory=dict)  # the job's environment; "{root}" is the root
    needs: tuple[str, ...] = ()  # modules the script imports that are not in the standard library or torch
    resume: str = ""  # bash for a job file: what makes the next job of a chain resume
    # Regexes for its log. No ^ or $: both ranks print, block-buffered, to one stream, and their
    # lines can run together ("...Steps: 32Epoch 1 | Training snapshot saved..." was seen).
    prints: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}"


# ------------------------------------------------------------------ 1. positional arguments, snapshot resume

# pytorch/examples' DDP tutorial series, multi-node script: `multinode.py TOTAL_EPOCHS SAVE_EVERY
# [--batch_size N]` (strict argparse), a linear model on random data (datautils.py, beside it),
# saves snapshot.pt by relative path (rank 0) and loads it at start when it is there. It reads
# LOCAL_RANK and RANK; init_process_group reads WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
# Resuming starts again at the saved epoch (it saves EPOCHS_RUN = the epoch just finished).
_NO_GPU = "no GPU on the test machines: gloo in place of NCCL, tensors stay on the CPU"
MULTINODE = PublicScript(
    name="multinode",
    repo="pytorch/examples",
    commit="77f55b912142e11fcfdf5b530231fb9c52f181e8",
    licence="BSD-3-Clause",
    paths=("distributed/ddp-tutorial-series/multinode.py", "distributed/ddp-tutorial-series/datautils.py"),
    command=("python", "distributed/ddp-tutorial-series/multinode.py", "3", "1", "--batch_size", "32"),
    patches=tuple(Patch("distributed/ddp-tutorial-series/multinode.py", old, new, _NO_GPU) for old, new in (
        ('torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))', "pass  # (no GPU here)"),
        ('init_process_group(backend="nccl")', 'init_process_group(backend="gloo")'),
        ("self.model = model.to(self.local_rank)", "self.model = model"),
        ('loc = f"cuda:{self.local_rank}"', 'loc = "cpu"'),
        ("DDP(self.model, device_ids=[self.local_rank])", "DDP(self.model)"),
        ("source = source.to(self.local_rank)", "source = source"),
        ("targets = targets.to(self.local_rank)", "targets = targets"),
    )),
    # The script's own: a second job with the same command finds snapshot.pt in its working
    # directory and goes on from there. Nothing to add.
    resume="",
    prints={
        "epoch": r"\[GPU([01])\] Epoch (\d+) \| Batchsize: 32 \| Steps: (\d+)",
        "saved": r"Epoch (\d+) \| Training snapshot saved at snapshot\.pt",
        "resumed": r"Resuming training from snapshot at Epoch (\d+)",  # (both ranks)
    },
)
# (The command names the script by its path in the repository, so that the root is a copy of
# the repository's layout; `cd distributed/ddp-tutorial-series` is not needed: it imports
# datautils from its own folder, sys.path[0].)


# ------------------------------------------------------------------ 2. --key=value, files beside it by relative path

def _shakespeare_char_like(root: Path) -> None:
    """Our own data in the format data/shakespeare_char/prepare.py writes: train.bin and
    val.bin, token ids as uint16 back to back, and meta.pkl with vocab_size (and the maps)."""
    import numpy as np

    chars = sorted(set("abcdefghijklmnopqrstuvwxyz .,\n"))
    folder = root / "data" / "shakespeare_char"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 20_000), ("val", 4_000)):
        rng.integers(0, len(chars), n).astype(np.uint16).tofile(folder / f"{split}.bin")
    meta = {"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}
    (folder / "meta.pkl").write_bytes(pickle.dumps(meta))


# karpathy/nanoGPT: train.py reads `--key=value` overrides and config files through
# exec(open('configurator.py').read()) -- a relative path -- and its data from
# data/<dataset>/{train,val}.bin and meta.pkl, also relative; it writes <out_dir>/ckpt.pt and
# resumes from it with --init_from=resume. Its own parser is strict in its way: an unknown
# --key=value is "Unknown config key", an argument without "=" must be a config file.
# Under DDP (RANK in the environment) it sets device = cuda:LOCAL_RANK whatever --device says.
_CPU_DDP = "no GPU on the test machines: under DDP the script forces cuda:LOCAL_RANK; keep --device=cpu"
NANOGPT = PublicScript(
    name="nanogpt",
    repo="karpathy/nanoGPT",
    commit="3adf61e154c3fe3fca428ad6bc3818b27a3b8291",
    licence="MIT",
    paths=("train.py", "model.py", "configurator.py", "config/train_shakespeare_char.py"),
    command=("python", "train.py", "config/train_shakespeare_char.py",
             # the machine: CPU, gloo, no torch.compile (minutes of CPU), float32 (no CPU autocast here)
             "--device=cpu", "--backend=gloo", "--compile=False", "--dtype=float32",
             # small enough for seconds: 1 layer, 32 wide, 32 tokens of context, 7 iterations
             "--n_layer=1", "--n_head=2", "--n_embd=32", "--block_size=32", "--batch_size=4", "--dropout=0.0",
             "--gradient_accumulation_steps=2",  # the config's 1 is not a multiple of 2 ranks (an assert)
             "--max_iters=6", "--lr_decay_iters=6", "--warmup_iters=0",
             "--eval_interval=3", "--eval_iters=2", "--log_interval=1", "--always_save_checkpoint=True"),
    patches=(
        Patch("train.py", "device = f'cuda:{ddp_local_rank}'",
              "device = device if device == 'cpu' else f'cuda:{ddp_local_rank}'", _CPU_DDP),
        Patch("train.py", "torch.cuda.set_device(device)",
              "torch.cuda.set_device(device) if device != 'cpu' else None", _CPU_DDP),
        Patch("train.py", "DDP(model, device_ids=[ddp_local_rank])",
              "DDP(model, device_ids=[ddp_local_rank] if device_type == 'cuda' else None)", _CPU_DDP),
    ),
    data=_shakespeare_char_like,
    needs=("numpy",),
    # Not automatic: the next job must add --init_from=resume (same out_dir; the config's is
    # out-shakespeare-char, relative to the working directory). It then evaluates and saves at
    # the saved iteration and goes on to max_iters (one more iteration when the first job ended there).
    resume='[[ -f out-shakespeare-char/ckpt.pt ]] && COMMAND+=(--init_from=resume)',
    prints={
        "iter": r"iter (\d+): loss [\d.]+, time [\d.]+ms",
        "eval": r"step (\d+): train loss [\d.]+, val loss [\d.]+",
        "saved": r"saving checkpoint to out-shakespeare-char",
        "resumed": r"Resuming training from out-shakespeare-char",  # (both ranks)
    },
)


# ------------------------------------------------------------------ 3. a module: python -m scripts.base_train

def _climbmix_like(root: Path) -> None:
    """Our own text in nanochat's pretraining format: parquet shards with a `text` column in
    <NANOCHAT_BASE_DIR>/base_data_climbmix/, the last one the validation split. Each has 8 row
    groups: the loader gives rank r the row groups r, r + world_size, ..."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = root / "nanochat_base" / "base_data_climbmix"
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 7))) for _ in range(300)]
    for shard in range(2):
        docs = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 120))) + "." for _ in range(400)]
        pq.write_table(pa.table({"text": docs}), folder / f"shard_{shard:05d}.parquet", row_group_size=50)


# karpathy/nanochat: `torchrun --standalone --nproc_per_node=8 -m scripts.base_train -- ...`
# in its README and speedrun; run from the repository root (imports nanochat.*, scripts.*).
# Strict argparse; --resume-from-step N loads base_checkpoints/d<depth>/model_<N>.pt, meta and
# this rank's optim_<N>_rank<r>.pt from NANOCHAT_BASE_DIR, where its data and tokenizer also are.
# Its distributed path assumes CUDA: on CPU it never creates a process group (each rank would
# train alone), and its optimizer takes Futures from async reduce_scatter, which gloo lacks.
_GLOO = "no GPU on the test machines: gloo's async reduce_scatter gives a Work without a Future (Work::getFuture not implemented); the code only wait()s on it"
NANOCHAT = PublicScript(
    name="nanochat",
    repo="karpathy/nanochat",
    commit="92d63d4e8bb4df75c3b71618f31ddde2378b2bcd",
    licence="MIT",
    paths=("nanochat", "scripts"),
    command=("python", "-m", "scripts.base_train", "--device-type=cpu",
             "--depth=2", "--head-dim=64", "--window-pattern=L", "--max-seq-len=64",
             "--device-batch-size=2", "--total-batch-size=256",  # 2 ranks x 2 x 64: one micro-step
             "--num-iterations=6", "--warmup-steps=1", "--eval-every=3", "--eval-tokens=512",
             "--core-metric-every=-1", "--sample-every=-1", "--save-every=3"),
    patches=(
        Patch("nanochat/common.py",
              "        dist.barrier()\n    else:\n        device = torch.device(device_type) # mps|cpu",
              "        dist.barrier()\n    elif is_ddp_requested:\n        device = torch.device(device_type)\n"
              "        dist.init_process_group(backend=\"gloo\")\n    else:\n        device = torch.device(device_type) # mps|cpu",
              "no GPU on the test machines: its process group is created only for CUDA (NCCL); gloo for CPU ranks"),
        Patch("nanochat/optim.py",
              "dist.reduce_scatter_tensor(grad_slice, grad, op=dist.ReduceOp.AVG, async_op=True).get_future()",
              "dist.reduce_scatter_tensor(grad_slice, grad, op=dist.ReduceOp.AVG, async_op=True)", _GLOO),
        Patch("nanochat/optim.py",
              "dist.reduce_scatter_tensor(grad_chunk, stacked_grads, op=dist.ReduceOp.AVG, async_op=True).get_future()",
              "dist.reduce_scatter_tensor(grad_chunk, stacked_grads, op=dist.ReduceOp.AVG, async_op=True)", _GLOO),
    ),
    stand_ins={
        # TEST STAND-IN: base_train imports wandb at the top and, with --run=dummy (its default),
        # never calls it; no account or network here, and no need for the package.
        "wandb.py": "def init(*args, **kwargs):\n    raise RuntimeError(\"no wandb in these tests: use --run=dummy\")\n",
    },
    data=_climbmix_like,
    # Its own tokenizer training, on our text (3 s): writes nanochat_base/tokenizer/.
    prepare=(("python", "-m", "scripts.tok_train", "--max-chars=200000", "--vocab-size=512"),),
    env={
        "NANOCHAT_BASE_DIR": "{root}/nanochat_base",  # data, tokenizer, checkpoints (default ~/.cache/nanochat)
        # torch.compile of the model and of the optimizer steps: ~80 s of these 2 CPUs per job
        "TORCHDYNAMO_DISABLE": "1",
    },
    needs=("rustbpe", "tiktoken", "pyarrow", "requests", "filelock", "jinja2", "yaml"),
    # Not automatic: the next job adds --resume-from-step=<the last saved step>.
    # (`|| true`: the job file runs under set -euo pipefail, where an ls that finds nothing,
    # in the first job, would end it.)
    resume=('last=$(ls "$NANOCHAT_BASE_DIR"/base_checkpoints/d2/model_*.pt 2>/dev/null | sort | tail -n 1 || true)\n'
            'if [[ -n $last ]]; then last=${last##*model_}; COMMAND+=(--resume-from-step=$((10#${last%.pt}))); fi'),
    prints={
        "step": r"step (\d{5})/(\d{5}) \([\d.]+%\) \| loss: [\d.]+",
        "eval": r"Step (\d{5}) \| Validation bpb: [\d.]+",
        "saved": r"Saved model parameters to: \S+/base_checkpoints/d2/model_(\d{6})\.pt",
        "resumed": r"Resuming optimization from step (\d+)",
    },
)


# ------------------------------------------------------------------ 4. strict argparse, its own --data (a dataset type)

def _ett_like(root: Path) -> None:
    """Our own series in the CSV layout of the ETT files: a date column, then the variables.
    A file name other than ETT* gets the 70/10/20 split by length."""
    rng = random.Random(0)
    lines = ["date,v0,v1,v2,v3"]
    for k in range(600):
        values = ",".join(f"{((k * (i + 3)) % 17) / 17 + 0.1 * rng.random():.5f}" for i in range(4))
        lines.append(f"2020-01-{1 + k // 24:02d} {k % 24:02d}:00:00,{values}")
    (root / "dataset").mkdir(parents=True, exist_ok=True)
    (root / "dataset" / "synthetic.csv").write_text("\n".join(lines) + "\n")


# thuml/OpenLTM (Timer-XL and other time-series foundation models): run.py parses strictly and
# has its own --data, a dataset TYPE (a key of data_provider.data_factory.data_dict, e.g.
# MultivariateDatasetBenchmark, required), besides --root_path (a directory) and --data_path (a
# file name in it). With --ddp it reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and
# LOCAL_RANK and prints them ("ip port world rank local_rank gpus"). It saves
# checkpoints/<setting>/checkpoint.pth by relative path (both ranks); it has no resume
# (--adaptation --pretrain_model_path PATH loads weights only).
_NO_GPU_LTM = "no GPU on the test machines: gloo in place of NCCL, the model on the CPU"
OPENLTM = PublicScript(
    name="openltm",
    repo="thuml/OpenLTM",
    commit="0b3005099d380ecc00d512f72553c7fe8fccca99",
    licence="MIT",
    paths=("run.py", "data_provider", "exp", "layers", "models", "utils"),
    command=("python", "run.py", "--task_name", "forecast", "--is_training", "1", "--model_id", "syn",
             "--model", "timer_xl", "--data", "MultivariateDatasetBenchmark",
             "--root_path", "./dataset/", "--data_path", "synthetic.csv",
             "--seq_len", "48", "--input_token_len", "24", "--output_token_len", "24",
             "--test_seq_len", "48", "--test_pred_len", "24",
             "--d_model", "32", "--d_ff", "64", "--n_heads", "2", "--e_layers", "1", "--use_norm",
             "--batch_size", "16", "--train_epochs", "2",
             "--num_workers", "1",  # its DDP loaders use persistent_workers, which needs >= 1 worker
             "--ddp"),
    patches=(
        Patch("run.py", 'dist.init_process_group(backend="nccl"', 'dist.init_process_group(backend="gloo"', _NO_GPU_LTM),
        Patch("run.py", "torch.cuda.set_device(local_rank)", "pass  # (no GPU here)", _NO_GPU_LTM),
        Patch("exp/exp_forecast.py", "self.device = torch.device('cuda:{}'.format(self.args.local_rank))",
              "self.device = torch.device('cpu')", _NO_GPU_LTM),
        Patch("exp/exp_forecast.py", "DDP(model.cuda(), device_ids=[self.args.local_rank])", "DDP(model)", _NO_GPU_LTM),
    ),
    stand_ins={
        # TEST STAND-IN: models/ imports all its models, and the LLM-based ones (autotimes,
        # gpt4ts, time_llm) import these transformers classes at import time; timer_xl uses
        # none of them, and their weights could not be downloaded here anyway.
        "transformers/__init__.py": "".join(
            f"class {name}:\n    pass\n\n\n" for name in (
                "BertConfig", "BertModel", "BertTokenizer", "GPT2Config", "GPT2Model", "GPT2Tokenizer",
                "LlamaConfig", "LlamaForCausalLM", "LlamaModel", "LlamaTokenizer", "OPTForCausalLM")),
        "transformers/models/__init__.py": "",
        "transformers/models/gpt2/__init__.py": "",
        "transformers/models/gpt2/modeling_gpt2.py": "from transformers import GPT2Model  # noqa: F401\n",
    },
    data=_ett_like,
    needs=("numpy", "pandas", "sklearn", "matplotlib", "einops"),
    resume="",
    prints={
        "world": r"(\S+) (\d+) 2 ([01]) ([01]) 0\b",  # MASTER_ADDR MASTER_PORT WORLD_SIZE RANK LOCAL_RANK gpus
        "epoch": r"Epoch: (\d+), Steps: (\d+) \| Vali Loss: [\d.]+ Test Loss: [\d.]+",
        "start": r">>>>>>>start training : forecast_syn_timer_xl_MultivariateDatasetBenchmark_sl48_\S+?_test_0>",
    },
)

SCRIPTS: dict[str, PublicScript] = {s.name: s for s in (MULTINODE, NANOGPT, NANOCHAT, OPENLTM)}


# ------------------------------------------------------------------ finding the clones

def _git(git_dir: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=text)


def git_dir_of(repo: str) -> Path | None:
    """The git directory of a clone of `repo` (owner/name) under $LUMI_SCAFFOLD_PUBLIC_REPOS."""
    top = os.environ.get(REPOS_ENV, "")
    if not top:
        return None
    owner, name = repo.split("/")
    for place in (Path(top) / f"{owner}+{name}", Path(top) / owner / name):
        for git_dir in (place / ".git", place / "repo", place):
            if git_dir.is_dir() and (git_dir / "HEAD").is_file() and (git_dir / "objects").is_dir():
                return git_dir
    return None


def why_missing(name: str) -> str | None:
    """Why the test of script `name` cannot run here, or None when it can."""
    script = SCRIPTS[name]
    git_dir = git_dir_of(script.repo)
    if git_dir is None:
        owner, repo = script.repo.split("/")
        return (f"no clone of {script.url} under {REPOS_ENV}={os.environ.get(REPOS_ENV, '')!r} "
                f"(git clone it into <dir>/{owner}+{repo} and export {REPOS_ENV}=<dir>)")
    if _git(git_dir, "cat-file", "-e", f"{script.commit}^{{commit}}").returncode != 0:
        return f"{git_dir}: no commit {script.commit} of {script.url} (git fetch it)"
    absent = [module for module in script.needs if importlib.util.find_spec(module) is None]
    if absent:
        return f"{name} imports {', '.join(absent)}: not installed (pip install them)"
    return None


def skip_or_fail(name: str) -> None:
    """In a test: skip when script `name` cannot run here, fail instead under REQUIRE_ENV=1."""
    why = why_missing(name)
    if why:
        import pytest

        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{why}; {REQUIRE_ENV}=1, so it must run")
        pytest.skip(why)


# ------------------------------------------------------------------ writing one out

def materialize(name: str, dest: Path) -> Path:
    """Write script `name` into `dest` as its repository lays it out (only its paths), patched,
    with our stand-ins and synthetic data, and its preparation run; returns the project root."""
    script = SCRIPTS[name]
    why = why_missing(name)
    if why:
        raise FileNotFoundError(why)
    git_dir = git_dir_of(script.repo)
    assert git_dir is not None
    root = Path(dest)
    root.mkdir(parents=True, exist_ok=True)
    archive = _git(git_dir, "archive", "--format=tar", script.commit, "--", *script.paths, text=False)
    if archive.returncode != 0:
        raise RuntimeError(f"{git_dir}: git archive {script.commit}: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 (and security releases of older ones)
            tar.extractall(root, filter="data")
        else:
            tar.extractall(root)
    for patch in script.patches:
        path = root / patch.path
        text = path.read_text()
        count = text.count(patch.old)
        assert count == 1, (f"{script.repo}@{script.commit[:12]} {patch.path}: {patch.old!r} occurs {count} times, "
                            f"not once (update the commit and the patches)")
        path.write_text(text.replace(patch.old, patch.new))
    for relative, text in script.stand_ins.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if script.data:
        script.data(root)
    env = {**os.environ, **job_env(name, root)}
    for command in script.prepare:
        argv = [sys.executable if command[0] == "python" else command[0], *command[1:]]
        done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{name}: {' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return root


def job_env(name: str, root: Path) -> dict[str, str]:
    """The environment variables the job of script `name`, materialized at `root`, needs."""
    return {key: value.replace("{root}", str(root)) for key, value in SCRIPTS[name].env.items()}
