"""Sources that fail, and a pytest plugin that runs loader cases over them in a bench subprocess.

Loaded with ``-p tests.loaders.faults``: the loader stage's cases become a broken, a hung and a
mislabelled dataset under several loaders, followed by a healthy case (the suite must go on),
and after every case the plugin appends the pytest process's live child processes to the file
named by ``IMGBENCH_CHILDREN_LOG`` (forked DataLoader workers share the parent's command line).
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any

import numpy as np
import psutil
import pytest

BAD_INDEX = 3


class RaisesOnIndex:
    def __init__(self, source: Any) -> None:
        self.source = source

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, index: int) -> Any:
        if index == BAD_INDEX:
            raise ValueError(f"broken sample {index}")
        return self.source[index]


class HangsOnIndex(RaisesOnIndex):
    def __getitem__(self, index: int) -> Any:
        if index == BAD_INDEX:
            time.sleep(10**6)
        return self.source[index]


class ShiftsLabels(RaisesOnIndex):
    """Every label moved past the dataset's classes: batches look fine, their labels are wrong."""

    def __getitem__(self, index: int) -> Any:
        payload, label = self.source[index]
        return payload, label + 100


class FloatPixels(RaisesOnIndex):
    """Decoded float32 arrays as payloads, as a format that stored floats would hand them over."""

    def __getitem__(self, index: int) -> Any:
        import io

        from PIL import Image

        payload, label = self.source[index]
        with Image.open(io.BytesIO(payload)) as image:
            pixels = np.asarray(image.convert("RGB"), dtype=np.float32)
        return pixels, label


def fault_cases(profile: Any) -> list[Any]:
    from imgbench.loaders import cases
    from imgbench.loaders.plan import LoaderPlan

    plan = profile.plan(LoaderPlan)
    raises = functools.partial(cases.prepare_loader, wrap=RaisesOnIndex)
    hangs = functools.partial(cases.prepare_loader, wrap=HangsOnIndex)
    wrong_labels = functools.partial(cases.prepare_loader, wrap=ShiftsLabels)
    # a hung case waits out its timeout (its loader's own wait, or 3x for the first batch): 1 s,
    # not 2, and its shutdown's join of the stuck worker 1 s too (HUNG_JOIN_S). The others keep
    # the default timeouts: their error or first batch comes without waiting for one, however
    # busy the host.
    hung = {"plan": plan, "batch_timeout_s": 1.0}
    return [
        cases.loader_case("torch-dataloader", 2, prepare=raises, plan=plan),
        cases.loader_case("torch-dataloader", 0, prepare=raises, plan=plan),
        cases.loader_case("threadpool", 2, prepare=raises, plan=plan),
        cases.loader_case("torch-dataloader", 2, prepare=hangs, **hung),
        cases.loader_case("torch-dataloader", 0, prepare=hangs, **hung),
        cases.loader_case("queue-feeder", 2, prepare=hangs, **hung),
        cases.loader_case("threadpool", 1, prepare=hangs, **hung),
        cases.loader_case("torch-dataloader", 2, prepare=wrong_labels, plan=plan),
        cases.loader_case("torch-dataloader", 1, plan=plan),  # healthy: the suite went on
    ]


# A stuck worker is ended once its loader's join of it times out: the DataLoader's (torch's
# MP_STATUS_CHECK_INTERVAL, read when it shuts its workers down) and the thread pool's
# (JOIN_TIMEOUT_S) are 5 s. Four cases here hang on purpose: the same shutdown after 1 s.
HUNG_JOIN_S = 1.0


def pytest_configure(config: pytest.Config) -> None:
    import torch.utils.data._utils as torch_data_utils

    from imgbench.loaders import cases
    from imgbench.loaders.libs import threads

    cases.loader_cases = fault_cases  # type: ignore[assignment]
    torch_data_utils.MP_STATUS_CHECK_INTERVAL = HUNG_JOIN_S
    threads.JOIN_TIMEOUT_S = HUNG_JOIN_S


def pytest_runtest_teardown(item: pytest.Item) -> None:
    me = psutil.Process()
    children = []
    for child in me.children(recursive=True):
        try:
            children.append(
                {"pid": child.pid, "cmdline": child.cmdline(), "status": child.status()}
            )
        except psutil.NoSuchProcess:
            continue
    record = {"test": item.nodeid, "self_cmdline": me.cmdline(), "children": children}
    with open(os.environ["IMGBENCH_CHILDREN_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
