"""lab/bench_datasets.py runs end to end at a tiny N (its figures are not asserted: speed
targets live in the benchmark, not in unit tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_scale_benchmark_runs_and_reports_every_step(tmp_path: Path) -> None:
    figures_file = tmp_path / "figures.json"
    work = tmp_path / "work"
    (work / "left-by-an-earlier-run").mkdir(parents=True)  # moved aside, removed at the end
    args = ["--n", "40", "--small", "20", "--ratio-n", "16", "--rounds", "1"]
    args += [
        "--sizes",
        "96x64",
        "--formats",  # one: each format is one more `imgbench dataset convert` process per
        "lmdb",  # size, the same loop (every format's conversion: test_convert.py)
        "--dir",
        str(work),
        "--settle-s",
        "0",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "lab" / "bench_datasets.py"),
            *args,
            "--json",
            str(figures_file),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(figures_file.read_text())
    assert len(figures["rounds"]) == 2  # --rounds 1 before the generating steps, one after
    for ratio_round in figures["rounds"]:
        assert ratio_round["ratio"] > 0 and ratio_round["encode_bound_per_s"] > 0
    # the file-creation probe ran before each generating step
    assert set(figures["create_us"]) == {"the ratio rounds", "synth 20", "synth 40"}
    assert all(value > 0 for value in figures["create_us"].values())
    assert figures["settled_s"] == dict.fromkeys(figures["create_us"], 0.0)  # --settle-s 0
    for n in (20, 40):
        assert figures[f"synth_{n}"]["peak_rss_max_mib"] > 0
        assert figures[f"synth_{n}"]["of_bound"] > 0
        convert = figures[f"convert_lmdb_{n}"]
        assert convert["records"] == n and convert["write_rate"] > 0
    assert figures["disk_1m_gb"] > 0
    assert "extrapolated to 1,000,000 images" in proc.stdout
    assert not work.exists()  # removed without --keep
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("work")] == []
