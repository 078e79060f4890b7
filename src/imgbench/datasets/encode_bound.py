"""The generator's floor: encoding the same images alone, measured beside the generator itself.

The generator cannot be faster than JPEG encoding of its own images, so its speed is judged as a
fraction of that bound, never as a bare rate (this machine's rates move 2x with its neighbours).
Each worker takes chunks of image indices; for every chunk it composes the images untimed, then
times generating them (compose, encode, write the file: the generator's per-image steps, each
timed; handing a file to the writer thread and the final wait for it count as writing) and
encoding the kept images alone, in alternating order, so both figures share the moment, the core
and the images. ``lab/bench_datasets.py`` reports the ratio; no unit test times it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .parallel import cpu_count, imap
from .synth import SynthSpec, encode, relative_path, render
from .writer import BackgroundWriter

CHUNK = 8  # images composed and held at once per worker (a large 2600x1950 image is 20 MB)


@dataclass(frozen=True)
class BoundResult:
    """Seconds per image of the generator and of encoding alone, summed over workers."""

    images: int
    workers: int
    generate_s: float  # compose + encode + write, per image, summed
    encode_s: float  # encoding the same images alone
    compose_s: float = 0.0  # the generator's share spent composing
    write_s: float = 0.0  # ... and writing files

    @property
    def ratio(self) -> float:
        """Generator rate / encode-bound rate (1.0: generating costs nothing but the encode)."""
        return self.encode_s / self.generate_s if self.generate_s else 0.0

    @property
    def encode_bound_per_s(self) -> float:
        """Images/s of encoding alone on ``workers`` cores."""
        return self.images * self.workers / self.encode_s if self.encode_s else 0.0

    @property
    def generate_per_s(self) -> float:
        """Images/s of the generator's per-image work on ``workers`` cores (no start-up)."""
        return self.images * self.workers / self.generate_s if self.generate_s else 0.0


def _time_chunk(job: tuple[SynthSpec, str, int, int]) -> tuple[int, float, float, float, float]:
    spec, out, start, stop = job
    images = [render(spec, i) for i in range(start, stop)]  # untimed; builds the banks once
    clock = time.perf_counter

    def generate() -> tuple[float, float, float]:
        compose_s = encode_s = write_s = 0.0
        with BackgroundWriter() as writer:  # make_images' steps, each timed
            for index in range(start, stop):
                t0 = clock()
                image = render(spec, index)
                t1 = clock()
                data = encode(image, spec.codec, spec.quality, spec.subsampling)
                t2 = clock()
                writer.put(Path(out) / relative_path(spec, index), data)
                t3 = clock()
                compose_s, encode_s, write_s = (
                    compose_s + t1 - t0,
                    encode_s + t2 - t1,
                    write_s + t3 - t2,
                )
            t4 = clock()
            writer.drain()  # the chunk's files are on disk (in the page cache) before it ends
            write_s += clock() - t4
        return compose_s, encode_s, write_s

    def encode_alone() -> float:
        begin = clock()
        for image in images:
            encode(image, spec.codec, spec.quality, spec.subsampling)
        return clock() - begin

    if (start // CHUNK) % 2:
        alone = encode_alone()
        parts = generate()
    else:
        parts = generate()
        alone = encode_alone()
    return stop - start, sum(parts), alone, parts[0], parts[2]


def measure(spec: SynthSpec, out: Path, *, workers: int | None = None) -> BoundResult:
    """Generate ``spec`` into ``out`` chunk by chunk, timing it against encoding alone."""
    out = Path(out)
    for label in range(min(spec.classes, spec.n)):
        (out / f"class_{label:03d}").mkdir(parents=True, exist_ok=True)
    n_workers = max(1, min(workers or cpu_count(), spec.n // CHUNK or 1))
    jobs = ((spec, str(out), s, min(spec.n, s + CHUNK)) for s in range(0, spec.n, CHUNK))
    totals = [0.0] * 5
    for row in imap(_time_chunk, jobs, workers=n_workers, chunksize=1):
        totals = [a + b for a, b in zip(totals, row, strict=True)]
    images, generate_s, encode_s, compose_s, write_s = totals
    return BoundResult(int(images), n_workers, generate_s, encode_s, compose_s, write_s)
