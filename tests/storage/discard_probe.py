"""A pytest plugin for the hdd session of ``test_disk_session.py``: at the session's end, before
imgbench's plugin closes the emulated disk, it writes to ``$DISCARD_PROBE_OUT`` where the
session's format stores were and what its scratch folders there hold set aside (``.discarded``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from imgbench.measure.context import DISCARDED
from imgbench.measure.scratch import PREFIX, SCRATCH_ENV


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stores = os.environ.get(SCRATCH_ENV)
    set_aside = (
        sorted(str(p.relative_to(stores)) for p in Path(stores).glob(f"{PREFIX}*/{DISCARDED}/*"))
        if stores
        else None
    )
    record = {"stores": stores, "set_aside": set_aside}
    Path(os.environ["DISCARD_PROBE_OUT"]).write_text(json.dumps(record))
