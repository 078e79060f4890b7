"""imgbench: benchmarks for image data pipelines, on your machine and your data."""

__version__ = "0.1.0"
