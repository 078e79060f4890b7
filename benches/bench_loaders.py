"""Loaders and worker counts, memory per worker, stage times and AU: cases from imgbench.loaders.cases."""

import pytest

pytestmark = pytest.mark.imgbench(stage="loader")


def test_loader(imgbench, imgbench_case):
    imgbench.measure(imgbench_case)
