"""How much of the storage-format matrix a profile runs (see imgbench.plan)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from imgbench.library import Selection
from imgbench.plan import StagePlan


@dataclass(frozen=True, kw_only=True)
class FormatPlan(StagePlan):
    """Formats (written once, then read) x cache x order x payload, and the raw-file ceiling;
    x storage (local, s3)."""

    stage: ClassVar[str] = "format"
    libraries: Selection = "default"  # format names (a spec's key) or libraries
    caches: tuple[Literal["warm", "cold"], ...] = ("warm", "cold")
    orders: tuple[Literal["sequential", "shuffled"], ...] = ("sequential", "shuffled")
    # payloads of formats that store encoded bytes (array formats always read "array")
    payloads: tuple[Literal["bytes", "decode"], ...] = ("bytes", "decode")
    raw_ceiling: bool = True  # the same bytes from one concatenated file: the ceiling
    # where stores live: local (a folder on the dataset's disk) and/or s3 (a bucket on a
    # SeaweedFS server imgbench starts on 127.0.0.1); s3 covers the formats with an S3 reader
    # (imgbench.formats.registry.S3_FORMATS), bytes payloads, both orders
    storages: tuple[Literal["local", "s3"], ...] = ("local", "s3")
    # the network between client and server, for the s3 cases (imgbench.objectstore.shaping
    # names: rtt<ms>ms-<unlimited|Ngbit|Nmbit>); rtt0ms-unlimited is the server's own address
    # (network_shaping "none"), every other shape a shaped path set up once per session
    network_shapes: tuple[str, ...] = ("rtt0ms-unlimited",)
