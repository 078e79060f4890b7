"""Augmentations: the same transforms and pipelines in every library. Cases come from imgbench.augment."""

import pytest

pytestmark = pytest.mark.imgbench(stage="augment")


def test_augment(imgbench, imgbench_case):
    imgbench.measure(imgbench_case)
