"""The questionnaire's choice labels: what a choice says about its value, in 80 columns."""

from __future__ import annotations

from .models import ContainerImage
from .plugins import Catalogue

__all__ = ["CONTAINER_LABELS", "LABEL_WIDTH", "STATUS_LABELS", "fit", "framework_status", "image_label", "status_label"]


def framework_status(cat: Catalogue, site: str, framework: str) -> str:
    """' (legacy images only)' or ' (your own image)' where the site has no recommended image."""
    if cat.recommended_image(site, framework):
        return ""
    return " (legacy images only)" if cat.images(site, framework) else " (your own image)"


CONTAINER_LABELS = {
    "custom": "custom: my own .sif file (asked next)",
    "cotainr": "cotainr: build my own image with cotainr (conda environment file)",
}


STATUS_LABELS = {"observed": "observed, not announced"}


def status_label(image: ContainerImage) -> str:
    """'legacy', or 'legacy; LAIF-I28' for an image with known issues (which shapes they
    affect is named at the end of copy, once the shape is known); an observed image says
    that it is not announced."""
    status = STATUS_LABELS.get(image.status, image.status)
    keys = ", ".join(dict.fromkeys(i.key for i in image.known_issues))
    return f"{status}; {keys}" if keys else status


def image_label(image_id: str, status: str, title: str) -> str:
    """'id [status]: title'; where that is too wide, the title's leading comma-separated
    parts go first (the id names the image; the versions at the end tell images apart),
    then a closing parenthesis (the release date, which the LAIF ids carry too)."""
    parts = title.split(", ")
    while len(parts) > 1 and len(f"{image_id} [{status}]: {', '.join(parts)}") > LABEL_WIDTH:
        parts.pop(0)
    label = f"{image_id} [{status}]: {', '.join(parts)}"
    if len(label) > LABEL_WIDTH and label.endswith(")") and " (" in label:  # a date the id also carries
        label = label[:label.rindex(" (")]
    return label


LABEL_WIDTH = 74  # a choice with Copier's pointer in front fits 80 columns


def fit(label: str, width: int = LABEL_WIDTH) -> str:
    """``label`` cut at a word to ``width`` characters, ending in '...' where it was cut."""
    if len(label) <= width:
        return label
    cut = label[: width - 3].rsplit(" ", 1)[0].rstrip(" ,;(")
    return cut + "..."
