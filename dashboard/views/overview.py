"""Overview: the answer first (per machine and dataset: the configuration to use, its images/s,
its speed-up over the common default, what bounds it, what to try next), then references, the
runs, and the real reasons cases were skipped or failed. The answer is ``imgbench.answer``'s, the
same as ``imgbench report`` and ``imgbench advise`` give."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from dashboard.allocators import best_gain, case_label, effects
from dashboard.charts import show
from dashboard.state import BENCH_HINT, View, current_view

from imgbench.answer import Answer, answers, problems, task_answers
from imgbench.answer.disk_advice import disk_advice, hdd_over_real
from imgbench.answer.gpu import gpu_verdict
from imgbench.answer.systems import SystemsTable, systems_tables
from imgbench.report.charts import candidates_chart, stage_times_chart
from imgbench.report.systems import cited_rows, of_answer, of_tasks, systems_markdown
from imgbench.results.store import run_summary

STAGE_TITLES = {
    "format": "storage read",
    "read": "decode",
    "augment": "augmentation",
    "loader": "loader (end to end)",
    "native": "native ceiling",
}
ALLOCATOR_PAYS = 1.10  # the Overview names an allocator that beats glibc by more than this


def allocator_text(ok: pd.DataFrame) -> str | None:
    """The allocator's largest gain over glibc on one case, when it is beyond noise and >10%."""
    if ok["allocator"].nunique() < 2:
        return None
    step = ok["stage"].map(STAGE_TITLES).fillna(ok["stage"])
    rows = ok.assign(case=case_label(ok) + " (" + step + ")")
    effect = best_gain(effects(rows, "case"), ALLOCATOR_PAYS)
    if effect is None:
        return None
    return (
        f"**Allocator: {effect.allocator} pays** (beyond the noise and more than "
        f"{ALLOCATOR_PAYS - 1:.0%} faster than glibc). {effect.text()}. The stage's page compares "
        "every allocator measured."
    )


def render_systems(tables: list[SystemsTable]) -> None:
    """Each system (DALI, tf.data, the DataLoader, ...) at its best against the pick: the
    report's table (``imgbench.answer.systems``)."""
    for table in tables:
        st.markdown("\n".join(systems_markdown(table, heading="####", rows=False)))
        with st.expander("The row behind each line"):
            st.markdown("\n".join(cited_rows(table)))


def render_answer(answer: Answer, systems: list[SystemsTable] | None = None) -> None:
    """One machine and dataset: the recommendation, where each figure comes from, and each
    system at its best beside it."""
    st.subheader(answer.title)
    if answer.best is None:
        st.info("No recommendation here: " + "; ".join(answer.missing) + ".")
        return
    st.markdown(f"**{answer.headline()}**")
    cols = st.columns(4)
    cols[0].metric("Recommended, images/s (95% interval)", answer.best_text())
    cols[1].metric("× default, 0 workers", answer.speedup_text(answer.default_0, short=True))
    cols[2].metric(
        f"× default, {answer.cores or '?'} workers",
        answer.speedup_text(answer.default_cores, short=True),
    )
    cols[3].metric("Bounded by", answer.bound.stage if answer.bound else "unknown")
    lines = [
        "- " + (f"**{e.label}:** " if e.label else "") + e.text + (f" `{e.row}`" if e.row else "")
        for e in answer.evidence()
    ]
    st.markdown("\n".join(lines))
    for note in answer.missing:
        st.caption(f"Missing: {note}.")
    st.caption(
        "Bars: median images/s of each configuration's rounds; lines: 95% intervals (the "
        "rounds' interval widened by the between-session spread measured for that kind of case, "
        "unless the final measured it). Light green: ties with the recommendation."
    )
    show(candidates_chart(answer))
    if answer.stage_times_ms:
        show(stage_times_chart(answer))
    render_systems(systems or [])
    if answer.references:
        st.caption(
            "References, never a choice: experiments measure something other than a training "
            "pipeline; ceilings are one step at the hardware's limit."
        )
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "kind": r.kind,
                        "what": r.name,
                        "images/s": round(r.images_per_s),
                        "why not a choice": r.note,
                        "case_id": r.case_id,
                    }
                    for r in answer.references
                ]
            ),
            hide_index=True,
        )


