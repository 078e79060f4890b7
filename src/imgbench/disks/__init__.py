"""Emulated disks: a throttled loop device holding the dataset, set up and always torn down.

``catalog`` names the disks (read IOPS and bandwidth from published figures), ``cgroup`` writes
the limits (v1 ``blkio`` or v2 ``io.max``), ``records`` keeps what was set up on disk before it is
set up (so a killed run's leftovers are removed by the next start), ``disk`` sets one up.
"""
