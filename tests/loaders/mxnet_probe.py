"""Bad files through MXNet's ImageRecordIter, in the mxnet environment's bench session
(tests/loaders/test_mxnet_recordio.py): loaded with ``-p tests.loaders.mxnet_probe``, it runs
once the session's cases are done, in the same interpreter (one MXNet start instead of two), and
writes its findings as JSON to ``$IMGBENCH_TEST_MX_PROBE``. The photos and the bad files are the
folders named by ``$IMGBENCH_TEST_MX_PHOTOS`` and ``$IMGBENCH_TEST_MX_BAD``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import traceback
from pathlib import Path
from typing import Any


def probe(photo_dir: Path, bad_dir: Path) -> dict[str, Any]:
    """The first batch of the photos plus the bad files (checked as the loader stage checks it),
    what was left out, and the error of a pool of bad files only."""
    from imgbench.loaders.base import LoaderError, deadline
    from imgbench.loaders.checks import check_batch, expectation
    from imgbench.loaders.libs import mxnet_recordio
    from imgbench.loaders.pipeline import FileSource, SamplePipeline
    from imgbench.loaders.registry import pipeline_config

    config = pipeline_config("mxnet-recordio")
    params = {"batch_size": 8, "workers": 2}

    def loader_of(paths: list[str]) -> Any:
        labels = [0 if "class_0" in str(p) else 1 for p in paths]
        return mxnet_recordio.build(SamplePipeline(FileSource(paths, labels), config), params)

    photos = sorted(str(p) for p in photo_dir.rglob("*.jpg"))
    bad = sorted(str(p) for p in bad_dir.iterdir())
    loader = loader_of(photos + bad)
    with deadline(60, "mxnet-recordio with bad files"):
        first = next(loader.batches())
    problem = check_batch(first, expectation(config, 8, [0, 1]))
    result: dict[str, Any] = {
        "check": problem or "pass",
        "skipped": loader.extra["recordio_skipped"],
        "by_content": loader.extra["recordio_named_by_content"],
        "records": loader.extra["recordio_records"],
    }
    loader.close()
    try:
        with deadline(60, "mxnet-recordio, bad files only"):
            loader_of(bad)
        result["all_bad"] = "no error"
    except LoaderError as exc:
        result["all_bad"] = str(exc)
    return result


def pytest_sessionfinish() -> None:
    """After the bench session's cases: the probe, with what it printed on stderr, or its
    error (a traceback) if it raised."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            found = probe(
                Path(os.environ["IMGBENCH_TEST_MX_PHOTOS"]),
                Path(os.environ["IMGBENCH_TEST_MX_BAD"]),
            )
    except Exception:  # the probe's test shows it; the session's rows stay valid
        found = {"probe_error": traceback.format_exc()}
    found["stderr"] = stderr.getvalue()
    Path(os.environ["IMGBENCH_TEST_MX_PROBE"]).write_text(json.dumps(found))
