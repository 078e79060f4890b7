"""Every storage format imgbench knows. Adding one: a module (``write``, ``Reader``) + an entry."""

from __future__ import annotations

from imgbench.formats.base import FormatSpec

_M = "imgbench.formats."

FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec("folder", "image-folder", "one-file-per-image", _M + "folder", (), None),
    FormatSpec("lmdb", "lmdb", "key-per-image", _M + "lmdb", ("lmdb",), "lmdb"),
    FormatSpec("hdf5-vlen", "hdf5", "vlen-bytes", _M + "hdf5", ("h5py",), "h5py"),
    FormatSpec(
        "hdf5-array",
        "hdf5",
        "fixed-array-256",
        _M + "hdf5",
        ("h5py",),
        "h5py",
        stores="array",
        parallel_write=True,
    ),
    FormatSpec(
        "npy-decoded",
        "numpy",
        "memmap-decoded-256",
        _M + "npy",
        (),
        "numpy",
        stores="array",
        parallel_write=True,
    ),
    FormatSpec("npy-packed", "numpy", "packed-bytes-offsets", _M + "npy", (), "numpy"),
    FormatSpec("tar", "webdataset", "tar-shards", _M + "tar", ("webdataset",), "webdataset"),
    FormatSpec("parquet", "parquet", "binary-column", _M + "parquet", ("pyarrow",), "pyarrow"),
    FormatSpec(
        "tfrecord", "tfrecord", "example-per-image", _M + "tfrecord", ("tfrecord",), "tfrecord"
    ),
    FormatSpec(
        "recordio",
        "recordio",
        "mxnet-rec-idx",
        _M + "recordio",
        (),
        None,
        note="MXNet's .rec/.idx layout, written by imgbench (MXNet does not install)",
    ),
    FormatSpec("zarr", "zarr", "vlen-bytes-sharded", _M + "zarr", ("zarr",), "zarr"),
    FormatSpec(
        "sqlite",
        "sqlite",
        "blob-per-row",
        _M + "sqlite",
        ("sqlite3",),
        None,
        version_attr="sqlite3:sqlite_version",
    ),
    FormatSpec("torch-save", "torch-save", "pth-shards", _M + "torch_save", ("torch",), "torch"),
    FormatSpec(
        "litdata", "litdata", "binary-writer-chunks", _M + "litdata", ("litdata",), "litdata"
    ),
)

# Formats from posts that cannot run on a current stack: listed by `imgbench env`.
UNAVAILABLE: tuple[tuple[str, str], ...] = (
    (
        "mxnet (mx.recordio)",
        "Apache MXNet is retired (Attic, 2023); no wheels for Python 3.11 + numpy 2. Its .rec/.idx "
        "layout is measured as `recordio`, written by imgbench",
    ),
    (
        "ffcv (.beton)",
        "needs apt libopencv-dev libturbojpeg0-dev and a source build, and re-encodes images",
    ),
    (
        "mosaicml-streaming (MDS)",
        "downgrades numpy to 2.1.3 and huggingface-hub in the main environment",
    ),
)


def get_format(name: str) -> FormatSpec:
    for spec in FORMATS:
        if spec.name == name:
            return spec
    raise KeyError(f"unknown format {name!r}; known: {[s.name for s in FORMATS]}")
