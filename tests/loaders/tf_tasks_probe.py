"""Run by the TensorFlow environment's interpreter (tests/loaders/test_tf_tasks.py): tf.data's
first batch on synthetic pairs (segmentation from files and from TFRecord, JPEG and PNG images)
and on a PNG classification pool, Keras's on crop-ocr (inline, threads, processes) and on
segmentation (processes on JPEG pairs, threads on PNG pairs, colour masks), checked
as the loader stage checks it.

A pytest plugin of the tensorflow environment's bench session (``-p tests.loaders.tf_tasks_probe``,
tests/loaders/conftest.py): once the session's cases are done, the probe runs in the same
interpreter (one TensorFlow start instead of two) and writes its JSON to the file named by
``$IMGBENCH_TEST_TF_PROBE``. ``python -m tests.loaders.tf_tasks_probe WORKDIR`` prints it instead.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from imgbench.augment.tasks import COLOURS, OCR_HEADS
from imgbench.datasets import pairs
from imgbench.datasets.pairs_synth import generate_pairs
from imgbench.loaders.checks import check_batch, expectation
from imgbench.loaders.libs import keras, tfdata
from imgbench.loaders.pipeline import FileSource, HeadsSource, PairSource, SamplePipeline
from imgbench.loaders.registry import pipeline_config

BATCH = 4
OUT_ENV = "IMGBENCH_TEST_TF_PROBE"


def first_batch(source: Any, name: str) -> dict[str, Any]:
    config = pipeline_config(name)
    try:
        loader = tfdata.build(SamplePipeline(source, config), {"batch_size": BATCH, "workers": 0})
    except Exception as exc:  # the row's reason
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}
    try:
        images, targets, _, _ = next(iter(loader.batches()))
        problem = check_batch((images, targets, None, None), expectation(config, BATCH, None))
        return {
            "check": problem or "pass",
            "images": [list(images.shape), images.dtype.name],
            "targets": [list(targets.shape), targets.dtype.name],
            "classes": sorted({int(v) for v in np.unique(targets.numpy())}),
            "all_jpeg": loader.all_jpeg,
            "stage_times": sorted(loader.stage_times),
        }
    except Exception as exc:  # the row's reason: one line
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
    finally:
        loader.close()


def keras_first_batch(
    source: Any, workers: int, method: str | None, name: str = "pillow-crop-ocr"
) -> dict[str, Any]:
    config = pipeline_config(name)
    params = {"batch_size": BATCH, "workers": workers, "method": method}
    loader = keras.build(SamplePipeline(source, config), params)
    try:
        images, heads, _, _ = next(iter(loader.batches()))
        expect = expectation(config, BATCH, None)
        if config.task == "crop-ocr":
            expect = type(expect)(**{**expect.__dict__, "classes": source.classes})
        return {
            "check": check_batch((images, heads, None, None), expect) or "pass",
            "images": [list(images.shape), images.dtype.name],
            "targets": [list(heads.shape), heads.dtype.name],
            "pool": [loader.dataset.workers, loader.dataset.use_multiprocessing],
            "pids": len(loader.worker_pids()),
            "classes": sorted({int(v) for v in np.unique(heads)}),
        }
    finally:
        loader.close()


def roi_decode(jpegs: list[str], draws: int) -> dict[str, Any]:
    """tf.data's as-documented decode (``decode_and_crop_jpeg``): a forced window against
    ``decode_jpeg`` then the same slice, and the windows ``sample_distorted_bounding_box`` draws
    from the JPEG header over ``draws`` passes (area fraction, aspect, image size)."""
    import tensorflow as tf

    diffs = []
    for path in jpegs:
        data = tf.io.read_file(path)
        window = tf.constant([24, 16, 120, 150])  # y, x, h, w: inside every photo
        roi = tf.image.decode_and_crop_jpeg(data, window, channels=3).numpy()
        whole = tf.io.decode_jpeg(data, channels=3).numpy()[24:144, 16:166]
        diffs.append([float(np.abs(roi.astype(int) - whole.astype(int)).mean()), list(roi.shape)])
    windows = []
    for _ in range(draws):
        for path in jpegs:
            data = tf.io.read_file(path)
            shape = tf.image.extract_jpeg_shape(data)
            _, size = tfdata._window_of(tf, shape)
            height, width = (int(v) for v in shape.numpy()[:2])
            h, w = (int(v) for v in size.numpy()[:2])
            windows.append([h * w / (height * width), w / h, width, height])
    source = FileSource(jpegs, [i % 2 for i in range(len(jpegs))])
    config = pipeline_config("tensorflow")
    params = {"batch_size": BATCH, "workers": 0, **tfdata.DOCUMENTED.params}
    loader = tfdata.build(SamplePipeline(source, config), params)
    try:
        images, targets, _, _ = next(iter(loader.batches()))
        check = check_batch((images, targets, None, None), expectation(config, BATCH, None))
        op = loader.extra["image_decode_op"]
    finally:
        loader.close()
    return {"forced": diffs, "windows": windows, "check": check or "pass", "op": op}


def bad_roi(work: Path, jpegs: list[str]) -> dict[str, Any]:
    """The as-documented decode over a truncated JPEG and a zero-byte .jpg: the error."""
    import shutil

    bad = work / "roi-bad"
    bad.mkdir()
    paths = []
    for i, path in enumerate(jpegs[:4]):
        paths.append(str(bad / f"{i}.jpg"))
        shutil.copyfile(path, paths[-1])
    data = Path(jpegs[0]).read_bytes()
    (bad / "truncated.jpg").write_bytes(data[: len(data) // 3])
    (bad / "empty.jpg").write_bytes(b"")
    out = {}
    for name in ("truncated.jpg", "empty.jpg"):
        source = FileSource([*paths, str(bad / name)], [0, 1, 0, 1, 0])
        params = {"batch_size": 5, "workers": 0, **tfdata.DOCUMENTED.params}
        try:
            loader = tfdata.build(SamplePipeline(source, pipeline_config("tensorflow")), params)
            try:
                next(iter(loader.batches()))
                out[name] = "no error"
            finally:
                loader.close()
        except Exception as exc:
            out[name] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"
    return out


def pair_source(root: Path) -> PairSource:
    layout = pairs.detect(root)
    assert layout is not None
    return PairSource(
        [str(root / i) for i, _ in layout.pairs], [str(root / m) for _, m in layout.pairs]
    )


def probe(work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, masks in (("jpeg", "palette"), ("png", "rgb")):
        root = work / f"pairs-{kind}"
        generate_pairs(root, 6, size=(160, 120), codec=kind, masks=masks)
        out[f"files-{kind}"] = first_batch(pair_source(root), "tensorflow-segmentation")
        out[f"tfrecord-{kind}"] = first_batch(pair_source(root), "tensorflow-segmentation-tfrecord")
    root = work / "pairs-png"
    pngs = sorted(str(p) for p in (root / "images").glob("*.png"))
    out["classification-png"] = first_batch(FileSource(pngs, [0, 1] * 3), "tensorflow")
    jpegs = sorted(str(p) for p in (work / "pairs-jpeg" / "images").glob("*.jpg"))
    disguised = work / "png-named.jpg"  # a PNG named .jpg among JPEGs: decode_image reads it
    disguised.write_bytes(Path(pngs[0]).read_bytes())
    mixed = FileSource([*jpegs[:3], str(disguised)], [0, 1, 0, 1])
    out["png-named-jpg"] = first_batch(mixed, "tensorflow")
    bad = work / "pairs-bad"
    generate_pairs(bad, 4, size=(160, 120))
    first = sorted((bad / "masks").glob("*.png"))[0]
    colours = np.zeros((120, 160, 3), np.uint8)
    colours[:] = (1, 2, 3)  # not in the colour table
    assert (1, 2, 3) not in COLOURS
    Image.fromarray(colours).save(first)
    out["bad-colour"] = first_batch(pair_source(bad), "tensorflow-segmentation")
    photos = os.environ.get("IMGBENCH_TEST_TF_PHOTOS")
    if photos:  # real photos (320x240 and 240x320): the as-documented crop-aware decode
        jpegs = sorted(str(p) for p in Path(photos).rglob("*.jpg"))[:16]
        out["roi"] = roi_decode(jpegs, 24)
        out["roi-bad"] = bad_roi(work, jpegs)
    generate_pairs(work / "ocr", 6, size=(320, 240))  # crop-ocr's box lies in 320x240
    jpegs = sorted(str(p) for p in (work / "ocr" / "images").glob("*.jpg"))
    heads = np.random.default_rng(0).integers(0, 50, (len(jpegs), OCR_HEADS))
    for workers, method in ((0, None), (2, "threads"), (2, "processes")):
        source = HeadsSource(jpegs, heads, 50)
        out[f"keras-{workers}-{method}"] = keras_first_batch(source, workers, method)
    pairs_jpeg = pair_source(work / "pairs-jpeg")
    out["keras-segmentation"] = keras_first_batch(pairs_jpeg, 2, "processes", "pillow-segmentation")
    pairs_png = pair_source(work / "pairs-png")  # make bench's pairs are PNG + PNG
    out["keras-segmentation-threads"] = keras_first_batch(
        pairs_png, 2, "threads", "pillow-segmentation"
    )
    return out


def pytest_sessionfinish() -> None:
    """After the bench session's cases: the probe, its error (a traceback) if it raised."""
    target = Path(os.environ[OUT_ENV])
    work = target.with_name("tf-tasks-probe")
    work.mkdir()
    try:
        found = probe(work)
    except Exception:  # the probe's tests show it; the session's rows stay valid
        found = {"probe_error": traceback.format_exc()}
    target.write_text(json.dumps(found))


if __name__ == "__main__":
    print(json.dumps(probe(Path(sys.argv[1]))))
