"""Reader cases: every registered reader × codec × thread mode, decoding from bytes in memory."""

from __future__ import annotations

from imgbench.harness.case import Case, Workload
from imgbench.harness.context import CaseContext
from imgbench.profiles import Profile
from imgbench.readers.base import CODECS, ReaderSpec, check_contract
from imgbench.readers.registry import READERS, build_reader


def reader_cases(profile: Profile) -> list[Case]:
    cases: list[Case] = []
    for spec in READERS:
        for codec in CODECS:
            for threads in profile.thread_modes:
                cases.append(
                    Case(
                        stage="read",
                        library=spec.library,
                        variant=spec.variant,
                        prepare=_prepare_memory_decode,
                        params={"codec": codec, "mode": "memory", "threads": threads},
                        requires=spec.requires,
                        dist=spec.dist,
                        check=_codec_check(spec, codec),
                    )
                )
    return cases


def _codec_check(spec: ReaderSpec, codec: str):  # type: ignore[no-untyped-def]
    def check() -> str | None:
        if codec not in spec.codecs:
            return f"{spec.library}: does not decode {codec}"
        return None

    return check


def _spec_of(case: Case) -> ReaderSpec:
    return next(s for s in READERS if (s.library, s.variant) == (case.library, case.variant))


def _prepare_memory_decode(ctx: CaseContext, case: Case) -> Workload:
    import pytest

    codec = case.params["codec"]
    encoded = ctx.encoded(codec)
    if not encoded:
        pytest.skip(f"dataset {ctx.dataset.name} has no {codec} images")
    reader = build_reader(_spec_of(case))
    for entry, data in encoded:  # contract check on every image, outside the timing
        check_contract(
            reader.decode(data),  # type: ignore[attr-defined]
            who=f"{case.library}/{case.variant} on {entry.path}",
            expected_shape=(entry.height, entry.width),
        )
    payloads = [data for _, data in encoded]
    return Workload(
        items=payloads,
        fn=reader.decode,  # type: ignore[attr-defined]
        bytes_per_round=sum(len(p) for p in payloads),
        megapixels_per_round=sum(e.width * e.height for e, _ in encoded) / 1e6,
        cache_method="n/a: bytes preloaded in memory",
    )
