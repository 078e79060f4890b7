"""`imgbench dataset convert --resize-short N --quality Q --shards K`, as im2rec packs: every
format of JPEG bytes that shards, read back; MXNet itself reads the RecordIO shards."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.datasets.synth import generate
from imgbench.envs import env_dir
from imgbench.formats.base import FormatError, Packing, open_format, read_keys
from imgbench.formats.convert import convert
from imgbench.formats.registry import get_format
from imgbench.paths import repo_root

PACKED = ("recordio", "tar", "lmdb", "parquet")
PACKING = Packing(resize_short=64, quality=90, shards=2)
runner = CliRunner(env={"COLUMNS": "300"})


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five 160x96 JPEGs in two classes and one 48x40 PNG (smaller than the side: kept)."""
    root = generate(
        tmp_path_factory.mktemp("pack") / "src", 5, size=(160, 96), classes=2, progress=False
    )
    Image.new("RGB", (48, 40), (200, 30, 30)).save(root / "class_001" / "small.png")
    return root


def _shards(name: str, store: Path) -> int:
    pattern = {"recordio": "data-*.rec", "tar": "shard-*.tar", "lmdb": "data-*"}
    return len(list(store.glob(pattern.get(name, "data-*.parquet"))))


@pytest.mark.parametrize("name", PACKED)
def test_packed_stores_read_back_resized_reencoded_and_sharded(
    name: str, source: Path, tmp_path: Path
) -> None:
    spec = get_format(name)
    if (missing := spec.unmet_requirement()) is not None:
        pytest.skip(missing)
    report = convert(source, spec, tmp_path / name, workers=1, packing=PACKING)
    assert report.records == 6
    assert _shards(name, report.target) == 2
    keys = read_keys(report.target)
    with open_format(spec, report.target) as reader:
        assert dict(reader.meta.packing) == {"resize_short": 64, "quality": 90, "shards": 2}
        records = [reader[i] for i in range(len(reader))]
        assert [label for _, label in records] == [label for _, label in keys]
        assert [label for _, label in reader] == [label for _, label in keys]  # sequential too
    for (payload, _), (key, _) in zip(records, keys, strict=True):
        assert isinstance(payload, bytes)
        with Image.open(io.BytesIO(payload)) as image:
            assert image.format == "JPEG"
            size = image.size
        if key.endswith("small.png"):
            assert size == (48, 40)  # never upscaled
        else:
            assert size == (107, 64)  # shorter side 64, aspect 160:96 kept


def test_packing_is_refused_where_it_cannot_apply(source: Path, tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="stores decoded pixels"):
        convert(source, get_format("npy-decoded"), tmp_path / "npy", packing=PACKING)
    with pytest.raises(FormatError, match="cannot be written in shards"):
        convert(source, get_format("folder"), tmp_path / "folder", packing=Packing(shards=2))
    assert not (tmp_path / "npy").exists() and not (tmp_path / "folder").exists()
    with pytest.raises(ValueError, match="quality"):
        Packing(quality=0)


def test_the_command_packs(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "packed.rec"
    args = ["dataset", "convert", str(source), "--to", "recordio", "--out", str(out)]
    result = runner.invoke(app, [*args, "--resize-short", "64", "--quality", "90", "--shards", "2"])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("resize-short 64, quality 90, shards 2")
    marker = json.loads((out / "_imgbench" / "complete.json").read_text())
    assert marker["packing"] == {"resize_short": 64, "quality": 90, "shards": 2}
    bad = runner.invoke(app, [*args[:-1], str(tmp_path / "x"), "--shards", "0"])
    assert bad.exit_code == 2 and "--shards must be at least 1" in bad.output


MX_READ = """
import json, sys
import mxnet as mx
out = []
for rec in sys.argv[1:]:
    record = mx.recordio.MXIndexedRecordIO(rec[:-4] + ".idx", rec, "r")
    for key in record.keys:
        header, data = mx.recordio.unpack(record.read_idx(key))
        out.append([int(key), float(header.label), list(mx.image.imdecode(data).shape)])
    record.close()
it = mx.io.ImageRecordIter(path_imgrec=sys.argv[1], data_shape=(3, 64, 64), batch_size=2,
                           resize=64, round_batch=False)
batch = next(iter(it))
out.append(list(batch.data[0].shape))
print(json.dumps(out))
"""


def test_mxnet_reads_the_recordio_shards(source: Path, tmp_path: Path) -> None:
    root = repo_root()
    python = env_dir("mxnet", root) / "bin" / "python" if root is not None else None
    if python is None or not python.exists():
        pytest.skip("mxnet env not built here (`imgbench env create mxnet`; make test does)")
    report = convert(source, get_format("recordio"), tmp_path / "rec", workers=1, packing=PACKING)
    recs = sorted(str(p) for p in report.target.glob("data-*.rec"))
    proc = subprocess.run(
        [str(python), "-c", MX_READ, *recs], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    *records, batch_shape = json.loads(proc.stdout.strip().splitlines()[-1])
    keys = read_keys(report.target)
    assert [r[0] for r in records] == list(range(6))
    assert [int(r[1]) for r in records] == [label for _, label in keys]
    assert all(min(r[2][:2]) in (64, 40) and r[2][2] == 3 for r in records)
    assert batch_shape == [2, 3, 64, 64]
