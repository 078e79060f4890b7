"""The dataset tools pin glibc's mmap threshold (heap.py); benchmark processes never do."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from imgbench.datasets.manifest import DatasetError

SRC = Path(__file__).resolve().parents[2] / "src"

# glibc raises the threshold when a mapped chunk is freed; pinned, a 200 KB buffer allocated after
# a 1 MB one is still its own mapping: its pages go back to the kernel when it is freed, while
# holes in the heap stay resident
CHILD = textwrap.dedent(
    """
    import sys
    if sys.argv[1] == "pin":
        from imgbench.datasets.heap import pin_mmap_threshold
        assert pin_mmap_threshold()

    def anon_kib():
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                return int(line.split()[1])

    big = bytearray(1 << 20)
    del big  # a freed 1 MiB mapping: glibc moves the threshold to 1 MiB unless it is pinned
    held = [bytearray(200_000) for _ in range(200)]  # 40 MB, each touched by the zero fill
    before = anon_kib()
    del held[::2]  # every other one: in the heap, 20 MB of holes that cannot be trimmed
    print(before - anon_kib())
    """
)


def _returned_kib(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        check=True,
        timeout=60,
    )
    return int(done.stdout.strip())


def test_pinned_threshold_returns_freed_payload_buffers() -> None:
    moving, pinned = _returned_kib("moving"), _returned_kib("pin")
    assert pinned > 15_000, f"pinned: only {pinned} KiB of 20 MB of freed buffers went back"
    assert moving < 5_000, f"unpinned glibc gave back {moving} KiB: the check lost its contrast"


def test_convert_pins_the_threshold(monkeypatch, tmp_path: Path) -> None:
    import imgbench.formats.convert as convert_module

    calls = []
    monkeypatch.setattr(convert_module, "pin_mmap_threshold", lambda: calls.append(1) or True)
    with pytest.raises(DatasetError):  # an empty folder, after the pin: the pin is what is checked
        convert_module.convert(tmp_path, object(), tmp_path / "out", workers=1, progress=False)  # type: ignore[arg-type]
    assert calls == [1]
