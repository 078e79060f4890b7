"""Round trip of a built format: every record read back and compared with its source file.

Bytes formats must return the source file's bytes exactly; array formats exactly the array
:func:`imgbench.formats.base.fixed_array` makes from the source. Labels must match too, by random
access and by sequential iteration. One pure function, so that ``imgbench verify formats`` and
the format cases (once per built store, before timing) judge a store the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from imgbench.formats.base import (
    BaseReader,
    FormatSpec,
    Payload,
    class_names,
    fixed_array,
    open_format,
    read_keys,
)

if TYPE_CHECKING:
    from imgbench.datasets.manifest import ImageEntry

MAX_MESSAGES = 5
DECODE_CHECK_RECORDS = 4  # payload="decode" cases: records decoded and compared with Pillow


@dataclass
class RoundTrip:
    """What reading a store back gave: records compared, and what differed (capped messages)."""

    format: str
    records: int = 0
    problems: int = 0  # every difference found; ``messages`` keeps the first few
    messages: list[str] = field(default_factory=list)
    error: str | None = None  # the reader raised: the round trip stopped there

    @property
    def ok(self) -> bool:
        return self.problems == 0 and self.error is None

    def note(self, message: str, limit: int = MAX_MESSAGES) -> None:
        self.problems += 1
        if len(self.messages) < limit:
            self.messages.append(message)

    def reason(self) -> str:
        """One line for a failed row: the format, the first record that differs and how."""
        if self.error is not None:
            return f"{self.format}: round trip failed: read failed: {self.error}"
        others = self.problems - 1
        more = f" (and {others} more difference{'s' if others > 1 else ''})" if others else ""
        first = self.messages[0] if self.messages else "differs"
        return f"{self.format}: round trip failed: {first}{more}"


def expected_payload(stores: str, data: bytes) -> Payload:
    """What a store must return for a source file: its bytes, or its fixed-size array."""
    return data if stores == "bytes" else fixed_array(data)


def difference(payload: object, expected: Payload) -> str | None:
    """What differs between a payload read back and the one expected, or None when equal."""
    if isinstance(expected, bytes):
        if not isinstance(payload, bytes):
            return f"payload is {type(payload).__name__}, expected bytes"
        if payload == expected:
            return None
        if len(payload) != len(expected):
            return f"{len(payload)} bytes, the source has {len(expected)}"
        got, want = np.frombuffer(payload, np.uint8), np.frombuffer(expected, np.uint8)
        at = int(np.flatnonzero(got != want)[0])
        n = int(np.count_nonzero(got != want))
        return (
            f"byte {at} of {len(expected)} is 0x{got[at]:02x}, the source has 0x{want[at]:02x}"
            f" ({n} byte{' differs' if n == 1 else 's differ'})"
        )
    if not isinstance(payload, np.ndarray):
        return f"payload is {type(payload).__name__}, expected a {expected.shape} array"
    if payload.dtype != expected.dtype or payload.shape != expected.shape:
        return f"array {payload.shape} {payload.dtype}, expected {expected.shape} {expected.dtype}"
    if np.array_equal(payload, expected):
        return None
    wrong = payload != expected
    where = tuple(int(i) for i in np.argwhere(wrong)[0])
    return (
        f"{int(np.count_nonzero(wrong))} of {expected.size} values differ, first at {where}: "
        f"{payload[where]} vs {expected[where]}"
    )


def _fingerprint(payload: object) -> tuple[Any, ...]:
    """Type, shape and content hash: the sequential pass compares these, not decoded arrays."""
    if isinstance(payload, bytes):
        return ("bytes", len(payload), hashlib.sha256(payload).digest())
    if isinstance(payload, np.ndarray):
        data = np.ascontiguousarray(payload).tobytes()
        return ("array", payload.shape, payload.dtype.str, hashlib.sha256(data).digest())
    return (type(payload).__name__,)


def wanted_records(entries: Sequence[ImageEntry], skipped: Iterable[str]) -> list[tuple[str, int]]:
    """(source path, label) of every record a store built from ``entries`` must hold, in order."""
    classes = {name: i for i, name in enumerate(class_names(entries))}
    left_out = set(skipped)
    return [
        (e.path, classes[e.label] if e.label is not None else -1)
        for e in entries
        if e.path not in left_out
    ]


def round_trip(
    spec: FormatSpec,
    path: Path,
    root: Path,
    entries: Sequence[ImageEntry],
    skipped: Iterable[str] = (),
    *,
    max_messages: int = MAX_MESSAGES,
) -> RoundTrip:
    """Read every record of the store at ``path`` back, by index and in order; never raises."""
    return check_reader(
        spec.name,
        spec.stores,
        lambda: read_keys(path),
        lambda: open_format(spec, path),
        root,
        entries,
        skipped,
        max_messages=max_messages,
    )


def check_reader(
    name: str,
    stores: str,
    keys: Callable[[], list[tuple[str, int]]],
    open_reader: Callable[[], BaseReader],
    root: Path,
    entries: Sequence[ImageEntry],
    skipped: Iterable[str] = (),
    *,
    max_messages: int = MAX_MESSAGES,
) -> RoundTrip:
    """The round trip of any store (a folder, or a prefix of an object store): its key list,
    then every record by index and in order, each against its source file; never raises."""
    result = RoundTrip(name)
    wanted = wanted_records(entries, skipped)

    def note(message: str) -> None:
        result.note(message, max_messages)

    def expected(rel: str) -> Payload:
        return expected_payload(stores, (Path(root) / rel).read_bytes())

    try:
        if keys() != wanted:
            note("record order or labels in the key list differ from the manifest")
        with open_reader() as reader:
            if len(reader) != len(wanted):
                note(f"{len(reader)} records, expected {len(wanted)}")
            prints = _check_random_access(reader, wanted, expected, note)
            _check_sequential(reader, wanted, prints, expected, note)
            result.records = min(len(reader), len(wanted))
    except Exception as exc:  # a reader that breaks is a finding, not a crash of the caller
        result.error = f"{type(exc).__name__}: {exc}"
    return result


def _check_random_access(
    reader: BaseReader,
    wanted: list[tuple[str, int]],
    expected: Callable[[str], Payload],
    note: Callable[[str], None],
) -> list[tuple[Any, ...]]:
    """Every record by index against its source; the sources' fingerprints, in order (an
    array format decodes each source once)."""
    prints = []
    for i, (rel, label) in enumerate(wanted[: len(reader)]):
        want = expected(rel)
        prints.append(_fingerprint(want))
        payload, got = reader[i]
        if problem := difference(payload, want):
            note(f"record {i} ({rel}), random access: {problem}")
        if got != label:
            note(f"record {i} ({rel}), random access: label {got}, expected {label}")
    return prints


def _check_sequential(
    reader: BaseReader,
    wanted: list[tuple[str, int]],
    prints: list[tuple[Any, ...]],
    expected: Callable[[str], Payload],
    note: Callable[[str], None],
) -> None:
    """Every record in the reader's own order against the fingerprints random access saw."""
    seen = 0
    for i, (payload, got) in enumerate(reader):
        seen += 1
        if i >= len(prints):
            continue
        rel, label = wanted[i]
        if _fingerprint(payload) != prints[i]:
            problem = difference(payload, expected(rel)) or "differs"
            note(f"record {i} ({rel}), sequential: {problem}")
        if got != label:
            note(f"record {i} ({rel}), sequential: label {got}, expected {label}")
    if seen != len(wanted):
        note(f"sequential iteration gave {seen} records, expected {len(wanted)}")


