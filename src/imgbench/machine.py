"""Facts about the machine and the checkout that every result row carries."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import socket
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path

import psutil


@dataclass(frozen=True)
class MachineInfo:
    machine_id: str
    hostname: str
    cpu_model: str
    cpu_cores_logical: int
    cpu_cores_physical: int
    ram_bytes: int
    os: str
    arch: str
    python_version: str
    # Not part of machine_id: several Ray nodes on one host share hardware, and a label names
    # which of them measured. Set by the environment of the process (`imgbench run --ray` sets
    # both on each node; IMGBENCH_MACHINE_LABEL by hand labels a plain run).
    node_label: str | None = None
    ray_node_id: str | None = None

    def as_row(self) -> dict[str, object]:
        return asdict(self)


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


MACHINE_LABEL_ENV = "IMGBENCH_MACHINE_LABEL"  # the node_label column
RAY_NODE_ENV = "IMGBENCH_RAY_NODE_ID"  # the ray_node_id column


@functools.cache
def machine_info() -> MachineInfo:
    """The machine as rows describe it; ``machine_id`` changes when any identifying fact does."""
    facts = MachineInfo(
        machine_id="",  # filled in below, from the facts
        hostname=socket.gethostname(),
        cpu_model=_cpu_model(),
        cpu_cores_logical=psutil.cpu_count(logical=True) or 0,
        cpu_cores_physical=psutil.cpu_count(logical=False) or 0,
        ram_bytes=psutil.virtual_memory().total,
        os=platform.platform(),
        arch=platform.machine(),
        python_version=platform.python_version(),
        node_label=os.environ.get(MACHINE_LABEL_ENV) or None,
        ray_node_id=os.environ.get(RAY_NODE_ENV) or None,
    )
    identity = "|".join(
        str(getattr(facts, k))
        for k in ("hostname", "cpu_model", "cpu_cores_logical", "ram_bytes", "os", "arch")
    )
    machine_id = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return replace(facts, machine_id=machine_id)


@dataclass(frozen=True)
class CommitInfo:
    commit: str | None
    branch: str | None
    dirty: bool | None


@functools.cache
def commit_info() -> CommitInfo:
    """The git commit of the working directory, via pytest-benchmark's own helper."""
    from pytest_benchmark.utils import get_commit_info

    info = get_commit_info()
    commit = info.get("id")
    return CommitInfo(
        commit=None if commit in (None, "unversioned") else commit,
        branch=info.get("branch"),
        dirty=info.get("dirty"),
    )


def dist_version(dist: str) -> str | None:
    """Installed version of a distribution, or None when it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
