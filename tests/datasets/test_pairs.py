"""Segmentation pairs: `dataset synth --task segmentation`, the layouts scan recognises, and the
one-line errors of bad pairs (real PNG/JPEG files, no mocks)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from imgbench.augment.tasks import COLOURS, MaskError, mask_indices
from imgbench.cli import app
from imgbench.datasets.pairs import PairError, detect, load_pairs
from imgbench.datasets.pairs_synth import generate_pairs
from imgbench.datasets.scan import scan

runner = CliRunner(env={"COLUMNS": "200"})


def test_cli_synth_segmentation_then_scan(tmp_path: Path) -> None:
    out = tmp_path / "seg"
    result = runner.invoke(
        app,
        ["dataset", "synth", "--out", str(out), "--n", "3", "--size", "96x64", "--task",
         "segmentation", "--codec", "png"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (out / "images").iterdir()) == [
        "00000.png", "00001.png", "00002.png"
    ]  # fmt: skip
    with Image.open(out / "masks" / "00000.png") as mask:
        assert mask.mode == "P" and mask.size == (96, 64)
        assert tuple(mask.getpalette()[3:6]) == COLOURS[1]  # type: ignore[index]
    (out / "images" / "lonely.png").write_bytes((out / "images" / "00000.png").read_bytes())
    result = runner.invoke(app, ["dataset", "scan", str(out)])
    assert result.exit_code == 0, result.output
    assert "layout: images+masks (images/ + masks/), 3 pairs" in result.output
    assert "images/lonely.png: image without a mask in masks/" in result.output
    manifest = scan(out, workers=1)
    assert all(e.path.startswith("images/") for e in manifest.entries)  # masks never timed


def test_rgb_masks_decode_through_the_colour_table(tmp_path: Path) -> None:
    generate_pairs(tmp_path, 2, size=(64, 48), codec="jpeg", masks="rgb", seed=4)
    layout = detect(tmp_path)
    assert layout is not None and layout.name == "images+masks" and len(layout.pairs) == 2
    pairs = load_pairs(tmp_path, layout, 2)
    rgb = np.asarray(Image.open(tmp_path / "masks" / "00000.png").convert("RGB"))
    assert np.array_equal(np.asarray(COLOURS, np.uint8)[pairs[0][1]], rgb)


def _touch_png(path: Path, size: tuple[int, int] = (32, 24), mode: str = "L") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size, 0).save(path)


def test_voc_layout(tmp_path: Path) -> None:
    for stem in ("2007_000032", "2007_000039"):
        (tmp_path / "JPEGImages").mkdir(exist_ok=True)
        Image.new("RGB", (32, 24), (9, 9, 9)).save(tmp_path / "JPEGImages" / f"{stem}.jpg")
    _touch_png(tmp_path / "SegmentationClass" / "2007_000032.png")
    _touch_png(tmp_path / "SegmentationClass" / "2007_999999.png")
    layout = detect(tmp_path)
    assert layout is not None and layout.name == "voc"
    assert layout.pairs == (("JPEGImages/2007_000032.jpg", "SegmentationClass/2007_000032.png"),)
    assert layout.unpaired_lines() == [
        "JPEGImages/2007_000039.jpg: image without a mask in SegmentationClass/",
        "SegmentationClass/2007_999999.png: mask without an image in JPEGImages/",
    ]


def test_cityscapes_layout(tmp_path: Path) -> None:
    name = "aachen_000000_000019"
    _touch_png(
        tmp_path / "leftImg8bit" / "train" / "aachen" / f"{name}_leftImg8bit.png", mode="RGB"
    )
    _touch_png(tmp_path / "gtFine" / "train" / "aachen" / f"{name}_gtFine_labelIds.png")
    _touch_png(tmp_path / "gtFine" / "train" / "aachen" / f"{name}_gtFine_color.png", mode="RGB")
    layout = detect(tmp_path)
    assert layout is not None and layout.name == "cityscapes"
    assert layout.pairs == (
        (
            f"leftImg8bit/train/aachen/{name}_leftImg8bit.png",
            f"gtFine/train/aachen/{name}_gtFine_labelIds.png",
        ),
    )
    assert layout.unpaired_masks == ()  # _gtFine_color is not a class mask


def test_a_folder_that_cannot_pair_is_an_error_naming_files_not_two_classes(
    tmp_path: Path,
) -> None:
    _touch_png(tmp_path / "images" / "a.png", mode="RGB")
    _touch_png(tmp_path / "labels" / "b.png")
    with pytest.raises(PairError, match=r"images/a.png.*labels/b.png"):
        scan(tmp_path, workers=1)
    result = runner.invoke(app, ["dataset", "scan", str(tmp_path)])
    assert result.exit_code != 0
    assert "no image has a mask of the same name" in result.output
    assert "two classes" not in result.output


def test_bad_masks_are_named_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(MaskError, match=r"^m.png: colour \(1, 2, 3\) not in the colour table$"):
        mask_indices(np.full((4, 4, 3), (1, 2, 3), np.uint8), "m.png")
    with pytest.raises(MaskError, match=r"^p.png: class index \[9\] not in the colour table"):
        mask_indices(np.full((4, 4), 9, np.uint8), "p.png")
    generate_pairs(tmp_path, 1, size=(40, 30), codec="png", seed=5)
    shutil.copy(tmp_path / "masks" / "00000.png", tmp_path / "keep.png")
    Image.new("RGB", (40, 30), (1, 2, 3)).save(tmp_path / "masks" / "00000.png")
    layout = detect(tmp_path)
    assert layout is not None
    with pytest.raises(MaskError, match=r"^masks/00000.png: colour \(1, 2, 3\) not in"):
        load_pairs(tmp_path, layout, 1)


def test_yolo_labels_and_coco_annotations_are_not_masks(tmp_path: Path) -> None:
    _touch_png(tmp_path / "images" / "a.png", mode="RGB")
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "a.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "instances.json").write_text("{}")
    assert detect(tmp_path) is None
    assert [e.path for e in scan(tmp_path, workers=1).entries] == ["images/a.png"]
