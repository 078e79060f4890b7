"""Is the GPU waiting? The answer read from a run's ``gpu`` rows (docs/gpu.md), for the Overview
and ``imgbench report`` to show first where such rows exist: the step's own rate, the best
feed's rate, its AU, how many such GPUs it keeps 90% busy, and which side bounds it.

The bound, from the rows of the same run: the step (the feed keeps one GPU or more at 90%); GPU
decode (the nvJPEG feed is as fast as batched nvJPEG alone); reading the files (the nvJPEG feed
is slower than nvJPEG alone: the CPU workers that only read); the copy (a CPU-decode feed is
slower than the same DataLoader measured without a device); CPU decode/augment (otherwise).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

AU_TARGET = 0.9
SAME = 0.9  # a rate within 10% of another's is bounded by the same work


@dataclass(frozen=True)
class GpuVerdict:
    device: str
    step_images_per_s: float  # the step on a cached batch: the most the GPU can take
    feed: str  # the fastest feed as the GPU receives it (a `feed-*+copy` row's variant)
    feed_images_per_s: float  # what the loader has shown it delivers: the larger of the two below
    gpus_kept_at_90: float
    bound: str
    au: float | None = None  # the same feed with the step, where measured
    stepped: str | None = None  # that row's variant
    copy_images_per_s: float | None = None  # the `+copy` row's own rate (None: no such row)
    stepped_images_per_s: float | None = None  # the stepped row's own rate
    # the answer on a machine with the step measured: chosen by the real step's AU (the feed that
    # keeps it at least 90% busy with the fewest CPU workers), None where no feed fed the step
    chosen: FedStep | None = None
    reaching: int = 0  # how many fed feeds keep the step at least 90% busy

    @property
    def waiting(self) -> bool:
        """The GPU waits for data: the best feed keeps it under 90% busy."""
        if self.au is not None:
            return self.au < AU_TARGET
        return self.gpus_kept_at_90 < 1.0

    def lines(self) -> list[str]:
        head = "yes" if self.waiting else "no"
        lines = [
            f"Is the GPU waiting? {head} ({self.device})",
            f"the step alone: {self.step_images_per_s:,.0f} images/s",
            self._feed_line(),
            f"it keeps {self.gpus_kept_at_90:.2f} such GPUs at 90% busy",
            f"bound by: {self.bound}",
        ]
        if self.chosen is not None:
            lines.append(self.answer_line())
        return lines

    def answer_line(self) -> str:
        """The answer on this machine, chosen by the real step's AU and saying so."""
        c = self.chosen
        assert c is not None
        workers = f"{c.workers} CPU worker{'s' if c.workers != 1 else ''}"
        if self.reaching:
            return (
                f"the answer here, chosen by the real step's AU: {c.feed} keeps the step "
                f"{c.au:.0%} busy with {workers} ({c.images_per_s:,.0f} images/s; "
                f"{self.reaching} feed(s) reach {AU_TARGET:.0%}, this one with the fewest workers)"
            )
        return (
            f"the answer here, chosen by the real step's AU: no feed keeps the step "
            f"{AU_TARGET:.0%} busy; the closest, {c.feed}, {c.au:.0%} with {workers}"
        )

    def _feed_line(self) -> str:
        """Each figure beside the row that measured it: the stepped row's rate and AU, the copy
        row's rate (a line that named the copy row with the stepped row's rate and AU read as one
        row that measured both)."""
        parts = []
        if self.stepped is not None and self.stepped_images_per_s is not None:
            au = f"{self.au:.0%}" if self.au is not None else "not measured"
            parts.append(f"{self.stepped} at {self.stepped_images_per_s:,.0f} images/s, AU {au}")
        if self.copy_images_per_s is not None and self.feed != self.stepped:
            parts.append(f"{self.feed} at {self.copy_images_per_s:,.0f} images/s")
        if self.stepped is None:
            parts[-1] += ", AU not measured"
        return "the best feed: " + "; copied alone: ".join(parts)


@dataclass(frozen=True)
class FedStep:
    """A feed measured with the real step as its consumer (a `feed-*+<model>` row)."""

    feed: str  # the feed's name (the row's `feed` parameter)
    variant: str
    workers: int  # the CPU workers (processes or threads) that feed it
    images_per_s: float
    au: float


