"""Every storage format imgbench knows. A new one: a ``libs/`` module (``write``, ``Reader``) + an entry.

``quick`` entries are the quick profile's formats."""

from __future__ import annotations

from imgbench.formats.base import FormatSpec
from imgbench.formats.s3 import S3FormatSpec
from imgbench.library import catalog, find

_M = "imgbench.formats.libs."

FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec(
        name="folder",
        library="image-folder",
        variant="one-file-per-image",
        module=_M + "folder",
        quick=True,
    ),
    FormatSpec(
        name="lmdb",
        library="lmdb",
        variant="key-per-image",
        module=_M + "lmdb",
        requires=("lmdb",),
        dist="lmdb",
        quick=True,
    ),
    FormatSpec(
        name="hdf5-vlen",
        library="hdf5",
        variant="vlen-bytes",
        module=_M + "hdf5",
        requires=("h5py",),
        dist="h5py",
    ),
    FormatSpec(
        name="hdf5-array",
        library="hdf5",
        variant="fixed-array-256",
        module=_M + "hdf5",
        requires=("h5py",),
        dist="h5py",
        stores="array",
        parallel_write=True,
    ),
    FormatSpec(
        name="npy-decoded",
        library="numpy",
        variant="memmap-decoded-256",
        module=_M + "npy",
        dist="numpy",
        stores="array",
        parallel_write=True,
    ),
    FormatSpec(
        name="npy-packed",
        library="numpy",
        variant="packed-bytes-offsets",
        module=_M + "npy",
        dist="numpy",
        quick=True,
    ),
    FormatSpec(
        name="tar",
        library="webdataset",
        variant="tar-shards",
        module=_M + "tar",
        requires=("webdataset",),
        dist="webdataset",
        quick=True,
    ),
    FormatSpec(
        name="parquet",
        library="parquet",
        variant="binary-column",
        module=_M + "parquet",
        requires=("pyarrow",),
        dist="pyarrow",
        quick=True,
    ),
    FormatSpec(
        name="tfrecord",
        library="tfrecord",
        variant="example-per-image",
        module=_M + "tfrecord",
        requires=("tfrecord",),
        dist="tfrecord",
    ),
    FormatSpec(
        name="recordio",
        library="recordio",
        variant="mxnet-rec-idx",
        module=_M + "recordio",
        note="MXNet's .rec/.idx layout, written by imgbench (MXNet runs in its own env only)",
    ),
    FormatSpec(
        name="zarr",
        library="zarr",
        variant="vlen-bytes-sharded",
        module=_M + "zarr",
        requires=("zarr",),
        dist="zarr",
        default=False,  # 4.5 s a case (its shard index): in `full`, or by name
    ),
    FormatSpec(
        name="sqlite",
        library="sqlite",
        variant="blob-per-row",
        module=_M + "sqlite",
        requires=("sqlite3",),
        version_attr="sqlite3:sqlite_version",
    ),
    FormatSpec(
        name="torch-save",
        library="torch-save",
        variant="pth-shards",
        module=_M + "torch_save",
        requires=("torch",),
        dist="torch",
        default=False,  # 7 s a case (whole shards unpickled): in `full`, or by name
    ),
    FormatSpec(
        name="litdata",
        library="litdata",
        variant="binary-writer-chunks",
        module=_M + "litdata",
        requires=("litdata",),
        dist="litdata",
    ),
    FormatSpec(
        name="mds",
        library="mosaic-streaming",
        variant="mds-shards",
        module=_M + "mds",
        requires=("streaming",),
        dist="mosaicml-streaming",
        environment="mosaic",  # mosaicml-streaming downgrades numpy in the main env
        default=False,  # its own env and session: in `full`, or by name
        note="MDSWriter shards read with StreamingDataset, in the mosaic environment",
    ),
)

# Readers of formats uploaded to S3 (FormatPlan.storages "s3"): one adapter module each, named
# after the local format it uploads. A plan that selects a format also gets its S3 entry.
S3_FORMATS: tuple[S3FormatSpec, ...] = (
    S3FormatSpec(
        name="folder",
        library="image-folder",
        variant="one-file-per-image",
        module=_M + "s3_objects",
        requires=("boto3",),
        dist="boto3",
        client="boto3 (one GetObject per image)",
    ),
    S3FormatSpec(
        name="tar",
        library="webdataset",
        variant="tar-shards",
        module=_M + "s3_tar",
        requires=("webdataset", "boto3"),
        dist="webdataset",
        client="webdataset tar expander over boto3 streams; ranged GetObject by index",
    ),
    S3FormatSpec(
        name="litdata",
        library="litdata",
        variant="binary-writer-chunks",
        module=_M + "s3_litdata",
        requires=("litdata", "boto3"),
        dist="litdata",
        client="litdata StreamingDataset (boto3 chunk downloads)",
    ),
    S3FormatSpec(
        name="parquet",
        library="parquet",
        variant="binary-column",
        module=_M + "s3_parquet",
        requires=("pyarrow", "pyarrow.fs"),
        dist="pyarrow",
        client="pyarrow.fs.S3FileSystem",
    ),
    S3FormatSpec(
        name="mds",
        library="mosaic-streaming",
        variant="mds-shards",
        module=_M + "s3_mds",
        requires=("streaming", "boto3"),
        dist="mosaicml-streaming",
        environment="mosaic",
        default=False,
        client="streaming StreamingDataset (boto3 shard downloads, S3_ENDPOINT_URL)",
    ),
)

# Formats from posts that cannot run on a current stack: listed by `imgbench env`.
UNAVAILABLE: tuple[tuple[str, str], ...] = (
    (
        "mxnet (mx.recordio) as a format reader",
        "MXNet 1.9.1 needs numpy < 1.24, so it runs only in the mxnet env, where the "
        "`mxnet-recordio` loader packs .rec/.idx with mx.recordio and reads them with "
        "ImageRecordIter; the format stage reads the same layout by hand as `recordio`",
    ),
    (
        "ffcv (.beton)",
        "needs apt libopencv-dev libturbojpeg0-dev and a source build, and re-encodes images",
    ),
)


def formats() -> tuple[FormatSpec, ...]:
    """The built-in formats, then those other packages register (``imgbench.format``)."""
    return catalog("format", FORMATS, FormatSpec)


def get_format(name: str) -> FormatSpec:
    return find(formats(), name, "format")


def s3_formats() -> tuple[S3FormatSpec, ...]:
    return S3_FORMATS


def get_s3_format(name: str) -> S3FormatSpec:
    return find(s3_formats(), name, "S3 format")
