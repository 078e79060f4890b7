"""imgbench: benchmarks for image data pipelines, on your machine and your data."""

__version__ = "0.1.0"


def profile(dataset_or_loader: object, **options: object) -> object:
    """Profile a torch Dataset or DataLoader (a notebook's ``imgbench profile``): a worker sweep
    with images/s, time to first batch, memory per worker, AU at ``step_ms`` and where the time
    goes. Options are :func:`imgbench.profiling.api.profile`'s; returns its ProfileResult."""
    from imgbench.profiling.api import profile as run_profile

    return run_profile(dataset_or_loader, **options)  # type: ignore[arg-type]
