"""Datasets: photo-like synthetic sets, any real image folder, a shipped real sample, manifests."""

from .dataset import Dataset, load_dataset
from .manifest import BadFile, DatasetError, ImageEntry, Manifest
from .scan import scan

__all__ = [
    "BadFile",
    "Dataset",
    "DatasetError",
    "ImageEntry",
    "Manifest",
    "load_dataset",
    "scan",
]
