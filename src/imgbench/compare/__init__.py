"""Regression checks: compare two runs on raw samples, with significance and a practical threshold."""

from imgbench.compare.config import RegressionConfig, load_config
from imgbench.compare.stats import CompareInputError, ComparisonResult, compare_frames

__all__ = [
    "CompareInputError",
    "ComparisonResult",
    "RegressionConfig",
    "compare_frames",
    "load_config",
]
