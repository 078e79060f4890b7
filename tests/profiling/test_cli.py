"""`imgbench profile` end to end on the shipped example pipelines: the Pillow one in a fresh
process as a user types it, the others through the same typer command in the test process (a
fresh interpreter's imports cost 3-5 s each)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from imgbench.cli import app
from tests.profiling.conftest import (
    PIPELINES,
    QUICK,
    children_left,
    children_now,
    extra,
    invoke_profile,
    processes_mentioning,
    read_rows,
    run_profile,
)


def test_imagefolder_pillow_torchvision_example(photos: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = run_profile(
        [
            f"{PIPELINES}.folder_pillow:make_dataset",
            *("--kw", f"root={photos}", "--workers", "0,1", "--batch-size", "8"),
            # no readers' comparison: when the sampled decode share led (0.49 against augment
            # 0.41 seen) it timed 18 readers on 16 files, 4.5 CPU s, and nothing here reads it
            *("--step-ms", "50", "--no-readers", *QUICK),
            *("--sample-seconds", "2"),  # not QUICK's 1: more samples for the shares below
        ],
        results,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    out = done.stdout
    assert "imgbench profile" in out and "where the time goes" in out and "advice:" in out
    assert "AU @ 50 ms" in out
    rows = read_rows(results)
    assert list(rows["stage"]) == ["profile", "profile"]
    assert list(rows["workers"]) == [0, 1]
    assert set(rows["status"]) == {"ok"}
    assert (rows["images_per_s_median"] > 0).all()
    assert (rows["batch_size"] == 8).all()
    for _, row in rows.iterrows():
        x = extra(row)
        assert x["time_to_first_batch_s"] > 0
        assert 0 < x["au"] <= 1.01 and x["step_ms"] == 50
        assert x["peak_pss_bytes"] > 0 and x["memory_timeline"]
        assert abs(sum(x["attribution"].values()) - 1) < 0.01
        assert x["attribution_samples"] > 20
        # a Pillow decode + torchvision transforms pipeline: those two outweigh every other part
        # (how the shares follow the work: test_api.py, test_bounds.py; here, in a full make test
        # of a fresh clone, collate read 0.38-0.41 of one configuration, decode + augment 0.48-0.50)
        shares = x["attribution"]
        others = [v for k, v in shares.items() if k not in ("decode", "augment")]
        assert shares["decode"] + shares["augment"] > max(others), (row["workers"], shares)
        assert x["workers_alive_after_close"] == []
    assert "worker-0" in extra(rows.iloc[1])["final_uss_bytes"]
    flame = Path(out.split("flame graph: ")[1].split()[0])
    doc = json.loads(flame.read_text())
    assert doc["shared"]["frames"] and {p["name"].split(" · ")[0] for p in doc["profiles"]} == {
        "workers=0",
        "workers=1",
    }
    assert any(
        "ImageFile.load" in f["name"] or "convert" in f["name"] for f in doc["shared"]["frames"]
    )
    assert not processes_mentioning(str(tmp_path))
    shown = CliRunner().invoke(app, ["results", "show", str(next(results.glob("*.parquet")))])
    assert shown.exit_code == 0 and "profile/" in shown.output
    assert "nan" not in shown.output  # null columns of profile rows print as blanks


STEP = f"{PIPELINES}.tiny_step:train_step"


def test_opencv_albumentations_example_with_a_python_list_index(
    photos: Path, tmp_path: Path
) -> None:
    """The user's own DataLoader (1 worker) is one of the rows, and the advice names the list.
    Its AU phase feeds the user's own training step (``--step``): the step's rate and AU are
    reported (was test_step.py's own profile of the Pillow example)."""
    results = tmp_path / "results"
    before = children_now()
    done = invoke_profile(
        [
            f"{PIPELINES}.cv2_albumentations:make_loader",
            *("--kw", f"root={photos}", "--kw", "workers=1", "--kw", "padding=20000"),
            *("--workers", "0", "--no-readers", "--step", STEP, *QUICK),
        ],
        results,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    rows = read_rows(results)
    assert list(rows["workers"]) == [0, 1]  # asked for 0; the loader's own 1 is added
    own = [extra(row)["user_setting"] for _, row in rows.iterrows()]
    assert own == [False, True]
    assert "1 (yours)" in done.stdout
    shares = extra(rows.iloc[0])["attribution"]
    assert shares["decode"] + shares["augment"] > 0.5, shares
    assert extra(rows.iloc[0])["decode_libraries"].get("cv2", 0) > 0
    assert "`paths` (20,024 entries)" in done.stdout  # the copy-on-access advice names it
    assert "keep indexes in NumPy arrays" in done.stdout
    assert not processes_mentioning(str(tmp_path)) and children_left(before) == []
    _assert_the_step_is_reported(done.stdout, rows)


def _assert_the_step_is_reported(out: str, rows: pd.DataFrame) -> None:
    """`--step`: the user's step consumed each configuration's batches in the AU phase."""
    assert "AU @ your step" in out
    assert f"your step {STEP} at 0 workers:" in out and "on a cached batch (CPU)" in out
    assert "such steps 90% busy" in out
    for _, row in rows.iterrows():
        x = extra(row)
        assert row["status"] == "ok"
        assert x["step"] == STEP and x["compute_kind"] == f"user step {STEP}"
        assert x["step_images_per_s_cached"] > 0 and x["step_cuda"] is False
        assert 0 < x["au"] <= 1.01 and x["au_batches"] >= 2
        assert x["gpus_kept_at_90"] > 0
        assert x["batch_parts"][0]["shape"] == [8, 3, 96, 96]


USER_MODULE = """
from pathlib import Path

import numpy as np
from PIL import Image


class Photos:
    def __init__(self, folder):
        self.files = np.array(sorted(str(p) for p in Path(folder).rglob("*.jpg")))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        image = Image.open(self.files[i]).convert("RGB").resize((64, 64))
        return np.asarray(image).transpose(2, 0, 1).copy()
"""


def test_a_module_imgbench_has_never_seen(photos: Path, tmp_path: Path) -> None:
    """Only an import path (a file in the current folder, which `imgbench profile` puts on
    sys.path: the installed `imgbench` script's folder is not the current one) and a folder of
    images."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_pipeline.py").write_text(USER_MODULE)
    before = children_now()
    done = invoke_profile(
        [
            "my_pipeline:Photos",
            *("--kw", f"folder={photos}", "--workers", "0", "--no-readers", *QUICK),
        ],
        tmp_path / "results",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    (row,) = [r for _, r in read_rows(tmp_path / "results").iterrows()]
    assert row["status"] == "ok" and row["variant"] == "my_pipeline:Photos"
    assert row["dataset_name"] == "Photos" and row["dataset_images"] == 24
    assert extra(row)["attribution"]["decode"] > 0.2  # Image.open(...).convert() on its line
    assert children_left(before) == []
