"""torchcodec, nvImageCodec (one image and a batch per call) and ajpegli on real files.

The contract tests (test_reader_contract.py) cover their pixels; here: the batched workload
the engine times, and bad files (truncated, zero bytes, a PNG named .jpg) read from disk in a
child process, so a decoder that crashed on one would fail this test rather than end pytest.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from imgbench.controls import case_context
from imgbench.measure.case import Case
from imgbench.profiles import get_profile
from imgbench.readers.cases import reader_cases
from imgbench.readers.registry import READERS
from tests.readers.images import PHOTOS, photo, photo_bytes

NEW = [s for s in READERS if s.library in {"torchcodec", "nvimgcodec", "ajpegli"}]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three photos as JPEG, and the three bad files of the issue."""
    root = tmp_path_factory.mktemp("new-decoders")
    for name in PHOTOS:
        (root / f"{name}.jpg").write_bytes(photo_bytes(name, "jpeg"))
    jpeg = photo_bytes("coffee", "jpeg")
    (root / "bad_truncated.jpg").write_bytes(jpeg[: len(jpeg) // 2])
    (root / "bad_zero.jpg").write_bytes(b"")
    (root / "bad_png_named.jpg").write_bytes(photo_bytes("chelsea", "png"))
    return root


def _batched_case(**params: object) -> Case:
    for case in reader_cases(get_profile("default")):
        if case.variant == "cpu-batched" and all(
            case.params.get(k) == v for k, v in params.items()
        ):
            return case
    raise LookupError(params)


def test_default_profile_runs_the_new_readers() -> None:
    cases = [c for c in reader_cases(get_profile("default")) if c.stage == "read"]
    keys = {f"{c.library}/{c.variant}" for c in cases}
    assert {s.key for s in NEW} <= keys
    batched = {
        (c.params["codec"], c.threads, c.params["mode"]) for c in cases if "batch_size" in c.params
    }
    # memory only, the library's own pool and one thread, every codec of the plan
    assert batched == {(k, t, "memory") for k in ("jpeg", "png", "webp") for t in (1, None)}
    assert {c.params["batch_size"] for c in cases if "batch_size" in c.params} == {32}


def test_batched_workload_times_full_batches_of_verified_images(folder: Path) -> None:
    case = _batched_case(codec="jpeg", threads=1)
    if case.unmet_requirement():
        pytest.skip(case.unmet_requirement())
    from imgbench.datasets.scan import scan

    dataset = types.SimpleNamespace(name=folder.name, manifest=scan(folder, use_cache=False))
    ctx = case_context(dataset, get_profile("default"), max_images=16)
    case = dataclasses.replace(case, params={**case.params, "batch_size": 2})
    work = case.prepare(ctx, case)
    names = [e.path for e in ctx.entries("jpeg")]  # the sample's order
    # 3 images in lists of 2: the last list is filled up from the start
    assert work.images_per_item == 2 and work.images_per_round == 4
    assert [len(batch) for batch in work.items] == [2, 2]
    order = [names[0], names[1], names[2], names[0]]
    assert work.items[1][1] == work.items[0][0]
    assert work.bytes_per_round == sum((folder / n).stat().st_size for n in order)
    pixels = {f"{n}.jpg": photo(n).shape[0] * photo(n).shape[1] for n in PHOTOS}
    assert work.megapixels_per_round == pytest.approx(sum(pixels[n] for n in order) / 1e6)
    assert work.extra["call"] == "decode_batch(list of 2 bytes)"
    assert work.extra["excluded_images"] == []
    outputs = work.fn(work.items[0])
    single = [work.fn([data])[0] for data in work.items[0]]
    for out, one in zip(outputs, single, strict=True):
        assert out.dtype == np.uint8 and out.flags.c_contiguous and out.shape[2] == 3
        assert np.array_equal(out, one)
    json.dumps(work.extra)


def test_batched_error_names_the_item_of_the_batch() -> None:
    pytest.importorskip("nvidia.nvimgcodec")
    from imgbench.readers.libs.nvimgcodec import NvimgcodecBatched

    reader = NvimgcodecBatched(threads=1)
    jpeg = photo_bytes("coffee", "jpeg")
    with pytest.raises(ValueError, match="item 1 of the batch: empty input"):
        reader.decode_batch([jpeg, b""])
    with pytest.raises(ValueError, match="item 0 of the batch: its jpeg decoder failed"):
        reader.decode_batch([jpeg[: len(jpeg) // 2]])
    with pytest.raises(ValueError, match="cannot parse it"):
        reader.decode(b"this is not an image")


_CHILD = """
import json, sys
from pathlib import Path
from imgbench.readers.registry import build_reader, find_spec
from imgbench.readers.verify import verify_item

folder, keys = Path(sys.argv[1]), sys.argv[2:]
out = {}
for key in keys:
    reader = build_reader(find_spec(*key.split("/")), threads=1)
    for path in sorted(folder.glob("bad_*.jpg")):
        data = path.read_bytes()
        v = verify_item(reader.read, str(path), path=path.name, data=data, key=path.name, codec="jpeg")
        try:
            reader.decode(data)
            raised = ""
        except Exception as exc:
            raised = f"{type(exc).__name__}: {exc}"
        out[f"{key} {path.name}"] = [v.ok, v.path, v.detail, raised]
print(json.dumps(out))
"""


def test_bad_files_are_named_errors_and_crash_nothing(folder: Path) -> None:
    keys = [s.key for s in NEW if s.unmet_requirement() is None]
    if not keys:
        pytest.skip("none of torchcodec, nvimgcodec, ajpegli is installed")
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, str(folder), *keys],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, f"the child died ({run.returncode}): {run.stderr[-2000:]}"
    results = json.loads(run.stdout.splitlines()[-1])
    for key in keys:
        jpeg_only = key in {"torchcodec/decode-jpeg", "ajpegli/imdecode"}
        for bad in ("bad_truncated.jpg", "bad_zero.jpg", "bad_png_named.jpg"):
            ok, path, detail, raised = results[f"{key} {bad}"]
            if bad == "bad_png_named.jpg" and not jpeg_only:
                # decoders that sniff the format decode the PNG, and its pixels are right
                assert ok and not raised, (key, detail, raised)
                continue
            assert not ok and path == bad and detail, (key, bad, detail)
            if (key, bad) == ("ajpegli/imdecode", "bad_truncated.jpg"):
                # jpegli returns the decodable rows; verification flags the file
                assert "reference decode failed" in detail, detail
                continue
            assert raised.split(": ", 1)[1].strip(), (key, bad, raised)
