"""A process that sets up an emulated disk, says so, and waits to be killed (tests/storage)."""

from __future__ import annotations

import sys
import time

from imgbench.disks.catalog import disk_profile
from imgbench.disks.disk import emulated_disk

if __name__ == "__main__":
    with emulated_disk(disk_profile(sys.argv[1]), 64 * 2**20 * 4) as disk:
        disk.join()
        print(disk.mount, disk.loop, disk.group, flush=True)
        time.sleep(120)
