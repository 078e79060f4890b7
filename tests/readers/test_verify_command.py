"""`imgbench verify readers`: a table per reader, on real photos and odd files."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from rich.console import Console
from rich.table import Table

from imgbench.readers.registry import find_spec
from imgbench.readers.verify import verify_reader
from imgbench.readers.verify_cli import _summary_table
from tests.readers.images import PHOTOS, photo, photo_bytes


def _images() -> list[tuple[str, str, bytes, str]]:
    images = [
        (c, f"{n}.{c}", photo_bytes(n, c), f"{n}.{c}") for n in PHOTOS for c in ("jpeg", "png")
    ]
    buffer = io.BytesIO()
    Image.fromarray(photo("coffee")).convert("CMYK").save(buffer, "JPEG", quality=90)
    images.append(("jpeg", "cmyk.jpg", buffer.getvalue(), "cmyk.jpg"))
    return images


def _render(table: Table) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def test_verify_reader_reports_pass_and_per_file_errors() -> None:
    report = verify_reader(find_spec("pyturbojpeg", "decode-rgb"), _images(), 4, "main")
    if report.status == "unavailable":
        pytest.skip(report.reason)
    assert report.status == "ran" and len(report.verdicts) == 4  # JPEG only
    failed = [v for _, v in report.verdicts if not v.ok]
    assert [v.path for v in failed] == ["cmyk.jpg"]
    assert "Unsupported color conversion" in failed[0].detail
    pillow = verify_reader(find_spec("pillow", "open-convert"), _images(), 4, "main")
    assert pillow.failures == 0 and len(pillow.verdicts) == 7
    simd = verify_reader(find_spec("pillow-simd", "open-convert"), _images(), 4, "main")
    assert simd.status == "elsewhere" and "env create pillow-simd" in simd.reason
    text = _render(_summary_table([report, pillow, simd]))
    assert "pyturbojpeg/decode-rgb" in text and "elsewhere" in text and "pass" in text


def test_cli_verify_readers_on_a_folder(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from imgbench.cli import app

    for name in PHOTOS:
        (tmp_path / f"{name}.jpg").write_bytes(photo_bytes(name, "jpeg"))
    runner = CliRunner()
    result = runner.invoke(
        app, ["verify", "readers", "--dataset", str(tmp_path), "--reader", "opencv", "--all"]
    )
    assert result.exit_code == 0, result.output
    assert "opencv/imdecode-rgb" in result.output and "chelsea.jpg" in result.output
    missing = runner.invoke(app, ["verify", "readers", "--dataset", str(tmp_path / "nope")])
    assert missing.exit_code == 2