def chosen_by_au(stepped: pd.DataFrame) -> tuple[FedStep | None, int]:
    """The feed that keeps the step at least 90% busy with the fewest CPU workers (then the
    fastest), and how many reach 90%; where none does, the one with the highest AU."""
    fed = [
        FedStep(
            feed=str(_params(row).get("feed", row["variant"])),
            variant=str(row["variant"]),
            workers=int(row["workers"]) if pd.notna(row.get("workers")) else 0,
            images_per_s=float(row["images_per_s_median"]),
            au=float(_extra(row)["au"]),
        )
        for _, row in stepped.iterrows()
        if _extra(row).get("au") is not None
    ]
    reaching = [f for f in fed if f.au >= AU_TARGET]
    if reaching:
        return min(reaching, key=lambda f: (f.workers, -f.images_per_s)), len(reaching)
    return (max(fed, key=lambda f: f.au) if fed else None), 0


def _ok(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["status"] == "ok"]


def _extra(row: pd.Series) -> dict[str, Any]:
    text = row.get("extra_json")
    return json.loads(text) if isinstance(text, str) and text else {}


def _params(row: pd.Series) -> dict[str, Any]:
    text = row.get("params_json")
    return json.loads(text) if isinstance(text, str) and text else {}


def gpu_verdict(frame: pd.DataFrame) -> GpuVerdict | None:
    """The verdict from one run's rows; None where no step or no feed row was measured."""
    gpu = _ok(frame[frame["library"] == "gpu"])
    steps = gpu[gpu["variant"].str.startswith("step-cached-")]
    feeds = gpu[gpu["variant"].str.startswith("feed-") & gpu["variant"].str.endswith("+copy")]
    if steps.empty or feeds.empty:
        return None
    step_rate = float(steps["images_per_s_median"].max())
    # the best feed is the one that fed the real step fastest, where steps were fed (the copy-only
    # rate does not say what the step gets: on the H100 the uint8 feed copied 8,166 images/s
    # alone and fed ResNet-50 3,148, AU 87%, while the side-stream prefetcher fed it 3,860, AU 97%)
    stepped_rows = gpu[
        gpu["variant"].str.startswith("feed-") & ~gpu["variant"].str.endswith("+copy")
    ]
    au = None
    stepped_name = None
    if len(stepped_rows):
        fed = stepped_rows.sort_values("images_per_s_median", ascending=False).iloc[0]
        au, stepped_name = _extra(fed).get("au"), str(fed["variant"])
        feed = str(_params(fed).get("feed", ""))
        same = feeds[feeds["variant"] == f"feed-{feed}+copy"]
        best = same.iloc[0] if len(same) else fed
    else:
        best = feeds.sort_values("images_per_s_median", ascending=False).iloc[0]
        feed = str(_params(best).get("feed", ""))
    # what the loader has shown it delivers: its copy-only rate, or what it fed the step if more
    copied = float(best["images_per_s_median"])
    stepped_rate = float(fed["images_per_s_median"]) if len(stepped_rows) else None
    rate = max(copied, stepped_rate or 0.0)
    kept = rate / (AU_TARGET * step_rate)
    copy_row = str(best["variant"]).endswith("+copy")
    chosen, reaching = chosen_by_au(stepped_rows)
    return GpuVerdict(
        device=str(_extra(best).get("device", "?")),
        step_images_per_s=step_rate,
        feed=str(best["variant"]),
        feed_images_per_s=rate,
        gpus_kept_at_90=kept,
        bound=_bound(frame, gpu, best, feed, rate, kept, au),
        au=au,
        stepped=stepped_name,
        copy_images_per_s=copied if copy_row else None,
        stepped_images_per_s=stepped_rate,
        chosen=chosen,
        reaching=reaching,
    )


def _bound(
    frame: pd.DataFrame,
    gpu: pd.DataFrame,
    best: pd.Series,
    feed: str,
    rate: float,
    kept: float,
    au: float | None = None,
) -> str:
    if (au is not None and au >= AU_TARGET) or (au is None and kept >= 1.0):
        return "the step: the GPU computes, the loader keeps up"
    if feed.startswith("nvjpeg"):
        nvjpeg = gpu[gpu["variant"] == "decode-nvjpeg-batched"]
        if len(nvjpeg) and rate >= SAME * float(nvjpeg["images_per_s_median"].max()):
            return "GPU decode (nvJPEG)"
        return "reading the files (the CPU workers that feed nvJPEG)"
    uint8 = feed.startswith("uint8")
    cpu = _ok(
        frame[(frame["library"] == "torch-dataloader") & (frame["workers"] == best["workers"])]
    )
    cpu = cpu[
        cpu["params_json"].map(lambda p: json.loads(p).get("pipeline", "").endswith(":train-uint8"))
        == uint8
    ]
    if len(cpu) and rate < SAME * float(cpu["images_per_s_median"].max()):
        return "the copy to the device"
    return "CPU decode/augment"