@dataclass
class DecodeCheck:
    """Stored bytes decoded as a ``decode`` case decodes them, against the reference decode."""

    format: str
    records: int = 0
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def decode_check(
    spec: FormatSpec,
    path: Path,
    root: Path,
    entries: Sequence[ImageEntry],
    skipped: Iterable[str],
    decode: Callable[[bytes], Any],
    *,
    records: int = DECODE_CHECK_RECORDS,
) -> DecodeCheck:
    """Decode the first ``records`` payloads with ``decode`` and compare each with the reference
    decode of its source file (``imgbench.readers.verify``), within the codec's tolerance."""
    from imgbench.readers.verify import ReferenceCache, verify_item

    result = DecodeCheck(spec.name)
    left_out = set(skipped)
    chosen = [e for e in entries if e.path not in left_out][:records]
    references = ReferenceCache()
    try:
        with open_format(spec, path) as reader:
            for i, entry in enumerate(chosen):
                payload, _ = reader[i]
                if not isinstance(payload, bytes):
                    result.problem = f"record {i} ({entry.path}): payload is not bytes"
                    return result
                verdict = verify_item(
                    decode,
                    payload,
                    path=entry.path,
                    data=(Path(root) / entry.path).read_bytes(),
                    key=entry.sha256 or entry.path,
                    codec=entry.codec,
                    references=references,
                )
                if not verdict.ok:
                    result.problem = (
                        f"record {i} ({entry.path}): decoded payload differs from the "
                        f"reference decode: {verdict.detail}"
                    )
                    return result
                result.records += 1
    except Exception as exc:
        result.problem = f"read failed: {type(exc).__name__}: {exc}"
    return result
