"""The sidebar filters every page shares, and the filtered view handed to the page that runs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from dashboard.data import FILTER_COLUMNS, Results

VIEW_KEY = "_imgbench_view"
FILTER_TITLES = {
    "machine": "Machine",
    "run": "Run",
    "dataset": "Dataset",
    "environment": "Environment",
    "library": "Library",
    "codec": "Codec",
    "threads": "Threads",
    "allocator": "Allocator",
}
FILTER_HELP = {
    "run": "newest run (with its sessions) preselected; clear it to pool every run",
    "allocator": "the allocator of the process that measured (glibc unless an allocator session "
    "of `imgbench run --profile default` chose another)",
}
BENCH_HINT = "run `make bench`, or `imgbench run --profile quick`"


@dataclass
class View:
    """What a page shows: the filtered rows, and everything it may need beside them."""

    results: Results
    frame: pd.DataFrame  # rows passing the sidebar filters (all statuses)
    selections: dict[str, list[str]] = field(default_factory=dict)

    def ok(self, stage: str | None = None) -> pd.DataFrame:
        """Rows that measured throughput, optionally of one stage (instruction counts, which
        have none, are compared on the Compare page and by `imgbench compare`)."""
        measure = self.frame.get("measure")
        timed = (
            measure.fillna("wall").astype(str) != "instructions"
            if measure is not None
            else pd.Series(True, index=self.frame.index)
        )
        rows = self.frame[(self.frame["status"] == "ok") & timed]
        return rows if stage is None else rows[rows["stage"] == stage]

    def without(self, *names: str) -> pd.DataFrame:
        """All rows filtered by every selection except ``names`` (e.g. Compare picks its runs)."""
        return apply_filters(self.results.frame, self.selections, skip=names)


def apply_filters(
    frame: pd.DataFrame, selections: dict[str, list[str]], skip: tuple[str, ...] = ()
) -> pd.DataFrame:
    mask = pd.Series(True, index=frame.index)
    for name, chosen in selections.items():
        if chosen and name not in skip:
            mask &= frame[FILTER_COLUMNS[name]].astype(str).isin(chosen)
    return frame[mask]


def newest_group(results: Results, runs: list[str]) -> list[str]:
    """The newest run and the runs of the same `imgbench run` (its environments and datasets)."""
    frame = results.frame
    groups = frame.drop_duplicates("run_label").set_index("run_label")["run_group"]
    group = groups.get(runs[0])
    if group is None or pd.isna(group):
        return runs[:1]
    return [run for run in runs if groups.get(run) == group]


def bench_runs(results: Results, runs: list[str]) -> list[str]:
    """The runs that measured imgbench's own stages: an `imgbench profile` run (a user's own
    pipeline, shown on its page whatever the Run filter) is not preselected over them."""
    frame = results.frame
    profile_only = frame.groupby("run_label")["stage"].agg(lambda s: set(s) == {"profile"})
    kept = [run for run in runs if not profile_only.get(run, False)]
    return kept or runs


def sidebar_filters(results: Results) -> dict[str, list[str]]:
    """One multiselect per filter (empty = all); the run filter starts on the newest run."""
    selections: dict[str, list[str]] = {}
    with st.sidebar:
        st.header("Filters")
        for name, title in FILTER_TITLES.items():
            options = results.options.get(name, [])
            key = f"filter_{name}"
            if key in st.session_state:  # drop choices that vanished with a changed folder
                st.session_state[key] = [v for v in st.session_state[key] if v in options]
            default = (
                newest_group(results, bench_runs(results, options))
                if name == "run" and options
                else []
            )
            selections[name] = st.multiselect(
                title,
                options,
                default=None if key in st.session_state else default,
                key=key,
                placeholder="all",
                help=FILTER_HELP.get(name),
            )
    return selections


def publish(view: View) -> None:
    st.session_state[VIEW_KEY] = view


def current_view() -> View:
    """The view the entry point built for this rerun."""
    return st.session_state[VIEW_KEY]


def stage_rows(view: View, stage: str, title: str, command: str) -> pd.DataFrame:
    """The page's ok rows of ``stage``; if there are none, say why and which command fills them."""
    rows = view.ok(stage)
    if not rows.empty:
        return rows
    everywhere = view.results.frame
    anywhere = int(((everywhere["stage"] == stage) & (everywhere["status"] == "ok")).sum())
    if anywhere:
        st.info(
            f"No {title} rows match the sidebar filters ({anywhere} rows exist in other runs or "
            "filters): widen the filters, e.g. clear **Run**."
        )
    else:
        st.info(f"No {title} results yet: {BENCH_HINT}, or only this stage with `{command}`.")
    st.stop()
    raise AssertionError("unreachable")  # st.stop raises
