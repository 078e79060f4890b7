"""`imgbench verify formats --dataset PATH`: a table, exit 0 when all match, 1 on a mismatch."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from tests.formats.broken_format import SPEC as BROKEN


def test_verify_formats_passes_on_real_photos(photo_dir: Path) -> None:
    result = CliRunner().invoke(
        app, ["verify", "formats", "--dataset", str(photo_dir), "-f", "lmdb", "-f", "npy-decoded"]
    )
    assert result.exit_code == 0, result.output
    assert "lmdb" in result.output and "npy-decoded" in result.output
    assert result.output.count(" ok ") >= 2 or result.output.count("ok") >= 2


def test_a_mismatch_exits_1(photo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import imgbench.formats.registry as registry

    monkeypatch.setattr(registry, "FORMATS", (*registry.FORMATS, BROKEN))
    result = CliRunner().invoke(
        app, ["verify", "formats", "--dataset", str(photo_dir), "-f", "broken-sqlite"]
    )
    assert result.exit_code == 1, result.output
    assert "mismatch" in result.output


def test_unknown_format_and_missing_dataset_are_one_line_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["verify", "formats", "--dataset", str(tmp_path / "nope"), "-f", "lmdb"]
    )
    assert result.exit_code == 2
    assert "does not exist" in result.output
