"""How `imgbench run --ray` splits cases and accounts for what a node did not measure (no Ray
needed: the driver's bookkeeping on plain data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbench.cluster import Node, Share, _finish_share, split
from imgbench.profiles import get_profile
from imgbench.results.location import LocalLocation
from imgbench.results.store import load_results, rows_table
from imgbench.sessions import Session


@pytest.mark.parametrize(
    ("n", "parts", "sizes"), [(9, 3, [3, 3, 3]), (7, 3, [3, 2, 2]), (2, 3, [1, 1]), (0, 3, [])]
)
def test_shares_are_contiguous_and_balanced(n: int, parts: int, sizes: list[int]) -> None:
    shares = split(list(range(n)), parts)
    assert [len(s) for s in shares if s] == sizes
    assert [x for s in shares for x in s] == list(range(n))


def _case(i: int) -> dict[str, object]:
    return {
        "test_id": f"benches/bench_readers.py::test_read[c{i}]",
        "case_id": f"read/toy/c{i}",
        "stage": "read",
        "library": "toy",
        "variant": f"c{i}",
        "environment": "main",
    }


def _node() -> Node:
    machine = {
        "machine_id": "m" * 16,
        "hostname": "host",
        "node_label": "w2",
        "ray_node_id": "ab" * 28,
    }
    return Node(node_id="ab" * 28, label="w2", cpus=1.0, machine=machine)


def _session() -> Session:
    return Session("main", None, (Path("benches"),), "die")


def test_a_dead_node_s_unmeasured_cases_join_its_file_as_failed_rows(tmp_path: Path) -> None:
    profile = get_profile("quick")
    done = {**_case(1), "run_id": "R1", "status": "ok", "node_label": "w2"}
    share = Share(
        _node(), [_case(1), _case(2), _case(3)], file_name="R1.parquet", table=rows_table([done])
    )
    share.error = "Ray node w2 (abababab) died during the run: NodeDiedError: gone"
    location = LocalLocation(tmp_path)
    assert _finish_share(share, _session(), profile, "G", location) == 1
    rows = load_results(tmp_path / "R1.parquet").frame.set_index("case_id")
    assert rows["status"].to_dict() == {
        "read/toy/c1": "ok",
        "read/toy/c2": "failed",
        "read/toy/c3": "failed",
    }
    failed = rows[rows["status"] == "failed"]
    assert (failed["reason"] == share.error).all()
    assert (failed["node_label"] == "w2").all() and (failed["run_group"] == "G").all()
    assert (failed["run_id"] == "R1").all() and (failed["dataset_name"] == profile.dataset).all()


def test_a_session_that_fails_before_measuring_names_its_exit(tmp_path: Path) -> None:
    share = Share(
        _node(),
        [_case(1)],
        exit_code=4,
        log_tail="...\nERROR: imgbench: dataset path does not exist: /x\n",
    )
    code = _finish_share(share, _session(), get_profile("quick"), "G", LocalLocation(tmp_path))
    assert code == 4  # a usage error stays a usage error
    (row,) = load_results(tmp_path).frame.to_dict("records")
    assert row["status"] == "failed" and row["run_name"] == "die"
    assert row["reason"] == (
        "the session on Ray node w2 (abababab) exited with code 4: "
        "ERROR: imgbench: dataset path does not exist: /x"
    )


def test_a_finished_share_with_every_row_writes_nothing_more(tmp_path: Path) -> None:
    rows = [{**_case(i), "run_id": "R", "status": "ok"} for i in (1, 2)]
    share = Share(
        _node(), [_case(1), _case(2)], file_name="R.parquet", table=rows_table(rows), exit_code=0
    )
    assert _finish_share(share, _session(), get_profile("quick"), "G", LocalLocation(tmp_path)) == 0
    assert list(tmp_path.iterdir()) == []


def test_an_address_where_nothing_listens_is_one_line_at_once(tmp_path: Path) -> None:
    import socket
    import time

    from typer.testing import CliRunner

    from imgbench.cli import app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app,
        ["run", "--profile=quick", f"--results={tmp_path}", f"--ray=127.0.0.1:{port}"],
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        f"error: cannot reach the Ray cluster at 127.0.0.1:{port}: nothing answers at "
        f"127.0.0.1:{port} (Connection refused)"
    ]
    assert time.monotonic() - start < 30
