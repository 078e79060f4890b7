"""The answer states the pick's distance to the in-RAM ceilings and divides the cores among
training ranks, and neither kind of row is ever the pick."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from imgbench.answer import answers
from imgbench.answer.headroom import ceilings, rank_rows, ranks_text
from tests.answer.test_answer import BASE, frame_of, real_loaders
from tests.dashboard.fixtures import run_rows, slow_down


def _variant_of(row: dict[str, Any], suffix: str, factor: float, **params: Any) -> dict[str, Any]:
    """``row`` as another case: ``params`` added, ``factor`` times its images/s."""
    changed = {**json.loads(row["params_json"]), **params}
    new = {
        **row,
        "variant": row["variant"] + suffix,
        "case_id": row["case_id"] + suffix,
        "params_json": json.dumps(changed, sort_keys=True),
        "workers": changed["workers"],
    }
    return slow_down([new], new["case_id"], 1 / factor)[0]


def rows_with_headroom() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = run_rows(BASE)
    loaders = real_loaders(frame_of(rows))
    best_id = loaders.loc[loaders["images_per_s_median"].idxmax(), "case_id"]
    best = next(r for r in rows if r["case_id"] == best_id)
    extra = [
        _variant_of(best, "+bytes-in-ram", 2.0, preload="bytes"),
        _variant_of(best, "+decoded-in-ram", 4.0, preload="decoded"),
        _variant_of(best, "+2-ranks-1", 1.3, ranks=2, workers=1),  # 2 x 1 worker: fastest
        _variant_of(best, "+2-ranks-2", 0.8, ranks=2, workers=2),  # 2 x 2: oversubscribed
    ]
    return rows + extra, best


def test_ceilings_and_ranks_are_never_the_pick() -> None:
    rows, best = rows_with_headroom()
    (answer,) = answers(frame_of(rows))
    assert answer.best is not None and answer.best.case_id == best["case_id"]
    assert all("ram" not in m.case_id and "ranks" not in m.case_id for m in answer.candidates)
    notes = {r.case_id: r.note for r in answer.references}
    assert "in-RAM ceiling" in notes[best["case_id"] + "+decoded-in-ram"]
    assert "2 training ranks" in notes[best["case_id"] + "+2-ranks-1"]


def test_the_pick_is_half_and_a_quarter_of_the_ceilings() -> None:
    rows, _ = rows_with_headroom()
    (answer,) = answers(frame_of(rows))
    text = answer.headroom or ""
    assert text.startswith("the pick runs at 50% (")
    assert "; and at 25% (" in text and "decoded pixels in RAM" in text
    assert any(e.label == "Nothing left to read" for e in answer.evidence())


def test_the_ceiling_of_each_kind_is_its_fastest_row() -> None:
    rows, best = rows_with_headroom()
    slower = _variant_of(best, "+bytes-in-ram-0", 1.1, preload="bytes", workers=0)
    frame = frame_of([*rows, slower])
    found = ceilings(frame[frame["stage"] == "loader"])
    assert [c.kind for c in found] == ["bytes", "decoded"]
    assert found[0].case_id == best["case_id"] + "+bytes-in-ram"


def test_ranks_advice_divides_the_cores() -> None:
    rows, _ = rows_with_headroom()
    (answer,) = answers(frame_of(rows))
    text = answer.ranks_advice or ""
    assert text.startswith("2 training ranks sharing the 2 cores")
    assert text.endswith("give each rank 1 worker (the fastest)")


def test_ranks_that_tie_get_the_fewer_workers() -> None:
    rows, best = rows_with_headroom()
    rows = [r for r in rows if "ranks" not in r["case_id"]]
    rows += [
        _variant_of(best, "+2-ranks-1", 1.0, ranks=2, workers=1),
        _variant_of(best, "+2-ranks-2", 1.01, ranks=2, workers=2),
    ]
    frame = frame_of(rows)
    loaders = frame[frame["stage"] == "loader"]
    assert [r.workers for r in rank_rows(loaders)] == [1, 2]
    text = ranks_text(loaders, 2) or ""
    assert "give each rank 1 worker (the fewest workers among those within the noise)" in text


def test_no_such_rows_no_lines() -> None:
    (answer,) = answers(frame_of(run_rows(BASE)))
    assert answer.headroom is None and answer.ranks_advice is None
    assert ranks_text(pd.DataFrame(columns=["case_id", "created_utc", "params_json"]), 2) is None
