"""libjpeg-turbo's ``tjbench``: the decode speed of the C library itself, the readers' ceiling.

``tjbench IMAGE.jpg -rgb -nowrite`` decompresses one JPEG to packed RGB in a loop for
``-benchtime`` seconds and prints the frame rate; seconds per image = 1 / frame rate. The file is
loaded into memory before the loop, so this is the ``memory`` mode of the readers. Debian ships
it in ``libjpeg-turbo-progs`` (/usr/bin/tjbench).
"""

from __future__ import annotations

import re
import shutil
import subprocess

_FRAME_RATE = re.compile(r"Decompress\s*-->\s*Frame rate:\s*([0-9.eE+]+)\s*fps")


class TjbenchError(RuntimeError):
    """tjbench could not decode a file; the message names it."""


def tjbench_path() -> str | None:
    return shutil.which("tjbench")


def tjbench_version() -> str | None:
    """The Debian package version (tjbench has no --version)."""
    if shutil.which("dpkg-query") is None:
        return None
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "libjpeg-turbo-progs"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or None


def parse_seconds_per_image(output: str) -> float:
    """Seconds per decode from tjbench's verbose output (the last decompress frame rate)."""
    rates = _FRAME_RATE.findall(output)
    if not rates:
        raise ValueError("no 'Decompress --> Frame rate' line in tjbench's output")
    fps = float(rates[-1])
    if fps <= 0:
        raise ValueError(f"tjbench reported a frame rate of {fps}")
    return 1.0 / fps


def decode_seconds(
    path: str, *, reduce: int | None = None, benchtime: float = 0.02, tjbench: str | None = None
) -> float:
    """tjbench's own mean seconds per decode of one JPEG (to RGB, 1/reduce scale if given).

    ``-stoponwarning`` makes a damaged file an error, like the readers' policy.
    """
    exe = tjbench or tjbench_path()
    if exe is None:
        raise TjbenchError("tjbench is not installed (Debian: apt-get install libjpeg-turbo-progs)")
    cmd = [exe, path, "-rgb", "-nowrite", "-stoponwarning", "-benchtime", f"{benchtime:g}"]
    cmd += ["-warmup", "0"]
    if reduce and reduce != 1:
        cmd += ["-scale", f"1/{reduce}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stderr + proc.stdout).strip().splitlines()
        raise TjbenchError(f"tjbench on {path}: {lines[-1] if lines else proc.returncode}")
    try:
        return parse_seconds_per_image(proc.stdout)
    except ValueError as exc:
        raise TjbenchError(
            f"tjbench on {path}: {_problem(proc.stdout + proc.stderr) or exc}"
        ) from None


def _problem(output: str) -> str | None:
    """tjbench prints 'WARNING/ERROR in line N ...:' then the libjpeg message, and exits 0."""
    lines = [line.strip() for line in output.splitlines()]
    for i, line in enumerate(lines):
        if line.startswith(("WARNING", "ERROR")):
            detail = lines[i + 1] if i + 1 < len(lines) and lines[i + 1] else ""
            return f"{line} {detail}".strip()
    return None
