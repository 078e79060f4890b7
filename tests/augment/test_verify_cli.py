"""`imgbench verify augment` prints the agreement table through the real CLI."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from imgbench.cli import app

pytest.importorskip("skimage")


def test_verify_prints_table_and_flags() -> None:
    result = CliRunner().invoke(app, ["verify", "augment", "-t", "hflip", "-t", "center_crop"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any("hflip" in line and "opencv/numpy" in line and "pass" in line for line in lines)
    assert any(
        "center_crop" in line and "albumentations/numpy" in line and "flagged" in line
        for line in lines
    )
    strict = CliRunner().invoke(app, ["verify", "augment", "-t", "center_crop", "--strict"])
    assert strict.exit_code == 1


def test_unknown_transform_is_one_clear_error() -> None:
    result = CliRunner().invoke(app, ["verify", "augment", "-t", "warp9"])
    assert result.exit_code == 2
    assert "unknown transform" in result.output and "hflip" in result.output
