"""`imgbench dataset convert`: every format, bad files skipped with reasons, interruptions leave
nothing that opens."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.datasets.scan import scan
from imgbench.datasets.synth import generate
from imgbench.formats.base import FormatError, open_format
from imgbench.formats.convert import convert
from imgbench.formats.registry import formats, get_format
from imgbench.formats.roundtrip import round_trip

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner(env={"COLUMNS": "300"})


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six good JPEGs in three classes, one truncated JPEG and one file that is not an image."""
    root = generate(
        tmp_path_factory.mktemp("convert") / "src", 6, size=(96, 72), classes=3, progress=False
    )
    good = (root / "class_000" / "00000000.jpg").read_bytes()
    (root / "class_001" / "truncated.jpg").write_bytes(good[: len(good) // 2])
    (root / "class_002" / "notes.jpg").write_bytes(b"not an image at all")
    return root


AVAILABLE = [spec.name for spec in formats() if spec.unmet_requirement() is None]


@pytest.mark.parametrize("name", AVAILABLE)
def test_every_format_converts_and_reads_back(name: str, source: Path, tmp_path: Path) -> None:
    spec = get_format(name)
    heard: list[tuple[str, str]] = []
    report = convert(
        source, spec, tmp_path / name, workers=2, on_bad=lambda p, r: heard.append((p, r))
    )
    assert report.records == 6 and report.format == name
    reasons = dict(heard)
    assert set(reasons) == {"class_001/truncated.jpg", "class_002/notes.jpg"}
    assert reasons["class_001/truncated.jpg"].startswith("truncated JPEG")
    assert reasons["class_002/notes.jpg"] == "not an image (unknown format)"
    assert report.left_out == heard
    manifest = scan(source)
    checked = round_trip(spec, report.target, manifest.root, manifest.entries)
    assert checked.ok and checked.records == 6, checked.messages


def test_cli_convert_lists_bad_files_and_refuses_to_overwrite(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "store.lmdb"
    args = ["dataset", "convert", str(source), "--to", "lmdb", "--out", str(target)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "skipped class_001/truncated.jpg: truncated JPEG" in result.output
    assert "skipped class_002/notes.jpg: not an image" in result.output
    assert "6 images ->" in result.output and "2 files skipped" in result.output
    with open_format(get_format("lmdb"), target) as reader:
        assert len(reader) == 6
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "exists" in again.output
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    unknown = runner.invoke(app, ["dataset", "convert", str(source), "--to", "nope"])
    assert unknown.exit_code == 2 and "unknown format 'nope'" in unknown.output


def test_killed_conversion_leaves_nothing_that_opens(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "lmdb"
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(REPO)!r})
        from imgbench.formats.convert import convert
        from tests.formats.slow_format import SPEC
        convert(Path(sys.argv[1]), SPEC, Path(sys.argv[2]), workers=1, progress=False)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(source), str(target)])
    try:
        deadline = time.monotonic() + 60
        started = False
        while time.monotonic() < deadline and not started:
            started = any((p / "progress").exists() for p in target.parent.glob(".lmdb.partial-*"))
            assert proc.poll() is None, "the conversion finished before it could be killed"
            time.sleep(0.05)
        assert started, "the conversion never started writing"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert not target.exists()
    with pytest.raises(FormatError, match="not a complete imgbench format"):
        open_format(get_format("lmdb"), target)
    report = convert(source, get_format("lmdb"), target, workers=1)  # removes the leftovers
    assert report.records == 6 and list(target.parent.glob(".lmdb.partial-*")) == []
