"""The generator's writer thread: every file written whole, in order, and a failed write raised."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from imgbench.datasets import writer as writer_module
from imgbench.datasets.writer import BackgroundWriter


def test_every_queued_file_is_written_whole(tmp_path: Path) -> None:
    payloads = {tmp_path / f"{i:03d}.bin": bytes([i % 251]) * (1000 + 997 * i) for i in range(40)}
    with BackgroundWriter(depth=4) as writer:
        for path, data in payloads.items():
            writer.put(path, data)
    assert {p: p.read_bytes() for p in payloads} == payloads


def test_drain_waits_for_the_queue(tmp_path: Path) -> None:
    writer = BackgroundWriter(depth=2)
    try:
        for i in range(10):
            writer.put(tmp_path / f"{i}.bin", b"x" * 100_000)
        writer.drain()
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{i}.bin" for i in range(10))
    finally:
        writer.close()
    assert not writer._thread.is_alive()


def test_a_failed_write_is_raised_and_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "a.jpg"
    with pytest.raises(FileNotFoundError) as caught, BackgroundWriter() as writer:
        writer.put(missing, b"data")
        writer.put(tmp_path / "b.jpg", b"data")  # dropped: the worker is failing
    assert str(missing) in str(caught.value)
    assert not writer._thread.is_alive()


def test_put_waits_while_the_queue_is_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory is bounded: with the thread stuck, the caller blocks after ``depth`` queued files."""
    release = threading.Event()
    real_write = writer_module.write_file

    def slow_write(path: Path, data: bytes) -> None:
        release.wait(10)
        real_write(path, data)

    monkeypatch.setattr(writer_module, "write_file", slow_write)
    writer = BackgroundWriter(depth=2)
    queued = []

    def producer() -> None:
        for i in range(6):
            writer.put(tmp_path / f"{i}.bin", b"y")
            queued.append(i)

    thread = threading.Thread(target=producer)
    thread.start()
    thread.join(0.5)
    # one file taken by the stuck thread, two queued: the fourth put waits
    assert len(queued) == 3 and thread.is_alive()
    release.set()
    thread.join(10)
    writer.drain()
    writer.close()
    assert len(list(tmp_path.iterdir())) == 6


def test_make_images_raises_a_write_error(tmp_path: Path) -> None:
    """A worker's failed write reaches the generator (no half-silent dataset)."""
    from imgbench.datasets.synth import SynthSpec, make_images

    spec = SynthSpec(4, size=(64, 48), classes=2)
    (tmp_path / "class_000").mkdir()  # class_001 missing
    with pytest.raises(FileNotFoundError, match="class_001"):
        make_images((spec, str(tmp_path), 0, 4, None))
