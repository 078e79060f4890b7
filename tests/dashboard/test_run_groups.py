"""The run filter starts on the newest `imgbench run`, with all its sessions."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from imgbench.results.schema import empty_row
from imgbench.results.store import write_rows


def _run(folder: Path, run_id: str, minute: int, group: str | None, stage: str) -> None:
    row = empty_row()
    row.update(
        run_id=run_id,
        run_group=group,
        created_utc=datetime(2026, 11, 22, 1, minute, tzinfo=UTC),
        hostname="box",
        machine_id="m1",
        dataset_name="d",
        dataset_fingerprint="f",
        stage=stage,
        case_id=f"{stage}/lib/v[]",
        library="lib",
        status="ok",
        samples_s=[0.1, 0.1, 0.1],
        images_per_round=10,
        images_per_s_median=100.0,
        images_per_s_q1=100.0,
        images_per_s_q3=100.0,
    )
    write_rows([row], folder / f"{run_id}.parquet")


def test_newest_group_is_preselected(open_app, tmp_path: Path) -> None:
    _run(tmp_path, "old-run", 0, None, "read")
    _run(tmp_path, "main-session", 10, "g2", "augment")
    _run(tmp_path, "env-session", 20, "g2", "read")
    at = open_app(tmp_path)
    (run_filter,) = [m for m in at.sidebar.multiselect if m.label == "Run"]
    chosen = run_filter.value
    assert len(chosen) == 2
    assert any("main-session" in c for c in chosen) and any("env-session" in c for c in chosen)
