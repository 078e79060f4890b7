"""The device check's text summary, from a run's rows: nvJPEG batched decode against the CPU
decoders, the H2D copies against the pinned ceiling, the step's own rate, and the AU of the best
CPU-decode and GPU-decode feeds (``python -m imgbench.answer.gpu_summary RESULTS``)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pandas as pd

from imgbench.loaders.gpu.feeds import GPU_DECODE_FEEDS


def _extra(row: pd.Series) -> dict[str, Any]:
    text = row.get("extra_json")
    return json.loads(text) if isinstance(text, str) and text else {}


def _rate(row: pd.Series) -> str:
    return f"{row['images_per_s_median']:,.0f} images/s"


def summarise(frame: pd.DataFrame) -> str:
    """A few lines a person reads first; missing parts say why (skipped, failed, not run)."""
    gpu = frame[frame["library"] == "gpu"]
    if not gpu.empty and {"created_utc", "case_id"} <= set(gpu.columns):
        # a rerun's row replaces the earlier one of its case (a failed part run again)
        gpu = gpu.sort_values("created_utc", kind="stable").groupby("case_id").tail(1)
    ok = gpu[gpu["status"] == "ok"]
    if gpu.empty:
        return "no gpu rows in these results"
    if ok.empty:
        reasons = sorted({str(r) for r in gpu["reason"].dropna()})
        return f"every gpu row was skipped or failed: {'; '.join(reasons)[:400]}"
    device = next(
        (e.get("device") for _, r in ok.iterrows() if (e := _extra(r)).get("device")), "?"
    )
    lines = [f"device: {device}"]
    lines += _decode_lines(frame, ok)
    lines += _copy_lines(ok)
    lines += _feed_lines(ok)
    cpu_loader = frame[(frame["library"] == "torch-dataloader") & (frame["status"] == "ok")]
    for _, r in cpu_loader.iterrows():
        lines.append(f"DataLoader {r['variant']} at {r['workers']} workers (CPU only): {_rate(r)}")
    from imgbench.answer.gpu import gpu_verdict

    verdict = gpu_verdict(frame)
    if verdict is not None:
        lines += verdict.lines()
    bad = gpu[gpu["status"] != "ok"]
    for _, r in bad.iterrows():
        lines.append(f"{r['status']}: {r['variant']}: {str(r['reason'])[:200]}")
    return "\n".join(lines)


def _first(ok: pd.DataFrame, variant: str) -> pd.Series | None:
    rows = ok[ok["variant"] == variant]
    return rows.iloc[0] if len(rows) else None


def _decode_lines(frame: pd.DataFrame, ok: pd.DataFrame) -> list[str]:
    """nvJPEG against torchvision's CPU decode, the other device decoders and augmentations,
    and the fastest CPU decoders of the read stage."""
    lines = []
    nvjpeg, cpu = _first(ok, "decode-nvjpeg-batched"), _first(ok, "decode-cpu-threads")
    if nvjpeg is not None:
        line = f"nvJPEG batched decode: {_rate(nvjpeg)}"
        if cpu is not None:
            threads = json.loads(cpu["params_json"]).get("decode_threads")
            line += f"; torchvision decode_jpeg on {threads} CPU threads: {_rate(cpu)}"
        lines.append(line)
    others = ok[ok["variant"].str.startswith("decode-")]
    others = others[~others["variant"].isin(["decode-nvjpeg-batched", "decode-cpu-threads"])]
    augments = ok[ok["variant"].str.startswith("augment-")]
    for label, part in (("other GPU decoders", others), ("augmentation on the device", augments)):
        if len(part):
            shown = ", ".join(f"{r['variant']} {_rate(r)}" for _, r in part.iterrows())
            lines.append(f"{label}: {shown}")
    reads = frame[(frame["stage"] == "read") & (frame["status"] == "ok")]
    if len(reads):
        best = reads.sort_values("images_per_s_median", ascending=False).head(5)
        lines.append(
            "CPU decoders, one thread: "
            + ", ".join(f"{r['library']}/{r['variant']} {_rate(r)}" for _, r in best.iterrows())
        )
    return lines


def _copy_lines(ok: pd.DataFrame) -> list[str]:
    """The pinned host-to-device ceiling, each copy against it, and the cached training steps."""
    lines = []
    ceiling = _first(ok, "h2d-ceiling")
    copies = ok[ok["variant"].str.startswith("h2d-") & (ok["variant"] != "h2d-ceiling")]
    if ceiling is not None:
        lines.append(f"H2D pinned ceiling (256 MiB): {ceiling['mb_per_s_median'] / 1e3:.1f} GB/s")
    for _, r in copies.sort_values("variant").iterrows():
        lines.append(f"  {r['variant']}: {r['mb_per_s_median'] / 1e3:.1f} GB/s ({_rate(r)})")
    step = ok[ok["variant"].str.startswith("step-cached-")]
    for _, r in step.iterrows():
        lines.append(
            f"{r['variant']}: {_rate(r)} (batch {json.loads(r['params_json'])['batch_size']})"
        )
    return lines


def _feed_lines(ok: pd.DataFrame) -> list[str]:
    """Each feed with its AU, GPUs kept busy, bytes copied and stage times; the best CPU- and
    GPU-decode feed with the step."""
    lines = []
    feeds = ok[ok["variant"].str.startswith("feed-")]
    for _, r in feeds.sort_values("variant").iterrows():
        e = _extra(r)
        au = f", AU {e['au']:.0%}" if e.get("au") is not None else ""
        kept = e.get("gpus_kept_at_90")
        kept_s = f", keeps {kept:.2f} GPUs at 90%" if kept is not None else ""
        mb = r.get("mb_per_s_median")
        copied = f", {mb / 1e3:.2f} GB/s copied" if pd.notna(mb) and mb else ""
        stages = e.get("feed_stage_ms_median") or {}
        staged = (
            ", ms/batch " + " ".join(f"{k} {v:.1f}" for k, v in stages.items()) if stages else ""
        )
        lines.append(f"  {r['variant']}: {_rate(r)}{au}{kept_s}{copied}{staged}")
    stepped = feeds[~feeds["variant"].str.endswith("+copy")]
    for label, on_gpu in (("CPU-decode", False), ("GPU-decode", True)):
        part = stepped[stepped["variant"].map(_gpu_decode) == on_gpu]
        if len(part):
            best = part.sort_values("images_per_s_median", ascending=False).iloc[0]
            share = _extra(best).get("au")
            au_s = f"{share:.0%}" if share is not None else "n/a"
            lines.append(f"best {label} feed with the step: {best['variant']}, AU {au_s}")
    return lines


def _gpu_decode(variant: str) -> bool:
    return any(f"feed-{name}+" in variant for name in GPU_DECODE_FEEDS)


def main(argv: list[str]) -> int:
    from imgbench.results.store import load_results

    frame = load_results(*argv).frame
    print(summarise(frame))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
