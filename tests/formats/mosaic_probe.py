"""A pytest plugin of the mosaic env's bench session (tests/formats/mosaic_session.py): once the
session's cases are done, in the same interpreter, what three more mosaic-env interpreters
checked (each imported streaming and torch again, 4-8 s apiece here):

- ``facts``: the env's verification (its ``verify_code``, as ``imgbench env create`` runs it),
  the env's name, the numpy, torch and mosaicml-streaming distributions it sees and the ``weed``
  it finds (tests/envs/test_envs.py);
- ``store``: an MDS store written by MDSWriter, round-tripped, read by index and in order, then
  uploaded to the test process's S3 server and read back with StreamingDataset
  (tests/formats/test_mosaic_env.py).

It writes ``probe.json`` to the folder in ``$IMGBENCH_TEST_MOSAIC_PROBE``; an error is recorded
with its traceback (the session's own exit code stays the cases').
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import traceback
from pathlib import Path
from typing import Any

import pytest

PROBE_ENV = "IMGBENCH_TEST_MOSAIC_PROBE"  # {"out": FOLDER, "dataset": FOLDER}


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    setting = os.environ.get(PROBE_ENV)
    if not setting:
        return
    where = json.loads(setting)
    out, dataset = Path(where["out"]), Path(where["dataset"])
    found: dict[str, Any] = {}
    for name, check in (("facts", lambda: facts()), ("store", lambda: store(dataset, out))):
        try:
            found[name] = check()
        except BaseException:  # recorded for the test that reads it
            found[name] = {"error": traceback.format_exc()}
    (out / "probe.json").write_text(json.dumps(found))


def facts() -> dict[str, Any]:
    """The env's verified facts and what this interpreter sees."""
    from importlib import metadata

    from imgbench.envs import ENVIRONMENTS, current_environment, parse_facts
    from imgbench.machine import dist_version
    from imgbench.objectstore.server import find_weed

    spec = ENVIRONMENTS["mosaic"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(spec.verify_code, {})  # the env's own verification script
    verified = parse_facts(printed.getvalue())
    return {
        "verified": verified,
        "problem": spec.problem(verified),
        "environment": current_environment(),
        "numpy": dist_version("numpy"),
        "torch": dist_version("torch"),
        "weed": find_weed(),
        "mosaicml-streaming": metadata.version("mosaicml-streaming"),
    }


def store(dataset: Path, work: Path) -> dict[str, Any]:
    """The MDS store's round trips, locally and through S3 (was a script run by the test)."""
    from imgbench.datasets.scan import scan
    from imgbench.formats.base import build_format, open_format
    from imgbench.formats.registry import get_format, get_s3_format
    from imgbench.formats.roundtrip import round_trip
    from imgbench.formats.s3 import delete_prefix, open_s3, s3_round_trip, upload_store
    from imgbench.objectstore.server import external_endpoint

    manifest = scan(dataset, use_cache=False)
    entries = manifest.entries
    spec = get_format("mds")
    out: dict[str, Any] = {"reason": spec.unmet_requirement()}
    report = build_format(spec, manifest.root, entries, work / "mds", progress=False)
    out["files"] = sorted(p.name for p in report.path.iterdir())
    trip = round_trip(spec, report.path, manifest.root, entries)
    out["round_trip"] = [trip.ok, trip.records, trip.reason()]
    sources = [(manifest.root / e.path).read_bytes() for e in entries]
    with open_format(spec, report.path) as reader:
        out["len"] = len(reader)
        out["map_style"] = [reader[i][0] == sources[i] for i in reversed(range(len(reader)))]
        out["last_label"] = reader[-1][1]
        classes = sorted({e.label for e in entries})  # type: ignore[type-var]
        out["expected_labels"] = [classes.index(e.label) for e in entries]
        out["sequential"] = [data == sources[i] for i, (data, _) in enumerate(reader)]
        out["labels"] = [label for _, label in reader]
        it = iter(reader)
        next(it)
        it.close()  # type: ignore[attr-defined]  # stopped early: its threads stop with it
        try:
            reader[len(reader)]
            out["index_error"] = False
        except IndexError:
            out["index_error"] = True
    endpoint = external_endpoint()  # the test process's server ($IMGBENCH_S3_ENDPOINT)
    assert endpoint is not None, "no $IMGBENCH_S3_ENDPOINT in the session"
    s3 = get_s3_format("mds")
    upload = upload_store(endpoint, report.path, "mds-round-trip-test/mds", report.meta)
    out["upload"] = [upload.objects, upload.stored_bytes, upload.seconds > 0]
    cache = work / "cache"
    cache.mkdir()
    verdict = s3_round_trip(s3, endpoint, upload.prefix, manifest.root, entries, [], cache)
    out["s3_round_trip"] = [verdict.ok, verdict.records, verdict.reason()]
    before = {k: os.environ.get(k) for k in ("S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID")}
    with open_s3(s3, endpoint, upload.prefix, cache) as reader:
        out["s3_env_while_open"] = os.environ.get("S3_ENDPOINT_URL") == endpoint.url
        out["s3_shuffled"] = reader[5][0] == sources[5]
        out["cache_files"] = sorted(p.name for p in next(cache.iterdir()).iterdir())
        reader.drop_cache()  # type: ignore[attr-defined]  # every round starts empty: the next read downloads again
        out["s3_sequential"] = [data == sources[i] for i, (data, _) in enumerate(reader)]
    out["cache_left"] = [p.name for p in cache.iterdir()]
    out["env_restored"] = before == {k: os.environ.get(k) for k in before}
    out["deleted"] = delete_prefix(endpoint, upload.prefix)
    return out
