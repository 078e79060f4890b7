"""Storage formats: write, size on disk, read (order x payload x cache). Cases from imgbench.formats."""

import pytest

pytestmark = pytest.mark.imgbench(stage="format")


def test_format(imgbench, imgbench_case):
    imgbench.measure(imgbench_case)
