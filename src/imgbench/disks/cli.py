"""``imgbench disk``: the emulated disk profiles, and removing what a killed run left behind."""

from __future__ import annotations

import typer
from rich.table import Table

from imgbench.console import console
from imgbench.disks.catalog import PROFILES
from imgbench.disks.disk import unavailable_reason
from imgbench.disks.records import records, teardown

disk_app = typer.Typer(help="Emulated disks (--disk): profiles and clean-up.", no_args_is_help=True)


@disk_app.command("profiles")
def profiles() -> None:
    """The named disks and their read limits; whether they can be set up here."""
    table = Table("profile", "read IOPS", "read MB/s")
    for profile in PROFILES.values():
        iops = "-" if profile.read_iops is None else f"{profile.read_iops:,}"
        mbs = "-" if profile.read_bytes_per_s is None else f"{profile.read_bytes_per_s / 1e6:,.0f}"
        table.add_row(profile.name, iops, mbs)
    console.print(table)
    reason = unavailable_reason()
    console.print(
        "emulated disks: " + ("available" if reason is None else f"unavailable: {reason}")
    )


@disk_app.command("cleanup")
def cleanup(
    everything: bool = typer.Option(
        False, "--all", help="also the disks of runs still alive (stop those runs first)"
    ),
) -> None:
    """Remove the loop devices, mounts, cgroups and images of emulated disks whose run is gone."""
    removed = kept = 0
    for record in records():
        if record.owner_alive() and not everything:
            console.print(f"kept {record.id}: its run (pid {record.pid}) is alive")
            kept += 1
            continue
        failed = teardown(record)
        for line in failed:
            console.print(f"[red]{record.id}: {line}[/]", highlight=False)
        removed += not failed
    console.print(f"removed {removed} emulated disk(s), kept {kept}")