def render_disks(frame: pd.DataFrame) -> None:
    """Per measured disk (an emulated one beside the real one): the pick and whether packing pays
    off, then the emulated HDD's cold images/s over the real disk's per format."""
    advice = disk_advice(frame)
    if advice:
        st.subheader("Which format and workers on each disk")
        st.markdown("\n".join(f"- {line}" for disk in advice for line in disk.lines()))
    ratios = hdd_over_real(frame)
    if not ratios.empty:
        st.caption(
            "Emulated HDD over the real disk, cold: per format read cold on both, the HDD's "
            "images/s over the real disk's (below 1: the HDD is slower)"
        )
        st.dataframe(
            ratios.round({"real images/s": 0, "hdd images/s": 0, "hdd/real": 2}), hide_index=True
        )


def render_gpu(frame: pd.DataFrame) -> None:
    """Is the GPU waiting, and (with the real step measured) the answer chosen by its AU."""
    verdict = gpu_verdict(frame)
    if verdict is None:
        return
    title, *rest = verdict.lines()
    st.subheader(title)
    st.markdown("\n".join(f"- {line}" for line in rest))
    if verdict.chosen is not None:
        st.caption(
            "With the real step measured here, the answer is the feed above, chosen by the "
            "step's AU; the answer below ranks the CPU loader rows alone."
        )


def render(view: View) -> None:
    st.title("Overview")
    frame = view.frame
    if view.results.empty:
        st.subheader("No results yet")
        st.markdown(
            f"{BENCH_HINT.capitalize()}. `make bench` sets everything up, measures the default "
            "matrix and writes `results/<run>.parquet`; this page then names the configuration "
            "to use on this machine, its speed-up over the common default and what bounds it."
        )
        return
    counts = frame["status"].value_counts()
    table, legacy = problems(frame)
    cols = st.columns(6)
    cols[0].metric("Runs", frame["run_id"].nunique())
    cols[1].metric("Machines", frame["machine_id"].nunique())
    cols[2].metric("Datasets", frame["dataset_fingerprint"].nunique())
    cols[3].metric("Ok cases", int(counts.get("ok", 0)))
    cols[4].metric("Skipped", int(counts.get("skipped", 0)) - legacy)
    cols[5].metric("Failed", int(counts.get("failed", 0)))

    render_gpu(frame)  # the accelerator half first, where the rows hold it (docs/gpu.md)
    found = answers(frame)
    if not found:
        st.info(f"No measured rows in the current filters: {BENCH_HINT}.")
    elif len(found) > 1:
        st.caption(
            f"{len(found)} machine, dataset and output combinations: each gets its own answer, "
            "never a pooled one."
        )
    tasks = task_answers(frame)
    systems = systems_tables(frame, found, tasks)
    for answer in found:
        render_answer(answer, of_answer(systems, answer))
    if tasks:  # segmentation, crop-ocr: other work, each task its own answer
        st.subheader("Other tasks")
        st.caption("Each task's loader rows against its own only, never against classification.")
        st.markdown("\n".join(f"- **{t.title}**: {t.headline()}" for t in tasks))
        render_systems(of_tasks(systems))
    allocator = allocator_text(view.ok())
    if allocator:
        st.markdown(allocator)
    render_disks(frame)

    st.subheader("Runs")
    st.caption("Every run in the folder that passes the filters other than Run.")
    st.dataframe(run_summary(view.without("run")), hide_index=True)
    if not table.empty:
        st.subheader("Skipped and failed cases")
        st.dataframe(table, hide_index=True)
    if legacy:
        st.caption(
            f"{legacy} older skipped rows only said that a case runs in another environment; "
            "they are left out (that environment's session measures them)."
        )


render(current_view())
