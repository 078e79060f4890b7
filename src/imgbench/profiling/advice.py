"""Advice tied to what the sweep measured, each line naming the figure it rests on.

- AU: the fewest workers that keep the emulated accelerator busy 90% of the time.
- Augmentation dominates: said so, and that a faster decoder would not help.
- Unattributed time (20% or more): said as such, never counted as a part.
- Decode dominates: the verified readers of ``imgbench.readers`` run on a sample of the user's own
  files (each output checked against the reference decode first), and the fastest one's measured
  speed-up over the library the pipeline decodes with.
- Collate/IPC dominates: the loader stage's uint8-batch finding (docs/loaders.md).
- An allocator setting pays for the pipeline's decoder in imgbench's own read rows (allocator
  sessions of ``imgbench run`` in the same results folder): that setting.
- Worker memory grows (a worker's USS, not the summed PSS, which the main process's batches move
  both ways): the index-in-numpy finding (copy-on-access, pytorch issue 13246), naming
  the dataset's Python lists of paths when it has some.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imgbench.errors import one_line
from imgbench.loaders.au import AU_PASS
from imgbench.profiling.attribution import CATEGORY_TITLES, dominant

if TYPE_CHECKING:
    from imgbench.profiling.result import ProfileResult

DOMINANT_SHARE = 0.4  # a category this large of the sampled time is where to look first
GROWTH_BYTES_PER_MIN = 10 * 2**20  # a worker's USS growing faster than this after warm-up
LIST_INDEX_ENTRIES = 10_000  # a Python list this long, read by forked workers, is copied
JPEG_SUFFIXES = (".jpg", ".jpeg", ".JPG", ".JPEG")
SAMPLE_FILES = 16
UNATTRIBUTED_SHARE = 0.2  # this much time of untold role is said, whatever the largest part
ALLOCATOR_DECODE_SHARE = 0.2  # decode this large a part: an allocator that pays for it matters
# the reader that does what each decoding library does in a pipeline
BASELINE_READER = {
    "PIL": "pillow/open-convert",
    "cv2": "opencv/imdecode-rgb",
    "simplejpeg": "simplejpeg/decode-jpeg",
    "turbojpeg": "pyturbojpeg/decode-rgb",
    "jpeg4py": "jpeg4py/decode",
    "imageio": "imageio/v3-imread",
    "skimage": "skimage/io-imread",
    "torchvision.io": "torchvision/decode-jpeg",
    "imagecodecs": "imagecodecs/codec-decode",
    "kornia_rs": "kornia-rs/jpegturbo",
}


def advise(
    result: ProfileResult,
    dataset: Any,
    *,
    compare_readers: bool = True,
    results_dir: Path | None = None,
) -> list[str]:
    lines = [au_line(result)]
    ok = [c for c in result.configurations if c.status == "ok"]
    sampled = [c for c in ok if c.extra.get("attribution")]
    if sampled:
        best = max(sampled, key=lambda c: c.images_per_s or 0)
        shares = best.extra["attribution"]
        top = dominant(shares)
        if top == "decode" and shares["decode"] >= DOMINANT_SHARE:
            libraries = best.extra.get("decode_libraries", {})
            lines.append(decode_line(libraries, dataset, shares, compare_readers))
        elif top == "collate" and shares["collate"] >= DOMINANT_SHARE / 2 and floats(best):
            lines.append(
                f"collate/IPC takes {shares['collate']:.0%} of the sampled time at "
                f"{best.workers} workers: ship uint8 batches and normalise on the accelerator. "
                "In imgbench's loader rows a float32 3x224x224 batch cost each worker 0.8 ms per "
                "image in collate; uint8 batches cut that to 0.13 ms and took 2 workers from "
                "1.3-1.6x to 1.5-2.0x the 0-worker rate (docs/loaders.md)."
            )
        elif top == "augment":
            lines.append(
                f"augment takes the largest share of the sampled time ({shares['augment']:.0%} "
                f"at {best.workers} workers, decode {shares.get('decode', 0):.0%}): the "
                "transforms set the pace, so a faster decoder would not help; `imgbench run` "
                "times the same transforms in each augmentation library (docs/augment.md)."
            )
        elif top is not None:
            lines.append(
                f"{CATEGORY_TITLES[top]} takes the largest share of the sampled time "
                f"({shares[top]:.0%} at {best.workers} workers)."
            )
        if shares.get("unattributed", 0) >= UNATTRIBUTED_SHARE:
            lines.append(unattributed_line(shares, best.workers, top == "unattributed"))
        if shares.get("decode", 0) >= ALLOCATOR_DECODE_SHARE and results_dir is not None:
            setting = allocator_line(best.extra.get("decode_libraries", {}), results_dir)
            if setting:
                lines.append(setting)
    growth = memory_line(ok, dataset)
    if growth:
        lines.append(growth)
    return [line for line in lines if line]


def unattributed_line(shares: dict[str, float], workers: int, largest: bool) -> str:
    """Time whose role the stacks cannot tell, said as such: no advice rests on it."""
    head = "the largest share" if largest else "a large share"
    return (
        f"{head} of the sampled time ({shares['unattributed']:.0%} at {workers} workers) is "
        "unattributed: it ran inside your `__getitem__` where no frame or call on your line tells "
        "whether it reads, decodes or transforms (your own Python, or a C call imgbench's role "
        "table does not know, or two calls of different roles on one line); the flame graph shows "
        "those lines, and one library call per line lets them be attributed."
    )


def floats(config: Any) -> bool:
    """The batch holds floating-point images (3+ dimensions)."""
    return any(
        "float" in part["dtype"] and len(part["shape"]) >= 3
        for part in config.extra.get("batch_parts", [])
    )


def au_line(result: ProfileResult) -> str:
    fewest = result.fewest_workers_at_au
    ok = [c for c in result.configurations if c.status == "ok" and c.extra.get("au") is not None]
    if fewest is not None:
        config = next(c for c in ok if c.workers == fewest)
        return (
            f"{fewest} {result.unit} keep AU at {config.extra['au']:.0%} with "
            f"{result.step_label}: the fewest that reach 90%."
        )
    if not ok:
        return "no configuration finished its AU phase."
    best = max(ok, key=lambda c: c.extra["au"])
    return (
        f"no {result.unit} count reaches AU {AU_PASS:.0%} with {result.step_label}; the best is "
        f"{best.extra['au']:.0%} at {best.workers} {result.unit}: the pipeline, not the step, sets the pace."
    )


def allocator_line(libraries: dict[str, int], results_dir: Path) -> str | None:
    """The allocator setting that pays for the pipeline's decoder in imgbench's own read rows
    (``imgbench run`` with allocator sessions) in ``results_dir``, this machine's where any."""
    from imgbench.answer.advise import allocator_gains, allocator_settings
    from imgbench.machine import machine_info
    from imgbench.results.store import load_results

    library = next((lib for lib in libraries if lib in BASELINE_READER), None)
    if library is None or not Path(results_dir).is_dir():
        return None
    reader = BASELINE_READER[library].split("/")[0]
    with warnings.catch_warnings():  # an unreadable file is the store's warning, not ours
        warnings.simplefilter("ignore")
        frame = load_results(results_dir).frame
    rows = frame[(frame["stage"] == "read") & (frame["library"] == reader)]
    gains = allocator_gains(rows, machine_info().machine_id) if not rows.empty else []
    if not gains:
        return None
    gain = gains[0]
    how, variables = allocator_settings(gain.allocator, gain.recorded_env)
    settings = " ".join(f"{k}={v}" for k, v in sorted(variables.items()))
    return (
        f"the {gain.allocator} allocator pays for {library} in imgbench's read rows: "
        f"{gain.factor:.2f}x on {gain.case} ({gain.images_per_s:,.0f} vs "
        f"{gain.glibc_images_per_s:,.0f} images/s under glibc); {how}: {settings}."
    )


