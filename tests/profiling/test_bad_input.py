"""Bad input gets one clear line; a failing configuration is a failed row and the sweep goes on;
nothing measured is lost and no process is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

import imgbench
from imgbench.profiling.result import ProfileResult
from imgbench.profiling.target import TargetError, build_target, parse_kwargs
from tests.profiling.conftest import (
    PIPELINES,
    children_left,
    children_now,
    extra,
    invoke_profile,
    read_rows,
)
from tests.profiling.pipelines import faulty


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            f"{PIPELINES}.does_not_import:make_dataset",
            f"module '{PIPELINES}.does_not_import' does not import: ModuleNotFoundError: "
            "No module named 'imgbench_no_such_module_xyz'",
        ),
        (
            f"{PIPELINES}.faulty:broken_factory",
            f"factory {PIPELINES}.faulty:broken_factory raised FileNotFoundError: "
            "no images under /nowhere",
        ),
    ],
)
def test_a_bad_target_is_one_line(target: str, expected: str, tmp_path: Path) -> None:
    """The command's one line and exit code (through the typer app here: a fresh process's
    stderr and exit 2 are test_tf_data.py::test_main_environment_says_to_pass_env_tensorflow's)."""
    done = invoke_profile([target], tmp_path / "results")
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and expected in " ".join(lines), done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("target", "kwargs", "expected"),
    [
        (f"{PIPELINES}.faulty:no_such_factory", [], f"module '{PIPELINES}.faulty' has no"),
        (
            f"{PIPELINES}.faulty:not_a_dataset",
            [],
            f"factory {PIPELINES}.faulty:not_a_dataset returned int, not a torch Dataset",
        ),
        (
            f"{PIPELINES}.faulty:broken_factory",
            ["root=/x", "nope=1"],
            "raised TypeError: broken_factory() got an unexpected keyword argument 'nope'",
        ),
        ("no_colon_here", [], "'no_colon_here': expected MODULE:FACTORY"),
        (f"{PIPELINES}.faulty:raises_on_3", ["=1"], "--kw '=1': expected key=value"),
    ],
)
def test_what_a_bad_target_says(target: str, kwargs: list[str], expected: str) -> None:
    """The same one line, for the other ways a target goes wrong (the CLI prints it as above)."""
    with pytest.raises(TargetError) as caught:
        build_target(target, parse_kwargs(kwargs))
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_kw_values_are_python_literals_or_text() -> None:
    parsed = parse_kwargs(["size=224", "mean=(0.5, 0.4)", "root=/data/x", "flag=True", "s='a=b'"])
    assert parsed == {"size": 224, "mean": (0.5, 0.4), "root": "/data/x", "flag": True, "s": "a=b"}


def _profile(source: object, results: Path, batch_timeout_s: float = 3) -> ProfileResult:
    before = children_now()
    result = imgbench.profile(
        source,
        workers=[0, 1],
        batch_size=2,
        seconds=0.5,
        au_seconds=0.2,
        sample_seconds=0,
        batch_timeout_s=batch_timeout_s,
        first_batch_timeout_s=10,
        results=results,
    )
    assert isinstance(result, ProfileResult)
    assert children_left(before) == []  # workers and samplers all gone
    return result


def test_a_sample_that_raises_is_a_failed_row_with_its_index(tmp_path: Path) -> None:
    result = _profile(faulty.raises_on_3(), tmp_path)
    rows = read_rows(tmp_path)
    assert list(rows["workers"]) == [0, 1] and set(rows["status"]) == {"failed"}
    for _, row in rows.iterrows():
        assert "dataset[3] raised ValueError: cannot read sample 3" in row["reason"]
        assert extra(row)["failed_index"] == 3
    assert f"({1} workers)" in rows.iloc[1]["reason"]  # the worker's error, with the count
    assert result.fewest_workers_at_au is None


def test_a_hung_worker_fails_its_configuration_and_the_sweep_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 1 s batch deadline (3 s for the other faults), and torch's join of the stuck worker
    # before it terminates it 1 s (its MP_STATUS_CHECK_INTERVAL, 5 s; as tests/loaders/faults.py
    # sets it): the same shutdown path, 6 s less idle waiting
    import torch.utils.data._utils as torch_data_utils

    monkeypatch.setattr(torch_data_utils, "MP_STATUS_CHECK_INTERVAL", 1.0)
    _profile(faulty.hangs_in_workers(), tmp_path, batch_timeout_s=1)
    rows = read_rows(tmp_path)
    assert list(rows["status"]) == ["ok", "failed"]  # the main process does not hang
    assert rows.iloc[0]["images_per_s_median"] > 0  # measured before the hang: kept
    assert "timed out after 1" in rows.iloc[1]["reason"]
    assert extra(rows.iloc[1])["workers_left_after_reap"] == []


def test_a_worker_that_dies_fails_its_configuration(tmp_path: Path) -> None:
    _profile(faulty.dies_in_workers(), tmp_path)
    rows = read_rows(tmp_path)
    assert list(rows["status"]) == ["ok", "failed"]
    assert "exited unexpectedly" in rows.iloc[1]["reason"]
