"""A pytest plugin of an isolated env's bench session (env_sessions.run_session with a probe):
once the session's cases are done, in the same interpreter, the env's own verification (its
``verify_code``, as ``imgbench env create`` runs it) and the augment registry's verdict on the
libraries named: two interpreters of the env fewer, each importing torch and OpenCV again.

It writes ``probe.json`` to the folder named in ``$IMGBENCH_TEST_ENV_PROBE``; an error is
recorded with its traceback (the session's own exit code stays the cases').
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

PROBE_ENV = "IMGBENCH_TEST_ENV_PROBE"  # {"out": FOLDER, "augment": [LIBRARY, ...]}


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    setting = os.environ.get(PROBE_ENV)
    if not setting:
        return
    where = json.loads(setting)
    try:
        found = probe(where.get("augment", []))
    except BaseException:  # recorded for the test that reads it
        found = {"error": traceback.format_exc()}
    (Path(where["out"]) / "probe.json").write_text(json.dumps(found))


def probe(augment: list[str]) -> dict[str, Any]:
    from imgbench.augment.registry import get_library
    from imgbench.envs import ENVIRONMENTS, current_environment, parse_facts

    spec = ENVIRONMENTS[current_environment()]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(spec.verify_code, {})  # the env's own verification script
    facts = parse_facts(printed.getvalue())
    return {
        "environment": current_environment(),
        "facts": facts,
        "problem": spec.problem(facts),
        "unmet": {name: get_library(name).unmet_requirement() for name in augment},
    }
