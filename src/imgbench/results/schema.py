"""The results schema: the one contract between the measuring half and the reading half.

Column names carry their units (``_s``, ``_ms``, ``_bytes``, ``images_per_s``, ``mb_per_s`` with
MB = 10**6 bytes, ``megapixels_per_s``) so a row is readable without this file. Bump
``SCHEMA_VERSION`` when a column changes meaning or is removed; adding a column keeps old files
readable because ``results.store`` fills missing columns with nulls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

SCHEMA_VERSION = 1

STATUSES = ("ok", "skipped", "failed")

_FIELDS: list[tuple[str, pa.DataType, str]] = [
    ("schema_version", pa.int32(), "version of this schema the row was written with"),
    # run
    ("run_id", pa.string(), "unique id of the pytest session; also the parquet file name"),
    ("run_name", pa.string(), "the --benchmark-save NAME, if any"),
    (
        "run_group",
        pa.string(),
        "shared by the sessions of one `imgbench run` (environments, datasets); else = run_id",
    ),
    ("created_utc", pa.timestamp("us", tz="UTC"), "when the case finished (UTC)"),
    ("git_commit", pa.string(), "commit of the imgbench checkout the run used"),
    ("git_branch", pa.string(), "branch of that checkout"),
    ("git_dirty", pa.bool_(), "uncommitted changes were present"),
    # machine
    (
        "machine_id",
        pa.string(),
        "hash of cpu, cores, ram, os, arch, hostname: same id = same machine",
    ),
    ("hostname", pa.string(), ""),
    ("cpu_model", pa.string(), ""),
    ("cpu_cores_logical", pa.int32(), ""),
    ("cpu_cores_physical", pa.int32(), ""),
    ("ram_bytes", pa.int64(), "total memory"),
    ("os", pa.string(), "e.g. Linux-6.1-x86_64-with-glibc2.36"),
    ("arch", pa.string(), ""),
    ("python_version", pa.string(), ""),
    (
        "node_label",
        pa.string(),
        "the label of the machine or Ray node that measured (IMGBENCH_MACHINE_LABEL, or the Ray "
        "node's imgbench/machine label); null when none was given; not part of machine_id",
    ),
    (
        "ray_node_id",
        pa.string(),
        "the Ray node that measured the row (`imgbench run --ray`); null for a run on one machine",
    ),
    # the machine's speed on a fixed workload: once per run, and per block of the final
    # (imgbench.measure.reference)
    (
        "reference_workload",
        pa.string(),
        "the machine reference's workload and version, e.g. decode+augment-v1:5307451e8cdf (the "
        "work per image, then a hash of the bundled images): references compare within a version",
    ),
    (
        "reference_1_images_per_s",
        pa.float64(),
        "the machine's speed on the reference workload: one process on one thread, images/s "
        "(the median of three turns alternating with the all-CPU figure's)",
    ),
    (
        "reference_all_images_per_s",
        pa.float64(),
        "the same workload in reference_cores single-threaded processes at once, images/s summed "
        "over the same window (a CPU quota or busy neighbours show here)",
    ),
    (
        "reference_cores",
        pa.int32(),
        "processes behind reference_all_images_per_s: the CPUs the run may use (affinity mask); "
        "under a cgroup CPU quota they share it, as a loader's workers do",
    ),
    (
        "reference_cpu_quota",
        pa.float64(),
        "the cgroup CPU quota in CPUs while the reference ran (cfs_quota_us / cfs_period_us, or "
        "cpu.max); null: none",
    ),
    (
        "reference_error",
        pa.string(),
        "why the reference columns are null: it failed, or was turned off "
        "(IMGBENCH_MACHINE_REFERENCE=off); null when measured, and in rows older than it",
    ),
    # case
    ("stage", pa.string(), "read | augment | format | loader | native | profile | ..."),
    ("case_id", pa.string(), "stable id of the case across runs (stage/library/variant/params)"),
    ("test_id", pa.string(), "pytest node id"),
    (
        "comparison_key",
        pa.string(),
        "16 hex digits over stage, case_id, library_version and dataset_fingerprint: two rows with "
        "the same key did the same work with the same library on the same data, whatever the "
        "machine (imgbench compare pairs machines by it)",
    ),
    ("library", pa.string(), "library measured, e.g. pillow, opencv"),
    ("library_version", pa.string(), "installed version, verified in the process that measured"),
    ("variant", pa.string(), "how the library is called, e.g. imdecode-rgb"),
    ("environment", pa.string(), "python environment: main, pillow-simd, tensorflow"),
    # dataset
    ("dataset_name", pa.string(), "recipe name or folder name"),
    ("dataset_fingerprint", pa.string(), "hash of the manifest: paths, sizes, content hashes"),
    ("dataset_images", pa.int64(), "usable images in the dataset"),
    ("dataset_mean_megapixels", pa.float64(), "mean megapixels per image over the whole dataset"),
    ("dataset_mean_bytes", pa.float64(), "mean encoded bytes per image over the whole dataset"),
    ("dataset_codec", pa.string(), "dominant codec of the dataset, or mixed"),
    # parameters (typed); everything else goes to params_json
    ("codec", pa.string(), "codec of the images this case used"),
    ("mode", pa.string(), "memory | disk | ..."),
    ("cache_state", pa.string(), "warm | cold | n/a"),
    ("cache_method", pa.string(), "how the cache state was made, and whether it was checked"),
    (
        "storage",
        pa.string(),
        "format and loader stages: where the store lives, local (a folder on this disk) | s3 "
        "(a bucket)",
    ),
    (
        "storage_endpoint",
        pa.string(),
        "the object store's URL the case used (s3 rows), e.g. http://127.0.0.1:40101",
    ),
    (
        "network_shaping",
        pa.string(),
        "what shaped the network between client and object store: none (the server's own "
        "address) | the shape's name, e.g. rtt50ms-100mbit",
    ),
    (
        "network_rtt_ms",
        pa.float64(),
        "round-trip time to the object store, ms: unshaped, median TCP connect time; shaped, "
        "median round trip of small exchanges through the shaped path",
    ),
    # the disk the case read (read, format, loader rows; imgbench.measure.storage): null where
    # the path is on no block device the kernel lists (tmpfs, overlay) or the case reads no disk
    (
        "storage_device",
        pa.string(),
        "kernel name of the block device holding the data the case read, e.g. vda1, nvme0n1, "
        "loop0, dm-0 (the format store's device for format rows)",
    ),
    ("storage_disk", pa.string(), "the whole disk of storage_device (vda for vda1), else itself"),
    (
        "storage_device_kind",
        pa.string(),
        "disk | partition | loop | device-mapper | md-raid | zram | none (no block device: "
        "tmpfs, overlay, a network file system; storage_fs says which)",
    ),
    (
        "storage_rotational",
        pa.bool_(),
        "the kernel's rotational flag of the whole disk (/sys/block/X/queue/rotational); virtual "
        "disks often report true",
    ),
    (
        "storage_model",
        pa.string(),
        "the disk's model (/sys/block/X/device/model) when the kernel knows it; a loop device's "
        "backing file; a device-mapper target's name",
    ),
    ("storage_fs", pa.string(), "file system of the mount holding the data, e.g. ext4, xfs, tmpfs"),
    (
        "storage_mount_options",
        pa.string(),
        "that mount's options then its super block's, comma-separated (/proc/self/mountinfo)",
    ),
    (
        "io_reads_per_s",
        pa.float64(),
        "iostat's r/s: reads completed by storage_device per second of the timed rounds "
        "(device-wide: the loader's workers and anything else reading that device)",
    ),
    (
        "io_read_kb_per_s",
        pa.float64(),
        "iostat's rkB/s: kB (1024 bytes) read from storage_device per second of the timed rounds",
    ),
    (
        "io_r_await_ms",
        pa.float64(),
        "iostat's r_await: mean ms a read spent queued and served; null when no read completed",
    ),
    (
        "io_util_pct",
        pa.float64(),
        "iostat's %util: share of the timed rounds' time the device had I/O in flight, percent",
    ),
    (
        "io_window_s",
        pa.float64(),
        "seconds of timed rounds the io_ columns cover (diskstats read before and after each)",
    ),
    (
        "disk_profile",
        pa.string(),
        "the emulated disk the case's data sat on (--disk): none (the real disk; s3 rows always) "
        "| hdd | sata-ssd | nvme: a loop device whose reads are capped (docs/disks.md)",
    ),
    ("disk_read_iops_limit", pa.int64(), "disk_profile's read IOPS cap in force; null for none"),
    (
        "disk_read_bytes_per_s_limit",
        pa.int64(),
        "disk_profile's read bandwidth cap in force, bytes/s; null for none",
    ),
    ("threads", pa.int32(), "threads requested for the library; null = library default"),
    ("workers", pa.int32(), "loader workers"),
    ("batch_size", pa.int32(), ""),
    (
        "task",
        pa.string(),
        "what a sample is and what comes out: classification | segmentation | crop-ocr "
        "(augment and loader rows, classification unless the case says; docs/augment.md); "
        "null where the stage has no tasks (read, format)",
    ),
    (
        "system",
        pa.string(),
        "loader rows: the system a user picks, whatever its variant (DALI, tf.data, SPDL, "
        "torchdata.nodes, DataLoader, ...): the final and the answer compare the best of each",
    ),
    (
        "configured_as",
        pa.string(),
        "loader rows: same-recipe (imgbench's pipeline, the same parts in every loader) | "
        "as-documented (built as the system's own authors' example builds it, same recipe)",
    ),
    (
        "configured_from",
        pa.string(),
        "as-documented rows: the example or guide the configuration follows (file or page, "
        "and version); null for same-recipe rows",
    ),
    (
        "crop_decode",
        pa.string(),
        "how the random crop meets the decoder: full (decode the whole image, then crop) | "
        "roi (the decoder decodes only the crop's window: DALI's image_random_crop, "
        "TensorFlow's decode_and_crop_jpeg, PyTurboJPEG's MCU-aligned crop, nvImageCodec's "
        "region) | reduced (libjpeg's 1/2-1/8 decode where the window keeps 224 px) | "
        "roi-reduced (both); null where the row decodes no crop",
    ),
    ("params_json", pa.string(), "all parameters of the case as JSON"),
    # thread and allocator settings in force while timing
    ("threads_opencv", pa.int32(), "cv2.getNumThreads() while timing, if OpenCV was loaded"),
    ("threads_torch", pa.int32(), "torch.get_num_threads() while timing, if torch was loaded"),
    ("threads_blas", pa.int32(), "threadpoolctl: max threads of loaded OpenMP/BLAS pools"),
    ("thread_env", pa.string(), "OMP/MKL/OPENBLAS thread variables as JSON"),
    (
        "allocator_env",
        pa.string(),
        "MALLOC_* variables and LD_PRELOAD as JSON (they change decode timings)",
    ),
    (
        "allocator",
        pa.string(),
        "glibc | glibc-tuned | jemalloc | tcmalloc | custom: the measuring process's allocator",
    ),
    (
        "address_layout",
        pa.string(),
        "fixed: the measuring process ran with address-space randomisation (ASLR) off, every "
        "session the same layout | randomized: the kernel drew a layout per process",
    ),
    (
        "worker_imports",
        pa.string(),
        "profile: the worker server imported what every case of the profile needs, whatever ran | "
        "selected: only the selected cases' modules (the import set moves the heap layout)",
    ),
    (
        "processes",
        pa.int32(),
        "worker processes the case was measured in, each with its own heap layout, rounds pooled",
    ),
    (
        "process_images_per_s",
        pa.list_(pa.float64()),
        "images/s of each worker process's median round (null for one process)",
    ),
    (
        "process_model",
        pa.string(),
        "worker: a fresh fork of a pristine server process per case | in-process: the session's",
    ),
    (
        "page_faults_minor_per_image",
        pa.float64(),
        "minor page faults of the measuring process per timed image (memory given back, refaulted)",
    ),
    ("page_faults_major_per_image", pa.float64(), "major page faults per timed image"),
    # what was measured
    (
        "measure",
        pa.string(),
        "wall: timed rounds (the throughput columns) | instructions: one pass counted under "
        "callgrind (instructions_per_image; no timed rounds)",
    ),
    (
        "instructions_per_image",
        pa.float64(),
        "instructions executed per image, counted by valgrind's callgrind (measure=instructions)",
    ),
    (
        "estimated_cycles_per_image",
        pa.float64(),
        "callgrind's cache-simulated estimate: (Ir + 10 L1 misses + 100 LL misses) / images; "
        "information, not gated",
    ),
    # the host while the rounds ran (imgbench.measure.host)
    (
        "host_ratios",
        pa.list_(pa.float64()),
        "per kept round (aligned with samples_s): the slower host probe beside it over the "
        "session's fastest probe; 1.0 = the host at its quietest",
    ),
    ("host_ratio_median", pa.float64(), "median of host_ratios"),
    (
        "host_rounds_discarded",
        pa.int32(),
        "rounds timed while the host ran slower than host_max_ratio, timed again and dropped",
    ),
    ("host_wait_s", pa.float64(), "seconds waited for the host's quiet state before the rounds"),
    ("host_probe_reference_s", pa.float64(), "the session's fastest host probe, CPU seconds"),
    (
        "host_max_ratio",
        pa.float64(),
        "the gate: rounds above this host ratio were re-timed; 0 = off",
    ),
    ("host_budget_s", pa.float64(), "seconds a case may spend waiting for quiet and re-timing"),
    # a cgroup CPU quota over the process tree (imgbench.measure.quota)
    (
        "cpu_quota",
        pa.float64(),
        "the cgroup CPU quota in CPUs while the case ran (cpu.max, or cfs_quota_us over "
        "cfs_period_us); null: none",
    ),
    ("cpu_quota_period_ms", pa.float64(), "the quota's period (CPU time is granted per period)"),
    (
        "cpu_throttled_share",
        pa.float64(),
        "of the quota's periods during the timed rounds, the share in which it held the "
        "processes back (cpu.stat nr_throttled / nr_periods); null: no quota or no counters",
    ),
    ("max_images", pa.int32(), "the session's images per round (per codec) before calibration"),
    # the images the case timed: a seeded sample of the dataset (imgbench.datasets.sample_pool)
    ("sample_seed", pa.int64(), "the seed of the session's samples of the dataset"),
    (
        "sample_max_images",
        pa.int32(),
        "the most images a sample grows to when max_images miss the dataset's means by over 5%",
    ),
    ("sample_id", pa.string(), "12 hex digits over the sampled paths; null: the case drew none"),
    ("sample_images", pa.int32(), "images in the case's sample"),
    ("sample_mean_megapixels", pa.float64(), "mean megapixels per image of the case's sample"),
    ("sample_mean_bytes", pa.float64(), "mean encoded bytes per image of the case's sample"),
    (
        "sample_population_mean_megapixels",
        pa.float64(),
        "mean megapixels per image of what the sample was drawn from (the dataset, or its codec)",
    ),
    (
        "sample_population_mean_bytes",
        pa.float64(),
        "mean encoded bytes per image of what the sample was drawn from",
    ),
    # work per round
    ("images_per_round", pa.int64(), "images each timed call processed"),
    ("bytes_per_round", pa.int64(), "input bytes each timed call processed"),
    ("megapixels_per_round", pa.float64(), "output megapixels each timed call produced"),
    ("rounds", pa.int32(), "timed rounds"),
    (
        "loader_rounds",
        pa.int32(),
        "the session's timed rounds for loader cases; 0 = rounds (the final re-measures them)",
    ),
    (
        "round_repeats",
        pa.int32(),
        "passes over the case's items in one timed round (calibrated to last min_round_s)",
    ),
    (
        "min_round_s",
        pa.float64(),
        "the shortest a timed round may last; 0 = one pass per round; under a CPU quota that "
        "throttled the case, at least 10 of its periods (imgbench.measure.quota)",
    ),
    (
        "min_case_s",
        pa.float64(),
        "timed rounds add up to at least this (more rounds than asked); 0 = the rounds asked",
    ),
    ("iterations", pa.int32(), "calls per round"),
    ("warmup_rounds", pa.int32(), "untimed rounds before timing"),
    ("samples_s", pa.list_(pa.float64()), "raw seconds of every timed round"),
    # metrics
    ("images_per_s_median", pa.float64(), "images per second, from the median round"),
    ("images_per_s_q1", pa.float64(), "images per second at the slow quartile of rounds"),
    ("images_per_s_q3", pa.float64(), "images per second at the fast quartile of rounds"),
    ("mb_per_s_median", pa.float64(), "input MB (10**6 bytes) per second, median round"),
    ("megapixels_per_s_median", pa.float64(), "output megapixels per second, median round"),
    ("latency_ms_median", pa.float64(), "per-image latency, median over all timed images"),
    ("latency_ms_p90", pa.float64(), ""),
    ("latency_ms_p99", pa.float64(), ""),
    ("peak_rss_bytes", pa.int64(), "peak resident memory of the measuring process during the case"),
    ("wall_s", pa.float64(), "wall time of the whole case, set-up included"),
    ("extra_json", pa.string(), "stage-specific extra metrics as JSON"),
    # outcome
    ("status", pa.string(), "ok | skipped | failed"),
    ("reason", pa.string(), "why skipped or failed; null when ok"),
]

SCHEMA = pa.schema([pa.field(name, dtype) for name, dtype, _ in _FIELDS])
COLUMNS: list[str] = [name for name, _, _ in _FIELDS]
DESCRIPTIONS: dict[str, str] = {name: doc for name, _, doc in _FIELDS}

# Metrics and the direction in which they are better; the regression checker reads this.
HIGHER_IS_BETTER = {
    "images_per_s_median": True,
    "mb_per_s_median": True,
    "megapixels_per_s_median": True,
    "latency_ms_median": False,
    "latency_ms_p90": False,
    "latency_ms_p99": False,
    "peak_rss_bytes": False,
    "instructions_per_image": False,
}


# what makes two rows the same measurement on any machine (the comparison_key column)
KEY_COLUMNS = ("stage", "case_id", "library_version", "dataset_fingerprint")


def comparison_key(row: Mapping[str, Any]) -> str:
    """The row's ``comparison_key``: a hash of its ``KEY_COLUMNS`` (null ones as null)."""
    values = [_key_part(row.get(name)) for name in KEY_COLUMNS]
    return hashlib.sha256(json.dumps(values).encode()).hexdigest()[:16]


def _key_part(value: Any) -> str | None:
    """A key column's value as text; null (None, NaN, pandas' NA) as None."""
    if value is None or isinstance(value, str):
        return value
    try:
        if value != value:  # NaN
            return None
    except TypeError:  # pandas.NA has no truth value
        return None
    return str(value)


def empty_row() -> dict[str, object]:
    """A row with every column present and null, so writers never omit a column."""
    row: dict[str, object] = dict.fromkeys(COLUMNS)
    row["schema_version"] = SCHEMA_VERSION
    return row


def to_table(rows: list[dict[str, object]]) -> pa.Table:
    """Rows to an Arrow table with the exact schema; unknown keys are an error, not a silent drop."""
    for row in rows:
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise KeyError(f"columns not in the results schema: {sorted(unknown)}")
    columns = {name: [row.get(name) for row in rows] for name in COLUMNS}
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def json_object(text: Any) -> dict[str, Any]:
    """A JSON-object column (``params_json``, ``extra_json``, ...) of one row as a dict.

    Null, broken or non-object text is ``{}``: a reader says what is missing instead of failing.
    """
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
