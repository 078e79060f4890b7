"""`imgbench run --ray` on a real local cluster: a head and two worker nodes started here, each
with its own machine label; results written to a real S3 bucket and read back by `imgbench
results` and the dashboard; a node killed mid-run fails its own cases, not the run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from imgbench.objectstore.server import S3Endpoint
from imgbench.results.store import load_results
from tests.cluster.conftest import aws_env, left_sessions
from tests.cluster.ray_local import LocalRayCluster

ROOT = Path(__file__).resolve().parents[2]
IMGBENCH = str(Path(sys.executable).with_name("imgbench"))
LABELS = {"head", "w1", "w2"}


def imgbench(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [IMGBENCH, *args],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def test_each_node_measures_its_share_into_the_bucket_and_it_loads_everywhere(
    ray_cluster: LocalRayCluster,
    s3: S3Endpoint,
    toy_env: dict[str, str],
    tiny_dataset: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bucket = f"s3://{s3.bucket}/team/ray"
    env = {**toy_env, **aws_env(s3), "HOME": str(ray_cluster.root / "home")}
    proc = imgbench(
        [
            "run",
            "--profile=quick",
            "--env=main",
            f"--dataset={tiny_dataset}",
            f"--results={bucket}",
            "--name=ray",
            f"--ray={ray_cluster.address}",
            "-k",
            "test_read and jpeg-memory",
            "--",
            "--imgbench-rounds=1",
            # each share's session measures in its own process: no worker server per node (the
            # worker path is tests/measure/'s; here the shares, the bucket and the labels)
            "--imgbench-process=in-process",
        ],
        env,
    )
    code, out = finish(proc)
    assert code == 0, out[-4000:]
    for label in LABELS:
        assert f"on Ray node {label} (" in out, out[-3000:]
    assert bucket in out  # the files written are listed by their s3:// address

    # the rows, read back from the bucket: each node measured its own cases, under its label
    for key, value in aws_env(s3).items():
        monkeypatch.setenv(key, value)
    loaded = load_results(bucket)
    rows = loaded.frame
    assert len(loaded.files) == 3 and not loaded.skipped
    assert set(rows["node_label"]) == LABELS, rows[["case_id", "node_label"]]
    assert (rows["status"] == "ok").all(), rows[["case_id", "reason"]]
    assert rows["case_id"].is_unique and len(rows) == 4  # pillow, opencv x2, simplejpeg
    assert rows["ray_node_id"].nunique() == 3 and rows["run_group"].nunique() == 1
    assert rows["machine_id"].nunique() == 1  # one host: the same hardware fingerprint
    assert (rows.groupby("run_id")["node_label"].nunique() == 1).all()  # a file per node

    # `imgbench results list` on the bucket: one line per node's run, with its label
    from typer.testing import CliRunner

    from imgbench.cli import app

    listed = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["results", "list", bucket])
    assert listed.exit_code == 0, listed.output
    for label in LABELS:
        assert f"· {label}" in listed.output, listed.output

    # the dashboard's loader and the app itself on the bucket
    from dashboard.data import load, results_dir

    assert results_dir(["--results", bucket]) == bucket
    results = load(bucket)
    assert results.error is None and len(results.frame) == 4
    machines = set(results.options["machine"])
    assert len(machines) == 3 and all(any(f"· {x} ·" in m for m in machines) for x in LABELS)

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("IMGBENCH_RESULTS", bucket)
    at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert f"`{bucket}` · 3 files · 4 rows" in captions, captions
    assert not at.error


def test_a_node_killed_mid_run_fails_its_own_cases_not_the_run(
    ray_cluster: LocalRayCluster, toy_env: dict[str, str], tiny_dataset: Path, tmp_path: Path
) -> None:
    """Nine cases over three nodes (3 each, in order): w2 gets fast7, slow8, slow9. It is killed
    once fast7's row has arrived, while it measures slow8 (0.4 s per image)."""
    results = tmp_path / "results"
    proc = imgbench(
        [
            "run",
            "--profile=raytoy",
            "--env=main",
            f"--dataset={tiny_dataset}",
            f"--results={results}",
            "--name=die",
            f"--ray={ray_cluster.address}",
            "-k",
            "test_read",
            "--",
            "--imgbench-process=in-process",  # the node's session itself dies with it
        ],
        {**toy_env, "HOME": str(ray_cluster.root / "home")},
    )
    deadline = time.monotonic() + 240
    killed = False
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            rows = _rows(results)
            if not rows.empty and (rows["node_label"] == "w2").any():
                ray_cluster.kill_node("w2")
                killed = True
                break
            time.sleep(0.2)
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert killed, "w2 never reported a row"
    assert code == 1, out[-4000:]  # failed cases, as for any failed case: not a crash
    rows = _rows(results).set_index("case_id")
    by_node = rows.groupby("node_label")["status"].apply(list).to_dict()
    assert by_node["head"] == ["ok"] * 3 and by_node["w1"] == ["ok"] * 3, by_node
    w2 = rows[rows["node_label"] == "w2"].sort_values("test_id")
    assert list(w2["variant"]) == ["fast7", "slow8", "slow9"]
    assert list(w2["status"]) == ["ok", "failed", "failed"], w2[["status", "reason"]]
    reasons = w2.loc[w2["status"] == "failed", "reason"]
    assert reasons.str.startswith("Ray node w2 (").all(), reasons.tolist()
    assert reasons.str.contains("died during the run").all(), reasons.tolist()
    assert w2["run_id"].nunique() == 1  # the failed rows join the node's own file
    assert "died during the run" in out
    # nothing of the dead node's share keeps running; only the dead node's folder is left (its
    # worker was killed), and the next share on this machine removes it
    time.sleep(1)
    assert left_sessions(str(tmp_path)) == [] and left_sessions("--benchmark-save=die") == []
    from imgbench.cluster import SHARE_PREFIX, remove_dead_shares

    assert len(list(ray_cluster.tmp.glob(SHARE_PREFIX + "*"))) == 1
    remove_dead_shares(ray_cluster.tmp)
    assert list(ray_cluster.tmp.glob(SHARE_PREFIX + "*")) == []


def _rows(results: Path) -> pd.DataFrame:
    if not results.is_dir():
        return pd.DataFrame(columns=["node_label"])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_results(results).frame
