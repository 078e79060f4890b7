"""The Compare page shows imgbench.compare's verdicts, and its refusals, for the runs picked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from imgbench.compare import CompareInputError, ComparisonResult, compare_frames, load_config
from imgbench.compare.report import counts, headline
from imgbench.results.store import load_results, write_rows
from tests.dashboard.conftest import chart_data, texts
from tests.dashboard.fixtures import RunSpec, run_rows, slow_down, standard_runs

SLOWED = "read/pillow/open-convert[codec=jpeg,mode=memory,threads=1]"
# slowed near the 10% threshold, where the choice of test decides: a page judging with another
# test, alpha, correction or decision rule than imgbench.compare's gets some of these wrong
NEAR_THRESHOLD = {
    "read/pillow/open-convert[codec=jpeg,mode=memory,threads=None]": 1.08,
    "read/pillow/open-convert[codec=png,mode=memory,threads=1]": 1.10,
    "read/pillow/open-convert[codec=png,mode=memory,threads=None]": 1.12,
}
OpenApp = Callable[..., AppTest]


def write_pair(
    folder: Path, base: RunSpec, cand: RunSpec, factor: float = 2.0, near: bool = False
) -> None:
    """Two runs of the read stage at the same speed, ``SLOWED`` taking ``factor`` times as long in
    the candidate (and ``NEAR_THRESHOLD`` if ``near``); peak RSS equal on both sides so that only
    the slowdowns can regress."""
    for spec in (base, cand):
        rows = run_rows(spec, stages=("read",))
        for row in rows:
            row["peak_rss_bytes"] = 300_000_000 if row["status"] == "ok" else None
        if spec is cand:
            rows = slow_down(rows, SLOWED, factor)
            for case_id, near_factor in NEAR_THRESHOLD.items() if near else ():
                rows = slow_down(rows, case_id, near_factor)
        write_rows(rows, folder / f"{spec.run_id}.parquet")


def same_speed_runs() -> tuple[RunSpec, RunSpec]:
    base, cand = standard_runs()
    return base, replace(cand, speed=base.speed)


def sides(folder: Path, base: RunSpec, cand: RunSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = load_results(folder).frame
    return frame[frame["run_id"] == base.run_id], frame[frame["run_id"] == cand.run_id]


def page_verdicts(at: AppTest) -> pd.Series:
    table = at.dataframe[0].value
    return table.set_index("case_id")["verdict"].sort_index()


def expected_verdicts(result: ComparisonResult, metric: str) -> pd.Series:
    rows = result.rows[result.rows["metric"] == metric]
    return rows.set_index("case_id")["verdict"].sort_index()


def shown_counts(at: AppTest) -> dict[str, int]:
    metrics = {m.label: m.value for m in at.metric}
    return {v: int(metrics[v.capitalize()]) for v in ("regressed", "improved", "unchanged")}


def test_page_verdicts_are_imgbench_compares(open_app: OpenApp, tmp_path: Path) -> None:
    base, cand = same_speed_runs()
    write_pair(tmp_path, base, cand, near=True)
    expected = compare_frames(*sides(tmp_path, base, cand), load_config())
    assert SLOWED in expected.regressed_cases  # the fixture does what it says
    near = expected_verdicts(expected, "images_per_s_median")[list(NEAR_THRESHOLD)]
    assert set(near) == {"regressed", "unchanged"}  # close calls both ways: a test that can fail

    at = open_app(tmp_path, "compare")
    assert SLOWED in texts(at, "error")  # named in the headline
    assert texts(at, "error") == headline(expected)
    assert shown_counts(at) == counts(expected)
    for metric in ("images_per_s_median", "latency_ms_p99"):
        at.selectbox(key="compare_metric").set_value(metric).run()
        shown = page_verdicts(at)
        assert shown.to_dict() == expected_verdicts(expected, metric).to_dict(), metric
        assert shown[SLOWED] == "regressed"
        untouched = shown.drop([SLOWED, *NEAR_THRESHOLD])
        assert len(untouched) > 10 and (untouched == "unchanged").all()
    chart = chart_data(at, 0, "ratio").set_index("case_id")
    assert chart.loc[SLOWED, "ratio"] == pytest.approx(2.0, rel=0.1)  # latency doubled

    # the other way round the slowdown is an improvement, and nothing regressed
    at.selectbox(key="compare_baseline").set_value(at.selectbox(key="compare_candidate").value)
    at.selectbox(key="compare_candidate").set_value(at.selectbox(key="compare_baseline").options[1])
    at.selectbox(key="compare_metric").set_value("images_per_s_median").run()
    swapped = compare_frames(*reversed(sides(tmp_path, base, cand)), load_config())
    assert page_verdicts(at)[SLOWED] == "improved"
    assert (
        page_verdicts(at).to_dict() == expected_verdicts(swapped, "images_per_s_median").to_dict()
    )
    assert shown_counts(at) == counts(swapped) and counts(swapped)["regressed"] == 0
    assert texts(at, "success") == headline(swapped)


def test_page_settings_are_passed_to_imgbench_compare(open_app: OpenApp, tmp_path: Path) -> None:
    """30% more time regresses at the default 10% threshold and not at 50%, as with the CLI's
    ``--threshold 0.5``; the command shown carries the setting."""
    base, cand = same_speed_runs()
    write_pair(tmp_path, base, cand, factor=1.3)
    at = open_app(tmp_path, "compare")
    assert page_verdicts(at)[SLOWED] == "regressed"
    at.slider(key="compare_threshold").set_value(50).run()
    config = load_config().with_overrides(threshold=0.5)
    expected = compare_frames(*sides(tmp_path, base, cand), config)
    assert (
        page_verdicts(at).to_dict() == expected_verdicts(expected, "images_per_s_median").to_dict()
    )
    assert page_verdicts(at)[SLOWED] == "unchanged"
    assert "--threshold 0.5" in texts(at, "caption")
    assert f"imgbench compare {base.run_id} {cand.run_id}" in texts(at, "caption")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"dataset_fingerprint": "fp-other", "dataset_name": "other"}, "different datasets"),
        ({"machine_id": "m-other", "hostname": "other-box"}, "different machines"),
    ],
)
def test_refused_pair_shows_the_reason_not_a_verdict(
    open_app: OpenApp, tmp_path: Path, change: dict[str, str], words: str
) -> None:
    base, cand = same_speed_runs()
    cand = replace(cand, **change)
    write_pair(tmp_path, base, cand)
    with pytest.raises(CompareInputError) as refused:
        compare_frames(*sides(tmp_path, base, cand), load_config())
    reason = str(refused.value)
    assert words in reason

    at = open_app(tmp_path, "compare")
    assert reason in texts(at, "error")
    assert not at.metric and not at.dataframe and not at.get("vega_lite_chart")  # no verdict
    assert "regressed" not in texts(at, "error").replace(reason, "")


def test_cross_machine_checkbox_is_allow_cross_machine(open_app: OpenApp, tmp_path: Path) -> None:
    base, cand = same_speed_runs()
    cand = replace(cand, machine_id="m-other", hostname="other-box")
    write_pair(tmp_path, base, cand)
    at = open_app(tmp_path, "compare")
    assert "different machines" in texts(at, "error")
    at.checkbox(key="compare_cross_machine").check().run()
    expected = compare_frames(*sides(tmp_path, base, cand), load_config(), allow_cross_machine=True)
    assert (
        page_verdicts(at).to_dict() == expected_verdicts(expected, "images_per_s_median").to_dict()
    )
    assert "cross-machine comparison" in texts(at, "warning")
    assert "--allow-cross-machine" in texts(at, "caption")


def test_slower_run_regresses_everywhere_counted_not_listed(
    shown_app: OpenApp, standard_results: Path
) -> None:
    """The standard candidate is 15% slower in every case: all regressed, and the headline
    counts them instead of naming 68 cases (the table lists them)."""
    at = shown_app(standard_results, "compare")
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Regressed"]) == int(metrics["Cases compared"]) > 8
    assert chart_data(at, 0, "ratio")["ratio"].median() == pytest.approx(0.85, rel=0.05)
    error = texts(at, "error")
    assert error.startswith(f"REGRESSION: {metrics['Regressed']} regressed") and "[" not in error
    assert (at.dataframe[0].value["verdict"] == "regressed").all()


def test_one_run_says_a_second_is_needed(open_app: OpenApp, tmp_path: Path) -> None:
    base, _ = standard_runs()
    write_rows(run_rows(base, stages=("read",)), tmp_path / f"{base.run_id}.parquet")
    at = open_app(tmp_path, "compare")
    assert "needs two runs" in texts(at, "info")
    assert not at.metric


def test_runs_with_references_show_the_machine_ratio_and_what_it_explains(
    open_app: OpenApp, tmp_path: Path
) -> None:
    """Machine B (a quota of one core, say) is 50/190 of machine A at two workers and half of it
    on one thread, as the references predict, but for one loader 25% faster than predicted: the
    page's machine table lists it first, at 80% explained, and sums up as the command does."""
    from datetime import UTC, datetime

    from tests.compare.test_machines import MACHINE_A, MACHINE_B, first_case, machine_rows

    a = machine_rows(MACHINE_A, run_id="20261120T120000Z-quick-aaaaaa")
    off = first_case(a, "loader", workers=2)
    b = machine_rows(
        MACHINE_B,
        run_id="20261121T120000Z-quick-bbbbbb",
        scale=True,
        off={off: 1.25},
        created=datetime(2026, 11, 21, 12, 0, tzinfo=UTC),
    )
    for rows in (a, b):
        write_rows(rows, tmp_path / f"{rows[0]['run_id']}.parquet")
    at = open_app(tmp_path, "compare")
    assert "Machines: candidate / baseline" in texts(at, "subheader")
    table = at.dataframe[1].value
    assert list(table.columns) == [
        "case_id",
        "parallel",
        "cores busy",
        "baseline images/s",
        "candidate images/s",
        "machine ratio",
        "reference predicts",
        "reference explains",
    ]
    first = table.iloc[0]
    assert first["case_id"] == off and first["parallel"] == 2
    assert first["reference predicts"] == pytest.approx(50 / 190)
    assert first["reference explains"] == pytest.approx(0.8)
    assert list(table["reference explains"].iloc[1:]) == pytest.approx([1.0] * (len(table) - 1))
    captions = texts(at, "caption")
    assert "the reference explains the machine ratio within 0.0%" in captions
    assert "the answer's pick (" in captions and "it explains" in captions
