"""[tool.imgbench.regression] in a real pyproject.toml: thresholds, rules, ignores, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbench.compare.config import ConfigError, RegressionConfig, load_config

TABLE = """
[project]
name = "x"

[tool.imgbench.regression]
threshold = 0.08
alpha = 0.01
correction = "bh"
metric_thresholds = { peak_rss_bytes = 0.2 }

[[tool.imgbench.regression.rules]]
stage = "loader"
threshold = 0.25

[[tool.imgbench.regression.rules]]
case = "read/pillow/*"
metric = "images_per_s_median"
threshold = 0.15

[[tool.imgbench.regression.ignore]]
case = "read/*[codec=tiff*"
reason = "tiff decode depends on the runner's libtiff"
"""


def test_reads_thresholds_rules_and_ignores(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(TABLE)
    cfg = load_config(tmp_path / "pyproject.toml")
    assert (cfg.threshold, cfg.alpha, cfg.correction) == (0.08, 0.01, "bh")
    assert cfg.threshold_for("read/opencv/x", "read", "images_per_s_median") == 0.08
    assert cfg.threshold_for("read/opencv/x", "read", "peak_rss_bytes") == 0.2
    assert cfg.threshold_for("loader/torch/w2", "loader", "peak_rss_bytes") == 0.25
    assert cfg.threshold_for("read/pillow/open", "read", "images_per_s_median") == 0.15
    assert cfg.threshold_for("read/pillow/open", "read", "mb_per_s_median") == 0.08
    assert cfg.ignored("read/pillow/open[codec=tiff,mode=memory]", "read") == (
        "tiff decode depends on the runner's libtiff"
    )
    assert cfg.ignored("read/pillow/open[codec=jpeg,mode=memory]", "read") is None


def test_missing_table_gives_defaults(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    cfg = load_config(tmp_path / "pyproject.toml")
    assert cfg.threshold == RegressionConfig().threshold == 0.10
    assert "defaults" in cfg.source


def test_the_projects_own_table_loads() -> None:
    cfg = load_config(Path(__file__).resolve().parents[2] / "pyproject.toml")
    assert cfg.threshold == 0.10 and cfg.correction in ("holm", "bh")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("threshold = 10%", "not readable TOML"),
        ("threshold = -1", "threshold must be a number"),
        ("correction = 'bonferroni'", "correction must be one of"),
        ("tresholds = 1", "unknown keys"),
        ("metrics = ['fps']", "unknown metrics"),
        ("[[tool.imgbench.regression.ignore]]\ncase = 'x*'", "needs a reason"),
        ("[[tool.imgbench.regression.rules]]\nstage = 'read'", "needs a threshold"),
    ],
)
def test_bad_tables_name_the_file_and_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[tool.imgbench.regression]\n{text}\n")
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(path) in str(info.value)
