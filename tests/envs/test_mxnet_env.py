"""The mxnet environment (MXNet 1.9.1 on numpy 1.23.5) and its reader, mx.image.imdecode, for real.

The env is built by `make test` and `make bench` (`imgbench env create mxnet`); where it is
missing the tests that need it skip with that command as the reason.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from imgbench.envs import ENVIRONMENTS, env_dir, verify_env
from imgbench.paths import repo_root
from imgbench.readers.registry import UNAVAILABLE, find_spec

ROOT = repo_root()


def _python() -> Path:
    assert ROOT is not None
    python = env_dir("mxnet", ROOT) / "bin" / "python"
    if not python.exists():
        pytest.skip("mxnet env not built here (`imgbench env create mxnet`; make test does)")
    return python


def test_the_env_pins_numpy_for_mxnet_and_is_not_layered() -> None:
    spec = ENVIRONMENTS["mxnet"]
    assert "mxnet==1.9.1" in spec.last and "numpy==1.23.5" in spec.last
    assert {"numpy", "pandas", "pyarrow", "scipy"} <= set(spec.drop) and not spec.layered
    assert spec.problem({"mxnet": "1.9.1", "opencv": "False"}) is not None
    assert spec.problem({"mxnet": "1.9.1", "opencv": "True"}) is None
    assert find_spec("mxnet", "imdecode").environment == "mxnet"
    assert not any("mxnet" in name for name, _ in UNAVAILABLE)


def test_the_env_verifies() -> None:
    _python()
    facts = verify_env("mxnet", ROOT)
    assert facts["mxnet"] == "1.9.1" and facts["numpy"] == "1.23.5" and facts["opencv"] == "True"


_READER_SCRIPT = """
import json, sys
from pathlib import Path
from imgbench.envs import current_environment
from imgbench.readers.registry import build_reader, find_spec
from imgbench.readers.verify import verify_item
spec = find_spec("mxnet", "imdecode")
reader = build_reader(spec)
out = {"environment": current_environment(), "photos": [], "odd": {}}
for path in sorted(Path(sys.argv[1]).iterdir()):
    codec = path.suffix[1:]
    data = path.read_bytes()
    if path.stem.startswith("odd-"):
        try:
            array = reader.decode(data)
            verdict = verify_item(reader.decode, data, path=path.name, data=data, key=path.name,
                                  codec=codec)
            out["odd"][path.stem] = f"returned {array.shape}, verified {verdict.ok}"
        except Exception as exc:
            out["odd"][path.stem] = f"{type(exc).__name__}: {exc}"
        continue
    for fn, item in ((reader.decode, data), (reader.read, str(path))):
        v = verify_item(fn, item, path=path.name, data=data, key=path.name, codec=codec)
        out["photos"].append([path.name, codec in spec.codecs, v.ok, v.detail])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def mx_checks(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The reader's checks and MXNet's own RecordIO writer, in one interpreter of the env (each
    was one: an MXNet import apiece): what the reader found, and the folder both wrote to."""
    python = _python()
    from tests.readers.images import photo_bytes

    tmp_path = tmp_path_factory.mktemp("mxnet-checks")
    photos, records = tmp_path / "photos", tmp_path / "records"
    photos.mkdir()
    records.mkdir()
    for name in ("coffee", "chelsea"):
        for codec in ("jpeg", "png", "bmp", "tiff", "webp"):
            (photos / f"{name}.{codec}").write_bytes(photo_bytes(name, codec))
    jpeg = photo_bytes("coffee", "jpeg")
    (photos / "odd-truncated.jpeg").write_bytes(jpeg[: len(jpeg) // 2])
    (photos / "odd-empty.jpeg").write_bytes(b"")
    (photos / "odd-text.jpeg").write_bytes(b"this is not an image")
    (photos / "odd-png-named.jpeg").write_bytes(photo_bytes("coffee", "png"))
    payloads = _recordio_payloads(records)
    (records / "payloads.json").write_text(
        json.dumps([[i % 2, data.hex()] for i, data in enumerate(payloads)])
    )
    proc = subprocess.run(
        [str(python), "-c", _READER_SCRIPT + _MX_WRITE_SCRIPT, str(photos), str(records)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out, records


def test_imdecode_verifies_on_real_photos_and_names_bad_files(
    mx_checks: tuple[dict[str, Any], Path],
) -> None:
    out, _ = mx_checks
    assert out["environment"] == "mxnet"
    decoded = [p for p in out["photos"] if p[1]]
    assert len(decoded) == 16 and all(p[2] for p in decoded), decoded  # 2 photos x 4 codecs x 2
    # WebP is not in its codecs (its OpenCV has none): verification says so, no crash
    assert all(not p[2] for p in out["photos"] if not p[1])
    odd = out["odd"]
    assert (
        odd["odd-empty"]
        == "ValueError: mx.image.imdecode: MXNetError: Check failed: len > 0: Input cannot be an empty buffer"
    )
    assert (
        odd["odd-text"].startswith("ValueError: mx.image.imdecode:") and "\n" not in odd["odd-text"]
    )
    assert odd["odd-truncated"].endswith("verified False")  # libjpeg's grey rows, flagged
    assert odd["odd-png-named"].endswith("verified True")  # decoded by its content


# after the reader's checks, in the same interpreter: MXNet's own writer
_MX_WRITE_SCRIPT = """
from imgbench.loaders.libs.mxnet_recordio import import_mxnet
mx = import_mxnet()
out = Path(sys.argv[2])
payloads = json.loads((out / "payloads.json").read_text())
writer = mx.recordio.MXIndexedRecordIO(str(out / "mx.idx"), str(out / "mx.rec"), "w")
for i, (label, hexdata) in enumerate(payloads):
    header = mx.recordio.IRHeader(0, float(label), i, 0)
    writer.write_idx(i, mx.recordio.pack(header, bytes.fromhex(hexdata)))
writer.close()
"""


def _recordio_payloads(folder: Path) -> list[bytes]:
    """imgbench's hand-written `recordio` of four payloads in ``folder`` (ib.rec, ib.idx), magic
    words inside the data (multi-part records) included; the payloads."""
    import struct

    from imgbench.formats.libs import recordio
    from tests.readers.images import photo_bytes

    magic = struct.pack("<I", recordio.MAGIC)
    payloads = [
        photo_bytes("coffee", "jpeg"),
        b"\0" * 4 + magic + b"123456789" + magic + b"ab",  # one aligned magic (split), one not
        magic + b"tail",
        b"odd",
    ]
    with (folder / "ib.rec").open("wb") as rec, (folder / "ib.idx").open("w") as idx:
        for i, data in enumerate(payloads):
            idx.write(f"{i}\t{rec.tell()}\n")
            rec.write(recordio.encode_record(recordio.pack(i % 2, i, data)))
    return payloads


def test_imgbench_writes_the_bytes_mx_recordio_writes(
    mx_checks: tuple[dict[str, Any], Path],
) -> None:
    """The main env's hand-written `recordio` format against MXNet's own writer, byte for byte,
    magic words inside the data (multi-part records) included."""
    _, records = mx_checks
    assert (records / "ib.rec").read_bytes() == (records / "mx.rec").read_bytes()
    assert (records / "ib.idx").read_text() == (records / "mx.idx").read_text()
