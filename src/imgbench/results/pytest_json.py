"""Import pytest-benchmark JSON (``--benchmark-json`` or ``--benchmark-save``) as result rows.

Rows from imgbench's own benches carry their case in ``extra_info``; foreign benchmarks become
stage ``pytest-benchmark`` rows whose throughput is calls per second (one item per call).
Raw samples exist only when the JSON was saved with ``--benchmark-save-data``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from imgbench.results.schema import empty_row


class JSONImportError(ValueError):
    """The file is not pytest-benchmark JSON."""


def _parse_time(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def rows_from_json(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise JSONImportError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(doc, dict) or "benchmarks" not in doc or "machine_info" not in doc:
        raise JSONImportError(
            f"{path}: not a pytest-benchmark JSON file (no benchmarks/machine_info)"
        )
    machine = doc.get("machine_info") or {}
    ours = machine.get("imgbench") or {}
    commit = doc.get("commit_info") or {}
    created = _parse_time(doc.get("datetime"))
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:6]
    run_id = f"{created:%Y%m%dT%H%M%SZ}-import-{Path(path).stem}-{digest}"
    cpu = machine.get("cpu") or {}
    identity = ours or {
        "machine_id": hashlib.sha256(
            f"{machine.get('node')}|{cpu.get('brand_raw')}|{machine.get('system')}".encode()
        ).hexdigest()[:16],
        "hostname": machine.get("node"),
        "cpu_model": cpu.get("brand_raw"),
        "cpu_cores_logical": cpu.get("count"),
        "os": f"{machine.get('system')}-{machine.get('release')}",
        "arch": machine.get("machine"),
        "python_version": machine.get("python_version"),
    }
    rows = []
    for bench in doc["benchmarks"]:
        rows.append(_row(bench, run_id, created, identity, commit))
    return rows


def _row(
    bench: dict[str, Any],
    run_id: str,
    created: datetime,
    identity: dict[str, Any],
    commit: dict[str, Any],
) -> dict[str, Any]:
    stats = bench.get("stats") or {}
    extra = bench.get("extra_info") or {}
    params = extra.get("imgbench_params") or bench.get("params") or {}
    images = int(extra.get("images_per_round") or 1)
    data = [float(x) for x in stats.get("data") or []]
    median = stats.get("median")
    q1, q3 = stats.get("q1"), stats.get("q3")
    row = empty_row()
    row.update({k: v for k, v in identity.items() if k in row})
    row.update(
        run_id=run_id,
        run_name=f"import:{bench.get('fullname', bench.get('name'))}".split("::")[0],
        created_utc=created,
        git_commit=commit.get("id"),
        git_branch=commit.get("branch"),
        git_dirty=commit.get("dirty"),
        stage=extra.get("imgbench_stage", "pytest-benchmark"),
        case_id=extra.get("imgbench_case_id", bench.get("fullname") or bench.get("name")),
        test_id=bench.get("fullname"),
        library=extra.get("imgbench_library"),
        variant=extra.get("imgbench_variant"),
        environment="main",
        codec=params.get("codec") if isinstance(params, dict) else None,
        mode=params.get("mode") if isinstance(params, dict) else None,
        threads=params.get("threads") if isinstance(params, dict) else None,
        params_json=json.dumps(params, sort_keys=True, default=str),
        images_per_round=images,
        bytes_per_round=extra.get("bytes_per_round"),
        megapixels_per_round=extra.get("megapixels_per_round"),
        rounds=stats.get("rounds"),
        iterations=stats.get("iterations"),
        samples_s=data,
        images_per_s_median=images / median if median else None,
        images_per_s_q1=images / q3 if q3 else None,
        images_per_s_q3=images / q1 if q1 else None,
        status="ok",
        extra_json=json.dumps(
            {"imported_from": "pytest-benchmark", "samples_kept": bool(data)}, sort_keys=True
        ),
    )
    if median and extra.get("bytes_per_round"):
        row["mb_per_s_median"] = extra["bytes_per_round"] / 1e6 / median
    if median and extra.get("megapixels_per_round"):
        row["megapixels_per_s_median"] = extra["megapixels_per_round"] / median
    return row
