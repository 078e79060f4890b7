"""The verification that guards every timing and backs `imgbench verify readers`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from imgbench.readers.verify import (
    ReferenceCache,
    compare,
    pixel_limit_problem,
    reference_decode,
    tolerance,
    verify_item,
)
from tests.readers.images import jpeg_bomb, photo, photo_bytes, png_bomb


def test_compare_accepts_the_reference_and_names_each_problem() -> None:
    ref = photo("coffee")
    assert compare(ref.copy(), ref, codec="png", output="full") == (None, 0.0)
    problem, _ = compare(np.ascontiguousarray(ref[..., ::-1]), ref, codec="jpeg", output="full")
    assert problem and problem.startswith("channels in BGR order")
    problem, _ = compare(ref[:-2], ref, codec="jpeg", output="full")
    assert problem and "shape" in problem
    problem, _ = compare(ref.astype(np.float32), ref, codec="jpeg", output="full")
    assert problem and "dtype float32" in problem
    problem, _ = compare(ref[:, ::2], ref[:, ::2].copy(), codec="jpeg", output="full")
    assert problem == "array is not C-contiguous"
    noisy = np.clip(ref.astype(np.int16) + 5, 0, 255).astype(np.uint8)
    problem, mae = compare(noisy, ref, codec="jpeg", output="full")
    assert problem and "tolerance 2" in problem and mae > 4


def test_reduced_outputs_may_differ_by_one_row_or_column() -> None:
    ref = photo("chelsea")[:75, :113].copy()
    assert compare(ref[:, :112].copy(), ref, codec="jpeg", output="reduced")[0] is None
    assert compare(ref[:, :111].copy(), ref, codec="jpeg", output="reduced")[0] is not None
    assert compare(ref[:, :112].copy(), ref, codec="jpeg", output="full")[0] is not None


def test_tolerances_are_stated() -> None:
    assert tolerance("png", "full") == 1.0
    assert tolerance("jpeg", "full") == tolerance("webp", "full") == 2.0
    assert tolerance("jpeg", "reduced") == tolerance("jpeg", "resize") == 4.0


def test_verify_item_reports_errors_and_reference_failures() -> None:
    data = photo_bytes("coffee", "jpeg")

    def broken(_: bytes) -> np.ndarray:
        raise OSError("decoder exploded")

    verdict = verify_item(broken, data, path="a.jpg", data=data, key="k1", codec="jpeg")
    assert not verdict.ok and verdict.detail == "error: OSError: decoder exploded"
    truncated = data[:4000]
    verdict = verify_item(
        lambda _: photo("coffee"), truncated, path="t.jpg", data=truncated, key="k2", codec="jpeg"
    )
    assert not verdict.ok and "reference decode failed" in verdict.detail


@pytest.mark.parametrize("bomb", [png_bomb, jpeg_bomb], ids=["png", "jpeg"])
def test_bombs_never_reach_the_reader(bomb: Callable[[], bytes]) -> None:
    data = bomb()
    calls: list[bytes] = []
    verdict = verify_item(calls.append, data, path="bomb", data=data, key="b", codec="png")
    assert calls == [] and not verdict.ok
    assert verdict.detail.startswith("decompression bomb")
    assert pixel_limit_problem(photo_bytes("coffee", "png")) is None
    small_limit = pixel_limit_problem(photo_bytes("coffee", "png"), limit=1000)
    assert small_limit and "600x400" in small_limit


def test_reference_cache_is_bounded_and_remembers_failures() -> None:
    cache = ReferenceCache(max_bytes=photo("coffee").nbytes)
    data = photo_bytes("coffee", "png")
    first = cache.get("c", data, None)
    assert isinstance(first, np.ndarray) and cache.get("c", data, None) is first
    assert np.array_equal(first, reference_decode(data))
    reduced = cache.get("c", data, 4)  # over budget: computed, not stored
    assert isinstance(reduced, np.ndarray) and reduced.shape == (100, 150, 3)
    assert cache.get("c", data, 4) is not reduced
    assert isinstance(cache.get("bad", b"nope", None), str)