def worker_uss_growth(config: Any) -> float | None:
    """Mean USS growth of the configuration's workers, bytes per minute after warm-up."""
    growth = config.extra.get("uss_growth_bytes_per_min") or {}
    slopes = [v for name, v in growth.items() if name != "main" and v is not None]
    return float(sum(slopes) / len(slopes)) if slopes else None


def memory_line(ok: list[Any], dataset: Any) -> str | None:
    growing = [
        c for c in ok if c.workers > 0 and (worker_uss_growth(c) or 0) > GROWTH_BYTES_PER_MIN
    ]
    lists = python_lists(dataset)
    if not growing and not lists:
        return None
    named = ", ".join(f"`{name}` ({n:,} entries)" for name, n in lists)
    where = f"; the dataset keeps Python lists: {named}" if lists else ""
    if growing:
        worst = max(growing, key=lambda c: worker_uss_growth(c) or 0)
        head = (
            f"worker memory grows: each worker's USS +{(worker_uss_growth(worst) or 0) / 2**20:.0f}"
            f" MiB/min at {worst.workers} workers{where}."
        )
    else:
        head = f"worker memory may grow over a long run{where}."
    return (
        f"{head} Forked workers that read Python objects copy their pages (each read writes a "
        "reference count): keep indexes in NumPy arrays. In imgbench's copy-on-access rows a list "
        "of 1M paths cost each worker 122-125 MB of USS, a NumPy array 11 MB (docs/loaders.md)."
    )


