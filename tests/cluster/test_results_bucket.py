"""Results in a real S3 bucket (SeaweedFS on 127.0.0.1), without Ray: a pytest session writes
its file there after every case, `imgbench results` and `imgbench compare` read it back, and a
bad location (unreachable endpoint, wrong credentials, missing bucket) is one line naming which."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.objectstore.server import S3Endpoint
from imgbench.results.location import ResultsLocationError, results_location
from imgbench.results.store import load_results
from tests.cluster.conftest import aws_env
from tests.conftest import run_pytest

BENCHES = Path(__file__).resolve().parents[2] / "benches"
runner = CliRunner(env={"COLUMNS": "250"})


@pytest.fixture
def aws(s3: S3Endpoint, monkeypatch: pytest.MonkeyPatch) -> S3Endpoint:
    for key, value in aws_env(s3).items():
        monkeypatch.setenv(key, value)
    return s3


def test_a_session_writes_its_rows_into_the_bucket_and_compare_reads_them(
    aws: S3Endpoint, tiny_dataset: Path, tmp_path: Path
) -> None:
    prefix = f"s3://{aws.bucket}/solo"
    proc = run_pytest(
        [
            str(BENCHES / "bench_readers.py"),
            f"--dataset={tiny_dataset}",
            "--imgbench-profile=quick",
            "--imgbench-rounds=2",
            "--imgbench-process=in-process",  # the rows' way to the bucket, not the worker's
            f"--imgbench-results={prefix}",
            "-k",
            "pillow and jpeg-memory",
        ],
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"imgbench results (1 ok): {prefix}/" in proc.stdout
    loaded = load_results(prefix)
    assert len(loaded.frame) == 1 and loaded.frame["status"].tolist() == ["ok"]
    run_id = loaded.frame["run_id"].iloc[0]

    shown = runner.invoke(app, ["results", "show", run_id[:18], "--results", prefix])
    assert shown.exit_code == 0 and "pillow" in shown.output, shown.output
    itself = runner.invoke(app, ["compare", prefix, f"{prefix}/{run_id}.parquet"])
    assert itself.exit_code == 0 and "OK: 0 regressed" in itself.output, itself.output
    by_id = runner.invoke(app, ["compare", run_id, run_id, "--results", prefix])
    assert by_id.exit_code == 0, by_id.output


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("override", "bucket", "expected"),
    [
        ({"AWS_ENDPOINT_URL": "http://127.0.0.1:{port}"}, None, "cannot reach the S3 endpoint"),
        ({"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, None, "refused the credentials"),
        ({"AWS_ACCESS_KEY_ID": "nobody"}, None, "refused the credentials"),
        ({}, "no-such-bucket", "bucket 'no-such-bucket' does not exist"),
    ],
    ids=["unreachable", "wrong-secret", "unknown-key", "missing-bucket"],
)
def test_a_bad_results_location_is_one_line_naming_which(
    s3: S3Endpoint,
    monkeypatch: pytest.MonkeyPatch,
    override: dict[str, str],
    bucket: str | None,
    expected: str,
    tiny_dataset: Path,
) -> None:
    env = aws_env(s3, **{k: v.format(port=_closed_port()) for k, v in override.items()})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    url = f"s3://{bucket or s3.bucket}/team"
    with pytest.raises(ResultsLocationError, match=expected):
        results_location(url).check()
    for args in (
        ["results", "list", url],
        ["run", "--profile=quick", f"--dataset={tiny_dataset}", f"--results={url}"],
        ["compare", url, url],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and expected in lines[0], (args, result.output)
        assert url in lines[0]


def test_the_dashboard_names_an_unreadable_bucket(
    s3: S3Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.data import load, signature

    for key, value in aws_env(s3, AWS_SECRET_ACCESS_KEY="wrong").items():
        monkeypatch.setenv(key, value)
    url = f"s3://{s3.bucket}/team"
    results = load(url)
    assert results.empty and results.error is not None
    assert "refused the credentials" in results.error
    assert signature(url)[0][0].startswith("error: ")
