"""Image + mask pairs: the segmentation layouts ``dataset scan`` recognises, and their pairing.

- ``images+masks``: ``images/`` beside ``masks/``, ``labels/`` or ``annotations/``, partners by
  the same relative path without extension (``images/a/x.jpg`` <-> ``masks/a/x.png``);
- ``voc``: ``JPEGImages/`` + ``SegmentationClass/`` (PASCAL VOC), partners by stem;
- ``cityscapes``: ``leftImg8bit/`` + ``gtFine/``, ``<name>_leftImg8bit.png`` <->
  ``<name>_gtFine_labelIds.png`` in the same split/city folders.

A recognised layout without one pair is an error naming files of both sides, so such a folder is
never read as an ImageFolder whose classes are "images" and "masks". The mask side is left out of
the scanned manifest (``mask_folders``): masks are never timed as images.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .manifest import DatasetError

MASK_DIRS = ("masks", "labels", "annotations")
IMAGE_SUFFIXES = frozenset([".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"])
CITY_IMAGE, CITY_MASK = "_leftImg8bit", "_gtFine_labelIds"


class PairError(DatasetError):
    """A folder with a segmentation layout whose files cannot be paired."""


@dataclass(frozen=True)
class PairLayout:
    name: str  # images+masks | voc | cityscapes
    image_dir: str
    mask_dir: str
    pairs: tuple[tuple[str, str], ...]  # (image, mask) paths relative to the root
    unpaired_images: tuple[str, ...]
    unpaired_masks: tuple[str, ...]

    def unpaired_lines(self) -> list[str]:
        """One line per file without a partner: the file and the problem."""
        return [f"{p}: image without a mask in {self.mask_dir}/" for p in self.unpaired_images] + [
            f"{p}: mask without an image in {self.image_dir}/" for p in self.unpaired_masks
        ]


def _files(folder: Path) -> list[str]:
    """Image files under ``folder``, relative to it, sorted (hidden entries skipped)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel = Path(dirpath).relative_to(folder)
        for name in filenames:
            if not name.startswith(".") and Path(name).suffix.lower() in IMAGE_SUFFIXES:
                found.append((rel / name).as_posix())
    return sorted(found)


def _has_images(folder: Path) -> bool:
    """Any image file below ``folder`` (stops at the first): YOLO's labels/*.txt are not masks."""
    for _, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if any(Path(n).suffix.lower() in IMAGE_SUFFIXES for n in filenames):
            return True
    return False


def _structure(root: Path) -> tuple[str, str, str] | None:
    """(layout, image folder, mask folder) when ``root`` has one of the layouts, its mask
    folder holding images (an ``annotations/`` of JSON or a ``labels/`` of text is no mask side)."""
    candidates = [
        ("voc", "JPEGImages", "SegmentationClass"),
        ("cityscapes", "leftImg8bit", "gtFine"),
    ]
    candidates += [("images+masks", "images", name) for name in MASK_DIRS]
    for layout, image_dir, mask_dir in candidates:
        both = (root / image_dir).is_dir() and (root / mask_dir).is_dir()
        if both and _has_images(root / mask_dir):
            return layout, image_dir, mask_dir
    return None


def mask_folders(root: Path) -> frozenset[str]:
    """Top-level folders a scan leaves out: the mask side of a recognised layout."""
    found = _structure(Path(root))
    return frozenset() if found is None else frozenset([found[2]])


def _key(layout: str, rel: str, mask: bool) -> str:
    stem = rel.rsplit(".", 1)[0]
    if layout == "voc":
        return stem.rsplit("/", 1)[-1]
    if layout == "cityscapes":
        suffix = CITY_MASK if mask else CITY_IMAGE
        return stem[: -len(suffix)] if stem.endswith(suffix) else "\0" + stem
    return stem


def detect(root: Path | str) -> PairLayout | None:
    """The layout of ``root`` and its pairs; None when it has none; PairError when nothing pairs."""
    root = Path(root)
    found = _structure(root)
    if found is None:
        return None
    name, image_dir, mask_dir = found
    images = _files(root / image_dir)
    masks = [m for m in _files(root / mask_dir) if name != "cityscapes" or CITY_MASK in m]
    by_key = {_key(name, m, True): m for m in masks}
    pairs, unpaired = [], []
    for image in images:
        partner = by_key.pop(_key(name, image, False), None)
        if partner is None:
            unpaired.append(f"{image_dir}/{image}")
        else:
            pairs.append((f"{image_dir}/{image}", f"{mask_dir}/{partner}"))
    layout = PairLayout(
        name,
        image_dir,
        mask_dir,
        tuple(pairs),
        tuple(unpaired),
        tuple(f"{mask_dir}/{m}" for m in sorted(by_key.values())),
    )
    if not pairs:
        sample = ", ".join([*layout.unpaired_images[:3], *layout.unpaired_masks[:3]]) or "none"
        raise PairError(
            f"{root}: a {name} layout ({image_dir}/ + {mask_dir}/) but no image has a mask "
            f"of the same name; files: {sample}"
        )
    return layout


def load_pairs(
    root: Path | str, layout: PairLayout, limit: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The first ``limit`` pairs decoded: HxWx3 uint8 RGB and HxW uint8 class indices.

    A mask of another size than its image, or with a colour not in the colour table, raises
    ``MaskError`` naming the file and the problem (augment/tasks.py).
    """
    from PIL import Image

    from imgbench.datasets.masks import check_pair, mask_indices

    loaded = []
    for image_rel, mask_rel in layout.pairs[:limit]:
        with Image.open(Path(root) / image_rel) as opened:
            image = np.ascontiguousarray(np.asarray(opened.convert("RGB")))
        with Image.open(Path(root) / mask_rel) as opened:
            if opened.mode in ("P", "L", "I", "I;16"):
                raw = np.asarray(opened)
            else:
                raw = np.asarray(opened.convert("RGB"))
        check_pair(image, raw, image_rel, mask_rel)
        loaded.append((image, mask_indices(raw, mask_rel)))
    return loaded
