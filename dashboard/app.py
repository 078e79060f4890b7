"""imgbench dashboard: ``imgbench dashboard`` or ``streamlit run dashboard/app.py -- --results DIR``.

The entry point reads the results (cached), draws the shared sidebar filters, hands the filtered
view to the page that runs, and registers the pages with ``st.navigation``.
"""

from __future__ import annotations

import sys
from pathlib import Path

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:  # `import dashboard.*` whether started by streamlit or AppTest
    sys.path.insert(0, _REPO)

import streamlit as st  # noqa: E402

from dashboard.data import cached_results, exists, results_dir  # noqa: E402
from dashboard.state import BENCH_HINT, View, apply_filters, publish, sidebar_filters  # noqa: E402
from imgbench.stages import STAGES  # noqa: E402

# Overview first, then one page per stage as registered in imgbench.stages, then `imgbench
# profile`'s rows (a user's own pipeline), then the run tools
PAGES = [
    ("views/overview.py", "Overview", ":material/dashboard:"),
    *((stage.page, stage.title, stage.icon) for stage in STAGES),
    ("views/profile.py", "Your pipeline", ":material/troubleshoot:"),
    ("views/compare.py", "Compare", ":material/compare_arrows:"),
    ("views/explorer.py", "Explorer", ":material/table:"),
]


def main() -> None:
    st.set_page_config(page_title="imgbench", page_icon=":material/speed:", layout="wide")
    folder = results_dir()
    results = cached_results(folder)
    with st.sidebar:
        st.caption(f"Results: `{folder}` · {len(results.files)} files · {len(results.frame)} rows")
    if results.skipped:
        names = "\n".join(f"- `{name}`: {reason}" for name, reason in results.skipped)
        st.warning(f"Skipped {len(results.skipped)} unreadable results file(s):\n{names}")
    if results.error:
        st.error(results.error)
    elif results.empty:
        where = "does not exist" if not exists(folder) else "has no readable results"
        st.info(
            f"`{folder}` {where} yet: {BENCH_HINT} to measure this machine, then reload. "
            "`imgbench dashboard --results DIR` opens another folder."
        )
    selections = sidebar_filters(results)
    publish(
        View(results=results, frame=apply_filters(results.frame, selections), selections=selections)
    )
    pages = [
        st.Page(path, title=title, icon=icon, default=(index == 0))
        for index, (path, title, icon) in enumerate(PAGES)
    ]
    st.navigation(pages).run()


main()
