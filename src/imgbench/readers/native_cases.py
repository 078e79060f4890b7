"""tjbench cases: stage ``native``, on the same JPEGs as the readers, timed by tjbench itself."""

from __future__ import annotations

from functools import partial
from typing import Any

from imgbench.measure.case import Case, Workload
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed, Skip
from imgbench.readers.libs.tjbench import (
    TjbenchError,
    decode_seconds,
    tjbench_path,
    tjbench_version,
)

BENCHTIME_S = 0.02  # tjbench's own loop per image and round: it reports the mean decode time


def tjbench_case(reduce: int | None) -> Case:
    params: dict[str, Any] = {"codec": "jpeg", "mode": "memory", "threads": 1}
    if reduce:
        params["reduce"] = reduce
    return Case(
        stage="native",
        library="tjbench",
        variant="decompress-rgb-scaled" if reduce else "decompress-rgb",
        prepare=prepare_tjbench,
        params=params,
        check=_check,
    )


def _check() -> str | None:
    if tjbench_path() is None:
        return "tjbench: not installed (Debian: apt-get install libjpeg-turbo-progs)"
    return None


def prepare_tjbench(ctx: CaseContext, case: Case) -> Workload:

    reduce = case.params.get("reduce")
    entries = ctx.entries("jpeg")
    if not entries:
        raise Skip(f"dataset {ctx.dataset.name} has no jpeg images")
    exe = tjbench_path()
    run = partial(decode_seconds, reduce=reduce, benchtime=BENCHTIME_S, tjbench=exe)
    kept, excluded = [], []
    for entry in entries:  # one untimed run per image: tjbench must decode it at all
        path = str(ctx.path(entry))
        try:
            run(path)
        except TjbenchError as exc:
            excluded.append({"path": entry.path, "reason": str(exc)})
            continue
        kept.append(entry)
    if not kept:
        raise CaseFailed(
            f"tjbench failed on all {len(excluded)} jpeg images, e.g. {excluded[0]['reason']}",
        )
    pixels = sum(
        (-(-e.width // reduce)) * (-(-e.height // reduce)) if reduce else e.width * e.height
        for e in kept
    )
    return Workload(
        items=[str(ctx.path(e)) for e in kept],
        fn=run,
        bytes_per_round=sum(e.bytes for e in kept),
        megapixels_per_round=pixels / 1e6,
        cache_method="n/a: tjbench loads the file into memory before its timed loop",
        self_timed=True,
        library_version=tjbench_version(),
        extra={
            "tool": exe,
            "command": f"tjbench IMAGE -rgb -nowrite -stoponwarning -benchtime {BENCHTIME_S}"
            + (f" -scale 1/{reduce}" if reduce else ""),
            "verified_images": len(kept),
            "excluded_images": excluded,
        },
    )
