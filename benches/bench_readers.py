"""Readers and decoders: encoded bytes to an RGB uint8 array. Cases come from imgbench.readers."""

import pytest

pytestmark = pytest.mark.imgbench(stage="read")


def test_read(imgbench, imgbench_case):
    imgbench.measure(imgbench_case)
