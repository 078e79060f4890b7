"""Readers and decoders (and tjbench's native ceiling): cases come from imgbench.readers.cases."""

import pytest

pytestmark = pytest.mark.imgbench(stage="read")


def test_read(imgbench, imgbench_case):
    imgbench.measure(imgbench_case)
