"""Recipes build on demand and atomically; the dataset CLI works end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.datasets import load_dataset, recipes

runner = CliRunner(env={"COLUMNS": "200"})


def test_every_shipped_recipe_parses() -> None:
    assert {"synthetic-small", "synthetic-imagenet-like", "real-sample", "synthetic-grid"} <= set(
        recipes.names()
    )
    for name in recipes.names():
        recipe = recipes.get(name)
        assert recipe.kind in recipes.KINDS and recipe.description


def test_recipe_builds_once_into_the_cache(tmp_path: Path) -> None:
    first = load_dataset("synthetic-small", cache_dir=tmp_path, progress=False)
    assert first.name == "synthetic-small" and first.n_images == 48
    assert first.codec == "jpeg" and first.root.parent == tmp_path
    assert not list(tmp_path.glob(".*partial*"))
    mtime = first.root.stat().st_mtime_ns
    again = load_dataset("synthetic-small", cache_dir=tmp_path, progress=False)
    assert again.fingerprint == first.fingerprint and again.root.stat().st_mtime_ns == mtime


def test_real_sample_is_real_and_offline(tmp_path: Path) -> None:
    dataset = load_dataset("real-sample", cache_dir=tmp_path, progress=False)
    codecs = {e.codec for e in dataset.manifest.entries}
    assert codecs == {"jpeg", "png", "webp", "bmp", "tiff"}  # every codec the readers bench
    assert dataset.n_images >= 40 and not dataset.manifest.bad


def test_grid_recipe_has_one_folder_per_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "g.toml").write_text(
        'kind = "grid"\ndescription = "tiny grid"\n[grid]\nlong_edges = [64, 128]\n'
        "qualities = [75, 95]\nper_cell = 2\n"
    )
    monkeypatch.setenv("IMGBENCH_RECIPES", str(folder))
    dataset = load_dataset("g", cache_dir=tmp_path / "cache", progress=False)
    labels = {e.label for e in dataset.manifest.entries}
    assert labels == {"le64_q75", "le64_q95", "le128_q75", "le128_q95"}
    assert {(e.width, e.height) for e in dataset.manifest.entries} == {(64, 48), (128, 96)}


def test_cli_synth_scan_sample(tmp_path: Path) -> None:
    out = tmp_path / "synth"
    result = runner.invoke(
        app,
        ["dataset", "synth", "--out", str(out), "--n", "6", "--size", "80x60", "--classes", "2"],
    )
    assert result.exit_code == 0, result.output
    assert "6 images" in result.output and "images/s" in result.output
    (out / "class_000" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0garbage")
    manifest = tmp_path / "m.parquet"
    result = runner.invoke(app, ["dataset", "scan", str(out), "--manifest", str(manifest)])
    assert result.exit_code == 0, result.output
    assert "excluded files" in result.output and "broken.jpg" in result.output
    assert manifest.is_file()
    result = runner.invoke(app, ["dataset", "sample", "--out", str(tmp_path / "real")])
    assert result.exit_code == 0, result.output
    assert "real photos" in result.output


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["dataset", "scan", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert result.output.strip().startswith("error: dataset path does not exist")
    result = runner.invoke(app, ["dataset", "build", "nope"])
    assert result.exit_code == 2 and "unknown dataset recipe 'nope'" in result.output
    result = runner.invoke(
        app, ["dataset", "synth", "--out", str(tmp_path), "--n", "2", "--codec", "gif"]
    )
    assert result.exit_code == 2 and "codec must be one of" in result.output


def test_a_new_generator_version_is_a_new_recipe_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches built by an older generator are never reused: its VERSION is in the digest."""
    from imgbench.datasets import synth

    recipe = recipes.get("synthetic-small")
    before = recipe.digest
    monkeypatch.setattr(synth, "VERSION", synth.VERSION + 1)
    assert recipe.digest != before


def test_cli_synth_detail(tmp_path: Path) -> None:
    sizes = {}
    for level in ("low", "high"):
        out = tmp_path / level
        args = ["dataset", "synth", "--out", str(out), "--n", "4", "--size", "200x150"]
        result = runner.invoke(app, [*args, "--detail", level])
        assert result.exit_code == 0, result.output
        sizes[level] = sum(p.stat().st_size for p in out.rglob("*.jpg"))
    assert sizes["low"] < sizes["high"]
    result = runner.invoke(
        app, ["dataset", "synth", "--out", str(tmp_path / "x"), "--n", "2", "--detail", "busy"]
    )
    assert result.exit_code == 2 and "detail must be low, medium, high" in result.output
