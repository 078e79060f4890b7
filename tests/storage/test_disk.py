"""Emulated disks on real loop devices and cgroups (root only): limits, tear-down, kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.disks import cgroup
from imgbench.disks.catalog import PROFILES, disk_profile
from imgbench.disks.disk import DiskUnavailableError, emulated_disk, unavailable_reason
from imgbench.disks.records import cleanup_leftovers, loops_of, mounted, records

REASON = unavailable_reason()
needs_disk = pytest.mark.skipif(REASON is not None, reason=f"emulated disk: {REASON}")
HOLDER = [sys.executable, "-m", "tests.storage.hold_disk"]
ROOT = Path(__file__).resolve().parents[2]
READ_AFTER_GO = "import sys\nsys.stdin.readline()\nfor p in sys.argv[1:]: open(p, 'rb').read()"


def test_profiles_and_v2_limit_text() -> None:
    assert set(PROFILES) == {"none", "hdd", "sata-ssd", "nvme"}
    hdd = disk_profile("hdd")
    assert hdd.columns() == {
        "disk_profile": "hdd",
        "disk_read_iops_limit": 150,
        "disk_read_bytes_per_s_limit": 180_000_000,
    }
    assert cgroup.limit_files(2, "7:3", hdd) == {"io.max": "7:3 riops=150 rbps=180000000"}
    assert cgroup.limit_files(2, "7:3", PROFILES["none"]) == {"io.max": "7:3 riops=max rbps=max"}
    assert cgroup.limit_files(1, "7:3", hdd) == {
        cgroup.V1_IOPS: "7:3 150",
        cgroup.V1_BPS: "7:3 180000000",
    }
    with pytest.raises(ValueError, match="known: none, hdd"):
        disk_profile("floppy")


def _clean(mount: Path, image: str, group: Path) -> None:
    assert not mounted(str(mount))
    assert loops_of(image) == []
    assert not group.exists()
    assert not Path(image).exists()


@needs_disk
def test_limits_in_force_reads_counted_and_torn_down(tmp_path: Path) -> None:
    with emulated_disk(disk_profile("hdd"), 256 * 2**20) as disk:
        limits = cgroup.read_limits(disk.group, disk.cgroup_version)
        if disk.cgroup_version == 1:
            assert limits == {
                cgroup.V1_IOPS: f"{disk.device} 150",
                cgroup.V1_BPS: f"{disk.device} 180000000",
            }
        else:
            assert limits["io.max"].startswith(f"{disk.device} rbps=180000000")
        files = []
        for i in range(8):
            path = disk.mount / f"f{i}.bin"
            path.write_bytes(os.urandom(64_000))
            files.append(path)
        os.sync()
        for path in files:  # cold: the reads must reach the device to be counted
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        reader = subprocess.Popen(
            [sys.executable, "-c", READ_AFTER_GO, *map(str, files)], stdin=subprocess.PIPE
        )
        disk.join(reader.pid)  # then let it read: every read is the group's
        assert reader.stdin is not None
        reader.stdin.write(b"go\n")
        reader.stdin.close()
        assert reader.wait(timeout=60) == 0
        if disk.cgroup_version == 1:
            serviced = (disk.group / "blkio.throttle.io_serviced").read_text()
            reads = [
                line.split()[2]
                for line in serviced.splitlines()
                if line.startswith(f"{disk.device} Read")
            ]
            assert reads and int(reads[0]) >= len(files)
        image = str(disk.mount.parent / "disk.img")
        mount, group = disk.mount, disk.group
        assert loops_of(image) == [disk.loop]
    _clean(mount, image, group)


@needs_disk
def test_exception_tears_down() -> None:
    with pytest.raises(KeyError), emulated_disk(disk_profile("nvme"), 256 * 2**20) as disk:
        disk.join()
        mount, group = disk.mount, disk.group
        raise KeyError("boom")
    _clean(mount, str(mount.parent / "disk.img"), group)
    assert str(os.getpid()) in (group.parent / "cgroup.procs").read_text().split()  # moved back


def _hold() -> tuple[subprocess.Popen[str], Path, str, Path]:
    holder = subprocess.Popen([*HOLDER, "hdd"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    mount, loop, group = holder.stdout.readline().split()
    assert mounted(mount) and Path(group).is_dir()
    return holder, Path(mount), loop, Path(group)


@needs_disk
def test_sigterm_tears_down() -> None:
    holder, mount, _loop, group = _hold()
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(timeout=60) != 0  # unwound like Ctrl-C
    _clean(mount, str(mount.parent / "disk.img"), group)


@needs_disk
def test_kill_9_leftovers_cleaned_by_next_start() -> None:
    holder, mount, loop, group = _hold()
    holder.kill()
    holder.wait(timeout=30)
    image = str(mount.parent / "disk.img")
    assert mounted(str(mount)) and loops_of(image) == [loop] and group.is_dir()  # left behind
    assert any(r.pid == holder.pid for r in records())
    cleanup_leftovers()
    _clean(mount, image, group)
    assert not any(r.pid == holder.pid for r in records())


@needs_disk
def test_cleanup_command_and_refusal_without_root() -> None:
    holder, mount, _loop, group = _hold()
    holder.kill()
    holder.wait(timeout=30)
    # the command in this process (the CLI as a process: tests/test_cli.py)
    done = CliRunner().invoke(app, ["disk", "cleanup"])
    assert done.exit_code == 0, done.output
    _clean(mount, str(mount.parent / "disk.img"), group)
    # as an unprivileged user: one clear line, nothing set up
    code = "from imgbench.disks.disk import unavailable_reason as r; print(r())"
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    if done.returncode != 0:
        pytest.skip(f"cannot run as nobody here: {done.stderr.strip()[-200:]}")
    assert done.stdout.strip() == "emulated disks need root (loop devices, mount, cgroups)"


def test_refusal_is_one_line() -> None:
    if REASON is None:
        return  # set-up works here; the refusal is checked as nobody above
    with pytest.raises(DiskUnavailableError, match=REASON), emulated_disk(PROFILES["hdd"], 2**20):
        pass


def test_run_refuses_an_unknown_disk_in_one_line() -> None:
    done = CliRunner().invoke(app, ["run", "--disk", "floppy"])  # in this process, as above
    assert done.exit_code != 0
    assert done.stderr.strip().splitlines()[-1] == (
        "error: --disk must be one of none, hdd, sata-ssd, nvme, not 'floppy'"
    )
