"""Named disk profiles: read limits taken from published device figures (sources in docs/disks.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DiskProfile:
    """A disk to emulate: its random-read IOPS and sequential-read bandwidth caps."""

    name: str
    read_iops: int | None  # None: no limit (the real disk)
    read_bytes_per_s: int | None

    @property
    def emulated(self) -> bool:
        return self.read_iops is not None or self.read_bytes_per_s is not None

    def columns(self) -> dict[str, object]:
        """The row's ``disk_*`` columns: which disk the case ran on, and the limits in force."""
        return {
            "disk_profile": self.name,
            "disk_read_iops_limit": self.read_iops,
            "disk_read_bytes_per_s_limit": self.read_bytes_per_s,
        }


MB = 1_000_000
# the parameter a disk session's cases carry (its disk; ``none`` the real disk's pass), so their
# ids never meet the main session's same cases and the answers keep them apart
DISK_PASS = "disk_pass"

# 7200 rpm HDD: ~8.5 ms seek + 4.2 ms rotation -> ~80-200 random IOPS; ~200 MB/s outer tracks.
# SATA SSD: the SATA 3 link caps at 600 MB/s; datasheets give ~550 MB/s and ~90-98k 4K IOPS.
# NVMe (PCIe 3.0 x4): ~3.5 GB/s sequential, ~500k 4K random-read IOPS.
PROFILES: dict[str, DiskProfile] = {
    "none": DiskProfile("none", None, None),
    "hdd": DiskProfile("hdd", 150, 180 * MB),
    "sata-ssd": DiskProfile("sata-ssd", 90_000, 550 * MB),
    "nvme": DiskProfile("nvme", 500_000, 3_000 * MB),
}


def disk_profile(name: str) -> DiskProfile:
    """The profile called ``name``; a ValueError naming the known ones otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"no disk profile {name!r}; known: {', '.join(PROFILES)}") from None
