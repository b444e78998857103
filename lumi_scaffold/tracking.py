"""Experiment trackers a project can log to (the `tracking` answer), and the package each
needs in the venv. The generated src/<package>/runlog.py writes to them."""

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