def python_lists(dataset: Any) -> list[tuple[str, int]]:
    """Attributes of the dataset that are long Python lists (or tuples): copy-on-access risks."""
    found = []
    for name, value in sorted(vars(dataset).items()) if hasattr(dataset, "__dict__") else []:
        if isinstance(value, list | tuple) and len(value) >= LIST_INDEX_ENTRIES:
            found.append((name, len(value)))
    return found


def decode_line(
    libraries: dict[str, int], dataset: Any, shares: dict[str, float], compare: bool
) -> str:
    library = next((lib for lib in libraries if lib in BASELINE_READER), None)
    head = (
        f"decode takes {shares['decode']:.0%} of the sampled time ({library or 'unknown library'})"
    )
    if not compare:
        return f"{head}; `imgbench profile` without --no-readers times the other readers on your files."
    files = sample_files(dataset)
    if not files:
        return f"{head}; no JPEG files found on the dataset to try the other readers on."
    baseline = BASELINE_READER.get(library or "PIL", "pillow/open-convert")
    try:
        speeds = reader_speeds(files)
    except Exception as exc:  # advice is never worth losing the profile for
        return f"{head}; the readers could not be compared: {one_line(exc)}"
    if baseline not in speeds or not speeds:
        return f"{head}; {baseline} did not run on {len(files)} of your files."
    fastest = max(speeds, key=speeds.__getitem__)
    ratio = speeds[fastest] / speeds[baseline]
    return (
        f"{head}. On {len(files)} of your files, {fastest} "
        f"decodes {speeds[fastest]:,.0f} images/s vs {speeds[baseline]:,.0f} for {baseline}: "
        f"{ratio:.2f}x (verified against the reference decode; one thread, this machine)."
    )


def sample_files(dataset: Any, limit: int = SAMPLE_FILES) -> list[Path]:
    """JPEG files the dataset reads: from its ``samples``/``imgs`` (torchvision), from
    attributes holding paths, or from its ``root`` folder."""
    found: list[Path] = []
    for path in _candidate_paths(dataset):
        if path.suffix in JPEG_SUFFIXES and path.is_file():
            found.append(path)
            if len(found) >= limit:
                break
    return found


def _candidate_paths(dataset: Any) -> Iterator[Path]:
    values = vars(dataset).values() if hasattr(dataset, "__dict__") else []
    for value in values:
        if isinstance(value, str | os.PathLike) and Path(value).is_dir():
            yield from sorted(Path(value).rglob("*"))[:1000]
        elif isinstance(value, list | tuple) or hasattr(value, "tolist"):
            items = value.tolist() if hasattr(value, "tolist") else value
            for item in list(items)[:1000]:
                if isinstance(item, list | tuple) and item:
                    item = item[0]  # ImageFolder's (path, class)
                if isinstance(item, bytes):
                    item = os.fsdecode(item)
                if isinstance(item, str | os.PathLike):
                    yield Path(item)


def reader_speeds(files: list[Path], rounds: int = 7) -> dict[str, float]:
    """images/s of each available full-decode JPEG reader on the files, for the readers whose
    output matched the reference decode on every file: the best of ``rounds`` passes, the
    readers interleaved round by round so a slow spell of the host hits them all alike."""
    payloads = [(str(p), p.read_bytes()) for p in files]
    with warnings.catch_warnings():  # torchvision warns on every decode that its codecs are old
        warnings.simplefilter("ignore", DeprecationWarning)
        return _reader_speeds(payloads, rounds)


def _reader_speeds(payloads: list[tuple[str, bytes]], rounds: int) -> dict[str, float]:
    from imgbench.readers.registry import build_reader, readers
    from imgbench.readers.verify import verify_item

    decoders: dict[str, Any] = {}
    for spec in readers():
        if (
            spec.output != "full"
            or spec.environment != "main"
            or "jpeg" not in spec.codecs
            or "cuda" in spec.variant
            or spec.library == "pyvips"  # its thread pool deadlocks in later forks
            or spec.unmet_requirement() is not None
        ):
            continue
        try:
            decode = build_reader(spec).decode
            verdicts = [
                verify_item(decode, data, path=path, data=data, key=path, codec="jpeg")
                for path, data in payloads
            ]
        except Exception:
            continue
        if all(v.ok for v in verdicts):
            decoders[spec.key] = decode
    best = dict.fromkeys(decoders, float("inf"))
    for _ in range(rounds):
        for key, decode in decoders.items():
            start = time.perf_counter()
            for _, data in payloads:
                decode(data)
            best[key] = min(best[key], time.perf_counter() - start)
    return {key: len(payloads) / seconds for key, seconds in best.items()}
