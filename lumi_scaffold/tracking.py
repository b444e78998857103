"""Experiment trackers a project can log to (the `tracking` answer), and the package each
needs in the venv. The generated scripts/lib/python/runlog.py writes to them."""

from __future__ import annotations

from typing import NamedTuple


class Tracker(NamedTuple):
    title: str
    package: str  # the pip requirement the venv gets ('' for none)
    where: str  # what it writes, under the run directory or the output area


TRACKERS: dict[str, Tracker] = {
    "none": Tracker("no tracking (the job reports only)", "", ""),
    "tensorboard": Tracker("TensorBoard", "tensorboard", "event files in RUN_DIR/tensorboard"),
    # mlflow-skinny logs to a store without the server's dependencies; an image that ships
    # mlflow ships it too (mlflow depends on it), so the image's version is kept.
    "mlflow": Tracker("MLflow", "mlflow-skinny", "a file store in OUTPUT_ROOT/mlruns"),
    "wandb": Tracker("Weights & Biases", "wandb", "W&B run files in RUN_DIR/wandb (offline unless WANDB_MODE=online)"),
}

# What a tracker needs in the job's environment, each only where the user has not set it;
# ${OUTPUT_ROOT} is the project's output root of that job.
TRACKING_DEFAULTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mlflow": (("MLFLOW_TRACKING_URI=${OUTPUT_ROOT}/mlruns", "MLFLOW_ALLOW_FILE_STORE=true"), (
        "MLflow's file store in the output area, one for all the project's runs (set MLFLOW_TRACKING_URI",
        "for a server or an SQLite file instead). MLflow 3.17 refuses a file store unless",
        "MLFLOW_ALLOW_FILE_STORE=true (older releases ignore it); unlike SQLite, it takes many jobs",
        "writing at once on a shared file system.")),
    "wandb": (("WANDB_MODE=offline",), (
        "W&B logs offline into RUN_DIR/wandb (README: wandb sync from a login node). WANDB_MODE=online",
        "sbatch ... logs to the server, with WANDB_API_KEY from your environment (never the project's files).")),
}
