"""Adding a library is one adapter plus one registry entry, and a profile needs no code.

A temporary package registers a toy reader, transform, format and loader through the
``imgbench.<stage>`` entry points (a ``.dist-info`` folder on PYTHONPATH, as an installed package
has), a temporary pyproject.toml declares a profile that selects only them, and
``imgbench run --profile toy`` collects, verifies and measures them in real pytest sessions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from imgbench.profiles import ProfileError, get_profile
from tests.conftest import installed_package

ROOT = Path(__file__).resolve().parents[1]

ADAPTERS = '''
"""A toy library for every stage: each is one adapter and one registry entry."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np
from PIL import Image

from imgbench.augment.base import Op
from imgbench.augment.registry import AugmentLibrary
from imgbench.augment.spec import Row
from imgbench.formats.base import BaseReader, FormatSpec, check_index
from imgbench.loaders.registry import LoaderSpec
from imgbench.readers.base import BytesReader, ReaderSpec


class ToyReader(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        with Image.open(io.BytesIO(data)) as image:
            return np.ascontiguousarray(np.asarray(image.convert("RGB")))


READER = ReaderSpec(
    library="toyreader", variant="pil", adapter=__name__ + ":ToyReader", requires=("PIL",)
)


def transforms(input_kind):
    return {"hflip": lambda: Op(fn=lambda im: np.ascontiguousarray(im[:, ::-1]), input="hwc-uint8")}


def pipelines(input_kind):
    return {}


AUGMENT = AugmentLibrary(
    library="toyaug",
    variant="numpy",
    module=__name__,
    input="hwc-uint8",
    pipeline_input="hwc-uint8",
    rows=(Row("hflip", "toyaug", "arr[:, ::-1]"),),
    pipeline_names=(),
)


def write(out, records, plan):
    with open(Path(out) / "blobs.pkl", "wb") as handle:
        pickle.dump([(r.payload, r.label) for r in records], handle)


class Reader(BaseReader):
    def __init__(self, path, meta):
        super().__init__(path, meta)
        with open(self.path / "blobs.pkl", "rb") as handle:
            self._items = pickle.load(handle)

    def __len__(self):
        return len(self._items)

    def __getitem__(self, index):
        return self._items[check_index(index, len(self._items))]


FORMAT = FormatSpec(name="toy-blobs", library="toyformat", variant="pickle-list", module=__name__)


class ToyLoader:
    """Batches in the main process, one after another."""

    def __init__(self, pipeline, params):
        from imgbench.loaders.pipeline import collate_for

        self.pipeline, self.batch_size = pipeline, int(params["batch_size"])
        self.collate = collate_for(pipeline.config)

    def batches(self):
        from imgbench.loaders.libs.threads import endless_batches

        self.pipeline.build()
        for indices in endless_batches(len(self.pipeline), self.batch_size):
            yield self.collate([self.pipeline[i] for i in indices])

    def worker_pids(self):
        return []

    def close(self):
        pass


def build(pipeline, params):
    return ToyLoader(pipeline, params)


LOADER = LoaderSpec(
    library="toyloader",
    module=__name__,
    requires=("torch",),
    processes=False,
    workers=(0,),
    pipelines=("pillow-pil",),
)
'''

ENTRY_POINTS = """
[imgbench.read]
toy = toy_imgbench:READER
[imgbench.augment]
toy = toy_imgbench:AUGMENT
[imgbench.format]
toy = toy_imgbench:FORMAT
[imgbench.loader]
toy = toy_imgbench:LOADER
"""

PROFILE = """
[tool.imgbench.profiles.toy]
base = "quick"
description = "only the toy libraries"
rounds = 2
warmup_rounds = 1
max_images = 8

[tool.imgbench.profiles.toy.read]
libraries = ["toyreader"]
codecs = ["jpeg"]

[tool.imgbench.profiles.toy.augment]
libraries = ["toyaug"]
transforms = ["hflip"]
pipelines = []

[tool.imgbench.profiles.toy.format]
libraries = ["toy-blobs"]
raw_ceiling = false

[tool.imgbench.profiles.toy.loader]
libraries = ["toyloader"]

# no head-to-head final after the session (quick holds one): nothing here reads its rows, and
# tests/final/ checks it
[tool.imgbench.profiles.toy.final]
blocks = 0
"""


def _toy_site(root: Path) -> Path:
    return installed_package(root, "toy_imgbench", ADAPTERS, ENTRY_POINTS)


def test_toy_libraries_of_every_stage_are_collected_verified_and_run(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    site = _toy_site(tmp_path)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(PROFILE)
    results = tmp_path / "results"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "IMGBENCH_PYPROJECT": str(pyproject),
    }
    run = subprocess.run(
        [
            str(Path(sys.executable).with_name("imgbench")),
            "run",
            "--profile=toy",
            "--no-envs",
            f"--dataset={tiny_dataset}",
            f"--results={results}",
            "--name=toy",
            "--",
            "--imgbench-process=in-process",  # correctness: no worker server to start and fork
            # no torchvision, kornia or albumentations (tests/extending_blocks.py): the toy's
            # hflip is verified against Pillow's, and the toy loader's pipeline is Pillow's
            "-p",
            "tests.extending_blocks",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = pd.concat(pd.read_parquet(p) for p in results.glob("*.parquet"))
    assert set(rows["library"]) == {"toyreader", "toyaug", "toyformat", "toyloader"}, rows[
        ["library", "status", "reason"]
    ]
    assert (rows["status"] == "ok").all(), rows.loc[rows["status"] != "ok", ["case_id", "reason"]]
    extra = {
        (r.stage, r.library, r.mode if isinstance(r.mode, str) else None): json.loads(r.extra_json)
        for r in rows.itertuples()
    }
    reader = extra[("read", "toyreader", "memory")]
    assert reader["verified_images"] == 8 and reader["excluded_images"] == []
    assert extra[("augment", "toyaug", None)]["agreement"] == "pass"
    # compared with a reference library's pixels, not only shape-checked
    assert extra[("augment", "toyaug", None)]["agreement_reference"] == "pillow/pil"
    # the session's sample: max_images (8), grown to all 10 images (no 8 have the folder's means)
    read = rows[(rows["stage"] == "format") & (rows["mode"] == "read")].iloc[0]
    assert extra[("format", "toyformat", "read")]["records"] == read["sample_images"] == 10
    assert read["sample_mean_bytes"] == pytest.approx(read["dataset_mean_bytes"])
    assert set(rows.loc[rows["stage"] == "format", "mode"]) == {"write", "read"}
    loader = rows[rows["library"] == "toyloader"].iloc[0]
    assert loader["images_per_s_median"] > 0 and loader["workers"] == 0


def test_a_broken_registry_entry_is_listed_not_fatal(tmp_path: Path) -> None:
    site = _toy_site(tmp_path)
    (site / "toy_imgbench-0.1.dist-info" / "entry_points.txt").write_text(
        "[imgbench.read]\nbad = toy_imgbench:NOPE\nwrong = toy_imgbench:FORMAT\n"
    )
    code = (
        "import warnings\n"
        "from imgbench.stages import get_stage\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    specs = get_stage('read').specs()\n"
        "print(len(specs), len(caught))\n"
        "for library, reason in get_stage('read').unavailable_libraries()[-2:]:\n"
        "    print(library, '|', reason)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert int(lines[0].split()[1]) == 2  # two warnings, and the stage still lists its readers
    assert "bad = toy_imgbench:NOPE" in lines[1] and "does not load" in lines[1]
    assert "expected a ReaderSpec, got FormatSpec" in lines[2]


def test_profile_from_pyproject_overrides_its_base(tmp_path: Path) -> None:
    from imgbench.loaders.plan import LoaderPlan
    from imgbench.readers.plan import ReadPlan

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        "[tool.imgbench.profiles.mine]\nbase = 'quick'\nrounds = 3\n"
        "[tool.imgbench.profiles.mine.read]\ncodecs = ['jpeg']\n"
        "[tool.imgbench.profiles.mine.loader]\nworker_sweep = [0, 1]\n"
        "[tool.imgbench.profiles.quick]\nrounds = 4\n"
    )
    mine = get_profile("mine", pyproject)
    assert mine.name == "mine" and mine.settings["rounds"] == 3
    assert mine.dataset == "synthetic-small"
    assert mine.plan(ReadPlan).codecs == ("jpeg",)
    assert mine.plan(ReadPlan).libraries == "quick"  # the rest of the base's plan stays
    assert mine.plan(LoaderPlan).workers() == (0, 1)
    assert get_profile("quick", pyproject).settings["rounds"] == 4  # a table amends a built-in
    assert get_profile("default", pyproject).settings["rounds"] == 10


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[tool.imgbench.profiles.x]\nrounds = 'many'\n", "x].rounds: expected int"),
        ("[tool.imgbench.profiles.x]\ncolour = 1\n", "unknown keys ['colour']"),
        ("[tool.imgbench.profiles.x.read]\ncodec = ['jpeg']\n", "unknown setting 'codec'"),
        ("[tool.imgbench.profiles.x]\nbase = 'x'\n", "bases loop"),
        ("[tool.imgbench.profiles.x]\nbase = 'nope'\n", "unknown profile 'nope'"),
        ("[tool.imgbench.profiles.x.format]\ncaches = ['tepid']\n", "'tepid' is not one of"),
    ],
)
def test_a_malformed_profile_is_one_clear_error(tmp_path: Path, table: str, message: str) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(table)
    with pytest.raises(ProfileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        get_profile("x", pyproject)
