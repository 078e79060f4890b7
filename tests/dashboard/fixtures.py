"""Realistic result rows for every stage, written with the real results store.

The rows follow docs/dashboard.md (the columns and ``extra_json`` keys each page reads), so they
double as an executable example for the engineers filling the other stages. Also a command:
``python -m tests.dashboard.fixtures OUT [--rows N]`` writes a results folder to look at or to time.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from imgbench.results.schema import empty_row
from imgbench.results.store import write_rows

IMAGES_PER_ROUND = 64
ROUNDS = 10

# images/s of one thread on a 600x400 JPEG, after FIELD_NOTES.md; other codecs scale these
READERS = {
    ("pillow", "open-convert"): 960.0,
    ("opencv", "imdecode-rgb"): 1170.0,
    ("opencv", "imdecode-cvtcolor"): 1120.0,
    ("simplejpeg", "decode"): 1250.0,
}
CODEC_FACTOR = {"jpeg": 1.0, "png": 0.45, "webp": 0.7}
NATIVE_JPEG = 1176.0
TRANSFORMS = {"hflip": 9000.0, "resize": 2500.0, "color_jitter": 400.0, "normalize": 1800.0}
AUG_LIBRARIES = {"albumentations": 1.0, "torchvision": 0.35, "kornia": 0.25}
FORMATS = {"folder": 900.0, "lmdb": 4200.0, "hdf5": 2600.0, "tar": 1500.0}
LOADERS = {"torch-dataloader": 430.0, "threads": 610.0}
# what imgbench.loaders.cases writes for the default pipeline (params_json); 224 x 224 outputs
LOADER_PIPELINE = {
    "format": "files",
    "decoder": "opencv/imdecode-rgb",
    "pipeline": "albumentations/numpy:train-classification",
}
CROP_MEGAPIXELS = 224 * 224 / 1e6
# the common default (Pillow + image folder + torchvision + DataLoader), at 0 and 2 (= cores)
# workers; then what is no choice: AU emulation and the copy-on-access experiment (no decoding)
COMMON_DEFAULT = {
    "format": "files",
    "decoder": "pillow/open-convert",
    "pipeline": "torchvision/v2-pil:train-classification",
}
COMMON_DEFAULT_IPS = {0: 250.0, 2: 410.0}
COW_EXPERIMENT_IPS = 3_000_000.0
# the decoder supply (stage "supply" of run_rows, not in its default stages): images/s inside the
# DataLoader by decoder and workers; with loader_rows' opencv/imdecode-rgb (430, 387, 752 at 0, 1
# and 2 workers) the order is opencv, cvtcolor, pillow, simplejpeg: one thread's reversed ends
SUPPLY_IPS = {
    "simplejpeg/decode": {0: 280.0, 1: 240.0, 2: 500.0},
    "opencv/imdecode-cvtcolor": {0: 420.0, 1: 380.0, 2: 700.0},
    "pillow/open-convert": {0: 310.0, 1: 290.0, 2: 560.0},
}
# allocator sessions (`imgbench run --profile default`): images/s over the main session's glibc,
# after docs/measuring.md (Pillow's decode of large JPEGs gains most from glibc-tuned; decoders
# that allocate through numpy barely move)
ALLOCATOR_SESSIONS = ("glibc-tuned", "jemalloc", "tcmalloc")
ALLOCATOR_EFFECT = {
    ("read", "pillow"): {"glibc-tuned": 1.9, "jemalloc": 1.7, "tcmalloc": 1.6},
    ("read", "opencv"): {"glibc-tuned": 1.02, "jemalloc": 1.0, "tcmalloc": 0.99},
    ("read", "simplejpeg"): {"glibc-tuned": 1.0, "jemalloc": 1.01, "tcmalloc": 1.0},
    ("augment", "albumentations"): {"glibc-tuned": 1.2, "jemalloc": 1.1, "tcmalloc": 1.05},
    ("augment", "torchvision"): {"glibc-tuned": 1.1, "jemalloc": 1.05, "tcmalloc": 1.0},
    ("loader", "torch-dataloader"): {"glibc-tuned": 1.3, "jemalloc": 1.15, "tcmalloc": 1.1},
}
# minor page faults per image: default glibc gives large buffers back and faults them in again
MINOR_FAULTS = {"glibc": 240.0, "glibc-tuned": 3.0, "jemalloc": 25.0, "tcmalloc": 40.0}
ALLOCATOR_ENV = {
    "glibc": {},
    "glibc-tuned": {
        "MALLOC_TRIM_THRESHOLD_": "1000000000",
        "MALLOC_MMAP_THRESHOLD_": "100000000",
        "MALLOC_TOP_PAD_": "100000000",
    },
    "jemalloc": {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
    "tcmalloc": {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"},
}


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    created: datetime
    machine_id: str = "m-ci-2core"
    hostname: str = "ci-box"
    dataset_fingerprint: str = "fp-synth-small"
    dataset_name: str = "synthetic-small"
    speed: float = 1.0  # multiplies every throughput: 0.8 = a 20% slower run
    seed: int = 0
    allocator: str = "glibc"  # the session's allocator; others make an allocator session
    run_group: str | None = None  # shared by the sessions of one `imgbench run`


def _samples(rng: np.random.Generator, images_per_s: float, images: int) -> list[float]:
    round_s = images / images_per_s
    return [float(s) for s in round_s * rng.lognormal(0.0, 0.04, ROUNDS)]


def _row(spec: RunSpec, rng: np.random.Generator, **fields: Any) -> dict[str, Any]:
    """A complete ok row: run, machine, dataset columns and metrics from the samples."""
    row = empty_row()
    row.update(
        run_id=spec.run_id,
        run_name=spec.run_id.split("-")[-1],
        run_group=spec.run_group,
        created_utc=spec.created,
        git_commit="0" * 40,
        git_branch="main",
        git_dirty=False,
        machine_id=spec.machine_id,
        hostname=spec.hostname,
        cpu_model="Fixture CPU @ 3.0GHz",
        cpu_cores_logical=2,
        cpu_cores_physical=2,
        ram_bytes=24 * 2**30,
        os="Linux-6.1-x86_64-with-glibc2.36",
        arch="x86_64",
        python_version="3.11.2",
        environment="main",
        dataset_name=spec.dataset_name,
        dataset_fingerprint=spec.dataset_fingerprint,
        dataset_images=256,
        dataset_mean_megapixels=0.24,
        dataset_codec="jpeg",
        rounds=ROUNDS,
        iterations=1,
        warmup_rounds=1,
        status="ok",
        allocator=spec.allocator,
        allocator_env=json.dumps(ALLOCATOR_ENV[spec.allocator], sort_keys=True),
        process_model="worker",
        page_faults_minor_per_image=MINOR_FAULTS[spec.allocator],
        page_faults_major_per_image=0.0,
    )
    ips = fields.pop("ips") * spec.speed
    images = fields.pop("images", IMAGES_PER_ROUND)
    megapixels_per_image = fields.pop("megapixels_per_image", 0.24)
    params = fields.pop("params", {})
    extra = fields.pop("extra", None)
    row.update(fields)
    samples = _samples(rng, ips, images)
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    row.update(
        samples_s=samples,
        images_per_round=images,
        bytes_per_round=images * 60_000,
        megapixels_per_round=images * megapixels_per_image,
        images_per_s_median=images / median,
        images_per_s_q1=images / q3,
        images_per_s_q3=images / q1,
        mb_per_s_median=images * 0.06 / median,
        megapixels_per_s_median=images * megapixels_per_image / median,
        latency_ms_median=1e3 * median / images,
        latency_ms_p90=1.2e3 * median / images,
        latency_ms_p99=1.5e3 * median / images,
        peak_rss_bytes=int(300e6 + rng.integers(0, 50_000_000)),
        wall_s=float(sum(samples) * 1.3),
        params_json=json.dumps(params, sort_keys=True),
        extra_json=json.dumps(extra) if extra is not None else None,
    )
    param_text = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    row["case_id"] = f"{row['stage']}/{row['library']}/{row['variant']}[{param_text}]"
    row["test_id"] = f"benches/bench_{row['stage']}.py::test[{row['case_id']}]"
    return row


def read_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for (library, variant), base in READERS.items():
        for codec, factor in CODEC_FACTOR.items():
            if library == "simplejpeg" and codec != "jpeg":
                continue
            for threads in (1, None):
                ips = base * factor * (1.0 if threads == 1 else 1.6)
                params = {"codec": codec, "mode": "memory", "threads": threads}
                rows.append(
                    _row(
                        spec,
                        rng,
                        stage="read",
                        library=library,
                        variant=variant,
                        codec=codec,
                        mode="memory",
                        cache_state="n/a",
                        threads=threads,
                        ips=ips,
                        params=params,
                        library_version="1.0",
                    )
                )
        if library in ("pillow", "opencv") and variant != "imdecode-cvtcolor":
            params = {"codec": "jpeg", "mode": "memory", "threads": 1, "reduce": 4}
            rows.append(
                _row(
                    spec,
                    rng,
                    stage="read",
                    library=library,
                    variant=f"{variant}-reduced",
                    codec="jpeg",
                    mode="memory",
                    cache_state="n/a",
                    threads=1,
                    ips=base * 3.1,
                    params=params,
                    library_version="1.0",
                )
            )
    return rows


def native_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    params = {"codec": "jpeg", "mode": "memory", "threads": 1}
    return [
        _row(
            spec,
            rng,
            stage="native",
            library="tjbench",
            variant="decompress",
            codec="jpeg",
            mode="memory",
            cache_state="n/a",
            threads=1,
            ips=NATIVE_JPEG,
            params=params,
            library_version="2.1.5",
        )
    ]


def augment_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for library, factor in AUG_LIBRARIES.items():
        for transform, base in TRANSFORMS.items():
            agrees = not (library == "kornia" and transform == "color_jitter")
            extra = {
                "agrees": agrees,
                "max_abs_diff": 0.0 if agrees else 7.5,
                "tolerance": 1.0,
                "reference": "opencv",
            }
            if library == "torchvision":  # the augment stage's own key names
                extra = {
                    "agreement": "pass",
                    "agreement_max_abs": 0.0,
                    "agreement_tolerance": "1 level",
                    "agreement_reference": "opencv",
                }
            rows.append(
                _row(
                    spec,
                    rng,
                    stage="augment",
                    library=library,
                    variant=transform,
                    threads=1,
                    ips=base * factor,
                    params={"transform": transform, "threads": 1},
                    extra=extra,
                    library_version="2.0",
                )
            )
        for pipeline, base in (("train-classification", 700.0), ("light", 1500.0)):
            for batch in (None, 32) if library == "kornia" else (None,):
                params = {"pipeline": pipeline, "threads": 1, "batch_size": batch}
                rows.append(
                    _row(
                        spec,
                        rng,
                        stage="augment",
                        library=library,
                        variant=pipeline,
                        threads=1,
                        batch_size=batch,
                        ips=base * factor * (3 if batch else 1),
                        params=params,
                        library_version="2.0",
                    )
                )
        rows.append(  # a task beyond classification: its own kind on the page
            _row(
                spec,
                rng,
                stage="augment",
                library=library,
                variant="numpy",
                threads=1,
                ips=300.0 * factor,
                params={"task": "segmentation", "threads": 1},
                extra={"agreement": "pass"},
                task="segmentation",
                library_version="2.0",
            )
        )
    return rows


def format_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for library, base in FORMATS.items():
        extra_common = {
            "bytes_on_disk": int(256 * 60_000 * (1.9 if library == "tar" else 1.02)),
            "size_ratio": 1.9 if library == "tar" else 1.02,
            "write_images_per_s": base * 0.6,
            "sync_share": 0.8 if library == "folder" else 0.3,
        }
        for cache_state in ("warm", "cold"):
            for order in ("sequential", "shuffled"):
                slow = (0.08 if library == "folder" else 0.3) if cache_state == "cold" else 1.0
                slow *= 0.7 if order == "shuffled" and cache_state == "cold" else 1.0
                params = {"cache_state": cache_state, "order": order, "decode": False}
                rows.append(
                    _row(
                        spec,
                        rng,
                        stage="format",
                        library=library,
                        variant="bytes",
                        mode="disk",
                        cache_state=cache_state,
                        ips=base * slow,
                        params=params,
                        extra={**extra_common, "order": order},
                        library_version="1.0",
                    )
                )
    params = {"cache_state": "warm", "order": "sequential"}
    rows.append(
        _row(
            spec,
            rng,
            stage="format",
            library="raw-file",
            variant="one-file",
            mode="disk",
            cache_state="warm",
            ips=30_000.0,
            params=params,
            extra={"order": "sequential"},
        )
    )
    return rows


def loader_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for library, base in LOADERS.items():
        for workers in (0, 1, 2, 4):
            scale = [1.0, 0.9, 1.75, 1.7][[0, 1, 2, 4].index(workers)]
            ips = base * scale
            processes = ["main"] + [f"worker-{i}" for i in range(workers)]
            timeline = [  # the main process holds the index; workers copy pages of it
                {
                    "t_s": t,
                    "process": proc,
                    "rss_bytes": int(4e8 if proc == "main" else 2e8 + 6e7 * t),
                    "pss_bytes": int(3e8 if proc == "main" else (8e7 + 4e7 * t) / (1 + 0.1 * k)),
                    "uss_bytes": int(2.5e8 if proc == "main" else 2e7 + 3.5e7 * t),
                }
                for t in (0.0, 0.5, 1.0, 1.5, 2.0)
                for k, proc in enumerate(processes)
            ]
            extra = {
                "time_to_first_batch_s": 0.2 + 0.4 * workers,
                "stage_times_s": {
                    "read": 1.1e-4,
                    "decode": 8.5e-4,
                    "augment": 9e-4,
                    "collate": 5e-5,
                },
                "au": min(0.97, ips / 900.0),
                "memory_timeline": timeline,
                # RSS alone on the fast clock (imgbench.loaders.memory), and both clocks' costs
                "rss_timeline": [
                    {
                        "t_s": round(0.1 * i, 1),
                        "process": proc,
                        "rss_bytes": int(4e8 if proc == "main" else 2e8 + 6e6 * i),
                    }
                    for i in range(21)
                    for proc in processes
                ],
                "memory_interval_s": 0.5,
                "memory_sampling_s": 0.05,
                "memory_light_interval_s": 0.1,
                "memory_light_sampling_s": 0.002,
            }
            params = {
                "workers": workers,
                "batch_size": 32,
                **LOADER_PIPELINE,
                "start_method": "fork",
            }
            rows.append(
                _row(
                    spec,
                    rng,
                    stage="loader",
                    library=library,
                    variant="folder-pillow",
                    workers=workers,
                    batch_size=32,
                    mode="disk",
                    cache_state="warm",
                    ips=ips,
                    images=256,
                    megapixels_per_image=CROP_MEGAPIXELS,
                    params=params,
                    extra=extra,
                    library_version="2.14.1",
                )
            )
    return rows + reference_loader_rows(spec, rng)


def reference_loader_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    """The common default at 0 and 2 workers, an AU-emulation row and the copy-on-access
    experiment, which reads millions of "images"/s without decoding any: a trap for "best"."""
    rows = []
    times = {"read": 1.1e-4, "decode": 1.4e-3, "augment": 2.2e-3, "collate": 5e-5}
    for workers, ips in COMMON_DEFAULT_IPS.items():
        params = {"workers": workers, "batch_size": 32, **COMMON_DEFAULT, "start_method": "fork"}
        extra = {"stage_times_s": times, "peak_pss_bytes": int(4e8 + 2.5e8 * workers)}
        rows.append(
            _row(
                spec,
                rng,
                stage="loader",
                library="torch-dataloader",
                variant="files-pillow-torchvision",
                workers=workers,
                batch_size=32,
                mode="disk",
                cache_state="warm",
                ips=ips,
                images=256,
                megapixels_per_image=CROP_MEGAPIXELS,
                params=params,
                extra=extra,
                library_version="2.14.1",
            )
        )
    params = {
        "workers": 2,
        "batch_size": 32,
        **LOADER_PIPELINE,
        "start_method": "fork",
        "accelerator_images_per_s": 100,
        "compute_kind": "sleep",
    }
    rows.append(
        _row(
            spec,
            rng,
            stage="loader",
            library="torch-dataloader",
            variant="files-opencv-albumentations+au-sleep-100ips",
            workers=2,
            batch_size=32,
            mode="disk",
            cache_state="warm",
            ips=99.0,
            images=256,
            megapixels_per_image=CROP_MEGAPIXELS,
            params=params,
            extra={"au": 0.97, "time_to_first_batch_s": 1.0},
            library_version="2.14.1",
        )
    )
    for workers in (0, 2):
        params = {"workers": workers, "batch_size": 32, "entries": 1_000_000}
        rows.append(
            _row(
                spec,
                rng,
                stage="loader",
                library="cow-experiment",
                variant="list-of-objects",
                workers=workers,
                batch_size=32,
                ips=COW_EXPERIMENT_IPS,
                images=256,
                megapixels_per_image=0.0,
                params=params,
                library_version="2.14.1",
            )
        )
    return rows


def supply_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    """The decoder supply (imgbench.loaders.supply): the other read_rows decoders inside the
    DataLoader at 0, 1 and 2 workers (opencv/imdecode-rgb's rows are loader_rows'), ordered
    unlike one thread: simplejpeg, fastest on one thread, is the slowest in the loader."""
    rows = []
    for decoder, by_workers in SUPPLY_IPS.items():
        library, variant = decoder.split("/")
        for workers, ips in by_workers.items():
            params = {
                "workers": workers,
                "batch_size": 32,
                **LOADER_PIPELINE,
                "decoder": decoder,
                "start_method": "fork",
            }
            rows.append(
                _row(
                    spec,
                    rng,
                    stage="loader",
                    library="torch-dataloader",
                    variant=f"files-{library}.{variant}-albumentations",
                    workers=workers,
                    batch_size=32,
                    mode="disk",
                    cache_state="warm",
                    ips=ips,
                    images=256,
                    megapixels_per_image=CROP_MEGAPIXELS,
                    params=params,
                    extra={"stage_times_s": {"read": 1e-4, "decode": 2e-3, "augment": 1e-3}},
                    library_version="2.14.1",
                )
            )
    return rows


def allocator_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    """An allocator session's rows: the main session's cases the default profile's
    allocator_plans keep, with ``"allocator": NAME`` among their params (so in their case_id)."""
    allocator = spec.allocator
    rows = []
    for library, variant in (
        ("pillow", "open-convert"),
        ("opencv", "imdecode-rgb"),
        ("simplejpeg", "decode"),
    ):
        params = {"codec": "jpeg", "mode": "memory", "threads": 1, "allocator": allocator}
        rows.append(
            _row(
                spec,
                rng,
                stage="read",
                library=library,
                variant=variant,
                codec="jpeg",
                mode="memory",
                cache_state="n/a",
                threads=1,
                ips=READERS[(library, variant)] * ALLOCATOR_EFFECT["read", library][allocator],
                params=params,
                library_version="1.0",
            )
        )
    for library in ("albumentations", "torchvision"):
        params = {
            "pipeline": "train-classification",
            "threads": 1,
            "batch_size": None,
            "allocator": allocator,
        }
        rows.append(
            _row(
                spec,
                rng,
                stage="augment",
                library=library,
                variant="train-classification",
                threads=1,
                ips=700.0
                * AUG_LIBRARIES[library]
                * ALLOCATOR_EFFECT["augment", library][allocator],
                params=params,
                library_version="2.0",
            )
        )
    for workers in (0, 2):
        params = {
            "workers": workers,
            "batch_size": 32,
            **LOADER_PIPELINE,
            "start_method": "fork",
            "allocator": allocator,
        }
        stage_times = {"read": 1.1e-4, "decode": 6e-4, "augment": 9e-4, "collate": 5e-5}
        rows.append(
            _row(
                spec,
                rng,
                stage="loader",
                library="torch-dataloader",
                variant="folder-pillow",
                workers=workers,
                batch_size=32,
                mode="disk",
                cache_state="warm",
                ips=LOADERS["torch-dataloader"]
                * [1.0, 1.75][workers // 2]
                * ALLOCATOR_EFFECT["loader", "torch-dataloader"][allocator],
                images=256,
                megapixels_per_image=CROP_MEGAPIXELS,
                params=params,
                extra={"time_to_first_batch_s": 0.2 + 0.4 * workers, "stage_times_s": stage_times},
                library_version="2.14.1",
            )
        )
    return rows


def outcome_rows(spec: RunSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    """One skipped and one failed row, as the harness writes them (no metrics)."""
    rows = []
    for status, library, reason in (
        ("skipped", "pyvips", "pyvips: cannot import pyvips (No module named 'pyvips')"),
        ("failed", "jpeg4py", "RuntimeError: decode failed on img_03.jpg"),
    ):
        row = _row(
            spec,
            rng,
            stage="read",
            library=library,
            variant="decode",
            codec="jpeg",
            mode="memory",
            threads=1,
            ips=1.0,
            params={"codec": "jpeg"},
        )
        for column in list(row):
            if column.startswith(("images_per_s", "latency_ms", "mb_per", "megapixels_per")):
                row[column] = None
        row.update(samples_s=None, status=status, reason=reason)
        rows.append(row)
    return rows


def run_rows(
    spec: RunSpec,
    stages: tuple[str, ...] = ("read", "native", "augment", "format", "loader", "outcome"),
) -> list[dict]:
    rng = np.random.default_rng(spec.seed)
    makers = {
        "read": read_rows,
        "native": native_rows,
        "augment": augment_rows,
        "format": format_rows,
        "loader": loader_rows,
        "outcome": outcome_rows,
        "allocator": allocator_rows,
        "supply": supply_rows,
    }
    return [row for stage in stages for row in makers[stage](spec, rng)]


def write_run(folder: Path, spec: RunSpec, **kwargs: Any) -> Path:
    path = folder / f"{spec.run_id}.parquet"
    write_rows(run_rows(spec, **kwargs), path)
    return path


def slow_down(rows: list[dict[str, Any]], case_id: str, factor: float) -> list[dict[str, Any]]:
    """``rows`` with every round of ``case_id`` ``factor`` times longer, its metrics to match."""
    out = []
    for row in rows:
        if row["case_id"] == case_id:
            row = dict(row)
            row["samples_s"] = [s * factor for s in row["samples_s"]]
            for column in [
                c for c in row if c.endswith(("_per_s_median", "_per_s_q1", "_per_s_q3"))
            ]:
                row[column] = row[column] / factor
            for column in ("latency_ms_median", "latency_ms_p90", "latency_ms_p99", "wall_s"):
                row[column] = row[column] * factor
        out.append(row)
    return out


def write_old_schema(folder: Path, spec: RunSpec) -> Path:
    """A file as an older schema version wrote it: fewer columns, schema_version 0."""
    table = pa.Table.from_pylist(run_rows(spec, stages=("read",)))
    dropped = ["extra_json", "threads_blas", "allocator_env", "megapixels_per_s_median"]
    table = table.drop_columns(dropped)
    table = table.set_column(
        table.schema.get_field_index("schema_version"),
        "schema_version",
        pa.array([0] * table.num_rows, pa.int32()),
    )
    path = folder / f"{spec.run_id}.parquet"
    pq.write_table(table, path)
    return path


def write_corrupt(folder: Path, name: str = "half-written.parquet") -> Path:
    """The first half of a real parquet file: what a killed writer without atomic rename leaves."""
    source = folder / f".{name}.source"
    write_rows(run_rows(RunSpec("corrupt", datetime(2026, 1, 1, tzinfo=UTC))), source)
    data = source.read_bytes()
    source.unlink()
    path = folder / name
    path.write_bytes(data[: len(data) // 2])
    return path


def standard_runs(start: datetime | None = None) -> list[RunSpec]:
    """A baseline run and a 15% slower candidate on the same machine and data."""
    start = start or datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    base = RunSpec("20261120T120000Z-default-aaaaaa", start, seed=1)
    cand = replace(
        base,
        run_id="20261121T120000Z-default-bbbbbb",
        created=start + timedelta(days=1),
        speed=0.85,
        seed=2,
    )
    return [base, cand]


def allocator_runs(start: datetime | None = None) -> list[RunSpec]:
    """One `imgbench run --profile default`: the main session (glibc) and its allocator sessions,
    each a run of its own in one run group."""
    start = start or datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    group = "20261201T120000Z-default-cccccc"
    main = RunSpec(group, start, seed=3, run_group=group)
    sessions = [
        replace(
            main,
            run_id=f"{group}-allocator-{name}",
            created=start + timedelta(minutes=10 * (index + 1)),
            seed=4 + index,
            allocator=name,
        )
        for index, name in enumerate(ALLOCATOR_SESSIONS)
    ]
    return [main, *sessions]


def write_allocator_run(folder: Path) -> list[Path]:
    """The main session's stages and the allocator sessions' rows, one file per session."""
    main, *sessions = allocator_runs()
    paths = [write_run(folder, main, stages=("read", "native", "augment", "loader"))]
    paths += [write_run(folder, spec, stages=("allocator",)) for spec in sessions]
    return paths


def write_large(folder: Path, n_rows: int, rows_per_file: int = 10_000) -> list[Path]:
    """``n_rows`` realistic rows in files of ``rows_per_file``: the load-time budget's input."""
    folder.mkdir(parents=True, exist_ok=True)
    template = standard_runs()[0]
    block: list[dict[str, Any]] = []
    seed = 0
    while len(block) < rows_per_file:
        block.extend(run_rows(replace(template, seed=seed)))
        seed += 1
    table = pa.Table.from_pylist(block[:rows_per_file])
    from imgbench.results.schema import SCHEMA

    table = table.cast(SCHEMA)
    paths = []
    for index in range((n_rows + rows_per_file - 1) // rows_per_file):
        size = min(rows_per_file, n_rows - index * rows_per_file)
        run_id = f"2026112{index % 10}T{index:06d}Z-large-{index:06d}"
        part = table.slice(0, size)
        part = part.set_column(
            part.schema.get_field_index("run_id"), "run_id", pa.array([run_id] * size)
        )
        path = folder / f"{run_id}.parquet"
        pq.write_table(part, path, compression="zstd")
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=0, help="write this many rows for timing")
    parser.add_argument(
        "--allocators", action="store_true", help="a run with allocator sessions instead"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.rows:
        write_large(args.out, args.rows)
    elif args.allocators:
        write_allocator_run(args.out)
    else:
        for spec in standard_runs():
            write_run(args.out, spec)
    print(args.out)


if __name__ == "__main__":
    main()
