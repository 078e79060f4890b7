"""The scale benchmark of the dataset tools: generate N images, convert them, extrapolate to 1M.

    .venv/bin/python lab/bench_datasets.py --n 100000 --formats lmdb tar parquet

1. The generator against its floor, in the same run: ``imgbench.datasets.encode_bound.measure``
   times the generator's per-image work and encoding the same images alone, chunk by chunk on
   every core (``--rounds`` rounds of ``--ratio-n`` images; the median ratio is the figure).
2. ``imgbench dataset synth`` at N/10 and at N, each in its own process: images/s end to end (pool
   start and texture banks included) against the encode bound of step 1, and peak RSS (the
   high-water mark, VmHWM, of the largest process and of all of them summed, sampled every
   0.5 s over the process tree).
3. ``imgbench dataset scan`` of the N images (the decode check every conversion starts with), then
   the read bound (read + SHA-256 of every source file, one process, warm page cache: what the
   writer does per record before writing), then ``imgbench dataset convert`` to each format at
   N/10 and N: images/s of the write phase against the read bound, peak RSS, bytes on disk.
4. Extrapolation to 1M images: hours per step and the disk needed.

Rates on a shared machine move with its neighbours: the load average is printed beside every
step, and the ratios are what to compare between machines. Files go under ``--dir`` (removed at
the end unless ``--keep``).

Nothing is deleted before the last step. On ext4 without a journal (this machine's disk), creating
a file skips, one by one, every inode of its block group deleted in the last 60 s (360 s while the
inode's table block is still dirty): ``recently_deleted()`` in ``find_inode_bit``, seen with
``perf``. After deleting a few thousand files, each ``open(O_CREAT)`` took 220-530 us of CPU
against 22-55 us, which is a quarter of a generator worker's time. So the ratio rounds keep their
files, a previous run's folder is moved aside and removed at the end, and a probe times file
creation before each generating step (``create_us``); while it is slow, the step waits for the
freed inodes to age, up to ``--settle-s`` (``settled_s``), so that the state is on record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from imgbench.datasets.encode_bound import measure  # noqa: E402
from imgbench.datasets.synth import SynthSpec, parse_size  # noqa: E402
from imgbench.formats.base import read_meta  # noqa: E402


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} cores"


def _memory(pid: int) -> dict[str, int]:
    """VmHWM (the kernel's peak RSS), and the RSS now split into anonymous and file-backed pages
    (a store's memory map counts as RSS while its pages are touched, and the kernel can drop
    them): bytes, from /proc/PID/status."""
    found = dict.fromkeys(("VmHWM", "RssAnon", "RssFile"), 0)
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                key = line.split(":", 1)[0]
                if key in found:
                    found[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return found


def run_measured(args: list[str]) -> dict[str, Any]:
    """Run a command; its wall time and the peak RSS of its process tree (VmHWM per process)."""
    start = time.perf_counter()
    env = {**os.environ, "COLUMNS": "400"}  # one summary line, not wrapped
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    peaks: dict[int, int] = {}  # VmHWM per process
    anon: dict[int, int] = {}  # the largest RssAnon sampled per process (every 0.5 s)
    mapped: dict[int, int] = {}  # the same for RssFile
    done = threading.Event()

    def sample() -> None:
        root = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                pids = [root.pid] + [c.pid for c in root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            for pid in pids:
                now = _memory(pid)
                peaks[pid] = max(peaks.get(pid, 0), now["VmHWM"])
                anon[pid] = max(anon.get(pid, 0), now["RssAnon"])
                mapped[pid] = max(mapped.get(pid, 0), now["RssFile"])
            done.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = proc.communicate()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{output.decode()[-2000:]}")
    return {
        "seconds": seconds,
        "peak_rss_max_mib": max(peaks.values(), default=0) / 2**20,
        "peak_rss_sum_mib": sum(peaks.values()) / 2**20,
        "peak_anon_max_mib": max(anon.values(), default=0) / 2**20,
        "peak_file_max_mib": max(mapped.values(), default=0) / 2**20,
        "processes": len(peaks),
        "output": output.decode(errors="replace").strip().splitlines()[-1:],
    }


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "imgbench.cli", *args]


def read_bound(root: Path) -> float:
    """Images/s of reading and hashing every image file under ``root`` (one process)."""
    files = [p for p in root.rglob("*.jpg")]
    start = time.perf_counter()
    for path in files:
        hashlib.sha256(path.read_bytes()).digest()
    return len(files) / (time.perf_counter() - start)


SLOW_CREATE_US = 60.0  # 21-31 us with no inode freed in the last minutes, 205-592 us after
SETTLE_STEP_S = 30.0


def creation_probe(folder: Path, files: int = 500) -> float:
    """Microseconds of CPU per ``open(O_CREAT)`` of a new 80 KB file in ``folder`` (kept: deleting
    them would slow the next creations, see the module's docstring)."""
    folder.mkdir(parents=True)
    data = os.urandom(80_000)
    spent = 0.0
    for i in range(files):
        start = time.process_time()
        fd = os.open(folder / f"{i:05d}.jpg", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        spent += time.process_time() - start
        os.write(fd, data)
        os.close(fd)
    return spent / files * 1e6


def folder_bytes(root: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="images to generate")
    parser.add_argument("--small", type=int, default=None, help="the smaller N (default N/10)")
    parser.add_argument("--formats", nargs="+", default=["lmdb", "tar", "parquet"])
    parser.add_argument("--sizes", default="imagenet", help="'imagenet', or a size like 500x375")
    parser.add_argument("--detail", default="medium")
    parser.add_argument("--ratio-n", type=int, default=2000, help="images per ratio round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=ROOT / "datasets" / ".cache" / "bench-scale")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument(
        "--settle-s",
        type=float,
        default=420.0,
        help="wait up to this long for file creation to be cheap again before a generating step",
    )
    opts = parser.parse_args()
    small = opts.small or max(1, opts.n // 10)
    size_args = ["--sizes", "imagenet"] if opts.sizes == "imagenet" else ["--size", opts.sizes]
    fixed = None if opts.sizes == "imagenet" else parse_size(opts.sizes)
    work = opts.dir
    stale = work.with_name(f"{work.name}.stale-{os.getpid()}")
    if work.exists():  # removed at the end: deleting it now would slow every creation after it
        work.rename(stale)
    work.mkdir(parents=True)
    figures: dict[str, Any] = {"n": opts.n, "small": small, "sizes": opts.sizes, "rounds": []}
    probes = 0

    def probe(step: str) -> float:
        """Time file creation; while it is slow (inodes freed in the last minutes: see the
        docstring), wait and probe again, up to ``--settle-s``."""
        nonlocal probes
        waited = 0.0
        while True:
            probes += 1
            value = creation_probe(work / f"probe-{probes}")
            print(f"file creation before {step}: {value:,.0f} us of CPU per file [{load()}]")
            if value <= SLOW_CREATE_US or waited >= opts.settle_s:
                break
            print(f"  slow: waiting {SETTLE_STEP_S:.0f} s for the freed inodes to age", flush=True)
            time.sleep(SETTLE_STEP_S)
            waited += SETTLE_STEP_S
        figures.setdefault("create_us", {})[step] = value
        figures.setdefault("settled_s", {})[step] = waited
        return value

    def ratio_round(r: int) -> dict[str, Any]:
        spec = SynthSpec(
            opts.ratio_n,
            size=fixed,
            sizes=None if fixed else "imagenet",
            detail=level,
            seed=r,
        )
        os.sync()  # each step starts with no dirty pages of the one before (untimed)
        result = measure(spec, work / f"ratio-{r}")  # kept until the end (see the docstring)
        row = {
            "ratio": result.ratio,
            "generate_per_s": result.generate_per_s,
            "encode_bound_per_s": result.encode_bound_per_s,
            "compose_share": result.compose_s / result.generate_s,
            "write_share": result.write_s / result.generate_s,
            "load": load(),
        }
        figures["rounds"].append(row)
        print(
            f"ratio round {r}: generator {row['generate_per_s']:,.0f} img/s vs encode bound "
            f"{row['encode_bound_per_s']:,.0f} img/s = {row['ratio']:.1%} (compose "
            f"{row['compose_share']:.1%}, write {row['write_share']:.1%} of the generator's "
            f"time) [{row['load']}]",
            flush=True,
        )
        return row

    from imgbench.datasets.detail import parse_detail

    level = parse_detail(opts.detail, 90)
    try:
        # 1. the generator against encoding the same images alone
        probe("the ratio rounds")
        for r in range(opts.rounds):
            ratio_round(r)
        bound = statistics.median(r["encode_bound_per_s"] for r in figures["rounds"])

        # 2. end to end at two sizes
        for n in (small, opts.n):
            out = work / f"synth-{n}"
            os.sync()
            probe(f"synth {n:,}")
            before = load()
            args = ["--out", str(out), "--n", str(n), *size_args, "--detail", opts.detail]
            run = run_measured(cli("dataset", "synth", *args))
            run.update(rate=n / run["seconds"], load=before, bytes=folder_bytes(out))
            figures[f"synth_{n}"] = run
            print(
                f"synth {n:,}: {run['rate']:,.0f} img/s end to end ({run['rate'] / bound:.1%} of "
                f"the median encode bound), peak RSS {run['peak_rss_max_mib']:,.0f} MiB largest "
                f"process / {run['peak_rss_sum_mib']:,.0f} MiB all {run['processes']}, "
                f"{run['bytes'] / n / 1e3:,.1f} KB/image on disk [{before}]",
                flush=True,
            )

        # the bound again after the long run: the host's speed drifts over minutes
        ratio_round(opts.rounds)
        figures["ratio_median"] = statistics.median(r["ratio"] for r in figures["rounds"])
        bound = statistics.median(r["encode_bound_per_s"] for r in figures["rounds"])
        figures["encode_bound_median"] = bound
        for n in (small, opts.n):
            run = figures[f"synth_{n}"]
            run["of_bound"] = run["rate"] / bound
            print(
                f"synth {n:,}: {run['of_bound']:.1%} of the median encode bound of all "
                f"{len(figures['rounds'])} rounds ({bound:,.0f} img/s)",
                flush=True,
            )

        # 3. scan, read bound, conversions
        for n in (small, opts.n):
            src = work / f"synth-{n}"
            before = load()
            run = run_measured(cli("dataset", "scan", str(src)))
            figures[f"scan_{n}"] = {**run, "rate": n / run["seconds"], "load": before}
            print(
                f"scan {n:,}: {n / run['seconds']:,.0f} img/s (decode check), peak RSS "
                f"{run['peak_rss_max_mib']:,.0f} MiB largest process (sampled: anonymous "
                f"{run['peak_anon_max_mib']:,.0f}, file-backed {run['peak_file_max_mib']:,.0f}) "
                f"[{before}]",
                flush=True,
            )
            reads = read_bound(src)
            figures[f"read_bound_{n}"] = reads
            print(f"read bound {n:,}: {reads:,.0f} img/s (read + SHA-256) [{load()}]", flush=True)
            for name in opts.formats:
                store = work / f"store-{n}.{name}"
                os.sync()
                before = load()
                run = run_measured(
                    cli("dataset", "convert", str(src), "--to", name, "--out", str(store))
                )
                meta = read_meta(store)
                found = re.search(r"write ([\d,]+) images/s", " ".join(run["output"]))
                write_rate = float(found.group(1).replace(",", "")) if found else 0.0
                run.update(rate=meta.count / run["seconds"], write_rate=write_rate, load=before)
                run.update(bytes_on_disk=meta.bytes_on_disk, records=meta.count)
                figures[f"convert_{name}_{n}"] = run
                print(
                    f"convert {n:,} -> {name}: write phase {write_rate:,.0f} img/s "
                    f"({write_rate / reads:.1%} of the read bound), {run['rate']:,.0f} img/s "
                    f"end to end (process start and cached scan included), peak RSS "
                    f"{run['peak_rss_max_mib']:,.0f} MiB (sampled: anonymous "
                    f"{run['peak_anon_max_mib']:,.0f}, file-backed {run['peak_file_max_mib']:,.0f}), "
                    f"{meta.bytes_on_disk / 1e9:,.2f} GB "
                    f"[{before}]",
                    flush=True,
                )
                # every store is removed at the end with the rest (see the docstring)

        # 4. extrapolation to a million images
        n = opts.n
        synth = figures[f"synth_{n}"]
        print(f"\nextrapolated to 1,000,000 images (from N = {n:,}):")
        scan_rate = figures[f"scan_{n}"]["rate"]
        print(f"  scan (decode check, once for all conversions): {1e6 / scan_rate / 3600:,.2f} h")
        print(
            f"  generate: {1e6 / synth['rate'] / 3600:,.2f} h, "
            f"{synth['bytes'] / n * 1e6 / 1e9:,.0f} GB"
        )
        total = synth["bytes"] / n * 1e6
        for name in opts.formats:
            run = figures[f"convert_{name}_{n}"]
            size = run["bytes_on_disk"] / run["records"] * 1e6
            total += size
            hours = 1e6 / run["rate"] / 3600
            print(f"  convert -> {name}: {hours:,.2f} h (after one scan), {size / 1e9:,.0f} GB")
        print(f"  disk for the images and all {len(opts.formats)} stores: {total / 1e9:,.0f} GB")
        figures["disk_1m_gb"] = total / 1e9
    finally:
        shutil.rmtree(stale, ignore_errors=True)
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    if opts.json:
        opts.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
