"""``imgbench run --ray ADDRESS``: the matrix spread over the nodes of a Ray cluster.

For each planned session (environment, dataset) the driver collects the cases once
(``pytest --collect-only --imgbench-list-cases``), splits them into contiguous shares, one per
alive node (neighbouring cases share their set-up: a built format, a loaded dataset), and runs a
Ray task pinned to each node (``NodeAffinitySchedulingStrategy``, not soft, no retries). The
task runs the same pytest session as a local run, limited to its share
(``--imgbench-select FILE``), with ``IMGBENCH_MACHINE_LABEL`` and ``IMGBENCH_RAY_NODE_ID`` set so
every row carries the node's machine fingerprint and label. It streams the session's results
file back each time the session rewrites it (after every case), and the driver writes it to the
results location (a folder or ``s3://``): nodes need no access to the results location, and a
node that dies keeps every case it finished.

A node that dies (or a share whose pytest ends without measuring some of its cases) fails its
own cases: they become ``failed`` rows with the reason, in that node's results file, and the run
exits 1 as for any failed case; the other nodes' rows are kept.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from imgbench.controls import session_dataset
from imgbench.errors import one_line
from imgbench.machine import MACHINE_LABEL_ENV, RAY_NODE_ENV
from imgbench.pids import remove_dead_owned
from imgbench.profiles import Profile
from imgbench.results.location import ResultsLocation
from imgbench.results.schema import empty_row
from imgbench.sessions import Session

LABEL_KEY = "imgbench/machine"  # `ray start --labels imgbench/machine=NAME`
RUN_GROUP_ENV = "IMGBENCH_RUN_GROUP"  # the plugin's (imgbench.pytest_plugin.RUN_GROUP_ENV)
POLL_S = 0.5  # how often a node looks for a rewritten results file
SHARE_PREFIX = "imgbench-ray-share-"  # a share's folder on its node: PREFIX + worker pid + random
COLLECT_TIMEOUT_S = 300

Say = Callable[[str], object]


class ClusterError(RuntimeError):
    """The cluster cannot be used (not reachable, no nodes): one line."""


@dataclass(frozen=True)
class Node:
    node_id: str
    label: str
    cpus: float
    machine: dict[str, Any]  # the node's machine columns (imgbench.machine), label included

    @property
    def short(self) -> str:
        return f"{self.label} ({self.node_id[:8]})"


@dataclass(frozen=True)
class ShareJob:
    """What one node runs: its share of one session's cases."""

    session: Session
    profile: Profile
    test_ids: tuple[str, ...]
    label: str
    node_id: str
    group: str
    create_envs: bool
    pytest_args: tuple[str, ...] = ()


@dataclass
class Share:
    """The driver's view of one node's share while it runs and after."""

    node: Node
    cases: list[dict[str, Any]]
    file_name: str | None = None
    table: pa.Table | None = None
    exit_code: int | None = None
    error: str | None = None
    log_tail: str = ""
    written: list[str] = field(default_factory=list)


# -- on the node ------------------------------------------------------------------------------------
def _die_with_parent() -> None:
    """The session ends if the Ray worker that started it dies (the node died or was stopped)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def node_facts(label: str | None) -> dict[str, Any]:
    """The machine columns of the node this runs on: the Ray label if given, else the node's own
    IMGBENCH_MACHINE_LABEL, else its hostname."""
    import ray

    from imgbench.machine import machine_info

    row = machine_info().as_row()
    row["node_label"] = label or os.environ.get(MACHINE_LABEL_ENV) or row["hostname"]
    row["ray_node_id"] = ray.get_runtime_context().get_node_id()
    return row


def _bench_targets(targets: tuple[Path, ...]) -> list[str]:
    """The driver's bench paths, or this node's benches/ when the checkout lives elsewhere."""
    found = []
    for target in targets:
        if target.exists():
            found.append(str(target))
            continue
        from imgbench.paths import benches_dir

        local = benches_dir() if target.name == "benches" else benches_dir() / target.name
        found.append(str(local))
    return found


def remove_dead_shares(parent: Path) -> None:
    """Folders of shares whose Ray worker is gone: a node killed mid-run could not remove its
    own; the next share on that machine does."""
    remove_dead_owned(parent, SHARE_PREFIX)


def measure_share(job: ShareJob) -> Iterator[tuple[Any, ...]]:
    """Run the node's share (a Ray generator task): yields ("file", name, parquet bytes) each time
    the session rewrites its results file, then ("exit", code, log tail)."""
    from imgbench.sessions import python_for_environment

    parent = Path(tempfile.gettempdir())
    remove_dead_shares(parent)
    work = Path(tempfile.mkdtemp(prefix=f"{SHARE_PREFIX}{os.getpid()}-", dir=parent))
    process: subprocess.Popen[bytes] | None = None
    try:
        results = work / "results"
        select = work / "select.txt"
        select.write_text("\n".join(job.test_ids) + "\n")
        try:
            python = python_for_environment(job.session.environment, create=job.create_envs)
        except RuntimeError as exc:
            yield ("exit", 4, f"environment {job.session.environment}: {exc}")
            return
        args = job.session.args(python, job.profile, results, None)
        targets = _bench_targets(job.session.bench_targets)
        args = [a for a in args if a not in {str(t) for t in job.session.bench_targets}]
        args[3:3] = targets  # python -m pytest TARGETS ...
        args += ["--imgbench-select", str(select), *job.pytest_args]
        env = {
            **job.session.process_env(dict(os.environ)),
            MACHINE_LABEL_ENV: job.label,
            RAY_NODE_ENV: job.node_id,
            RUN_GROUP_ENV: job.group,
        }
        log = work / "pytest.log"
        seen: dict[str, tuple[int, int]] = {}

        def changed() -> Iterator[tuple[Any, ...]]:
            for path in sorted(results.glob("*.parquet")) if results.is_dir() else []:
                if path.name.startswith("."):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    stat = path.stat()
                    key = (stat.st_mtime_ns, stat.st_size)
                    if seen.get(path.name) != key:
                        seen[path.name] = key
                        yield ("file", path.name, path.read_bytes())

        with log.open("wb") as out:
            process = subprocess.Popen(
                args,
                env=env,
                cwd=str(work),
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,  # a prctl: no locks taken
            )
            while process.poll() is None:
                time.sleep(POLL_S)
                yield from changed()
        yield from changed()
        tail = log.read_text(errors="replace")[-3000:]
        yield ("exit", process.returncode, tail)
    finally:
        if process is not None and process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            if process.poll() is None:
                process.kill()
                process.wait()
        import shutil

        shutil.rmtree(work, ignore_errors=True)


# -- on the driver ----------------------------------------------------------------------------------
def connect(address: str) -> Any:
    """Join the cluster at ``address`` (``HOST:PORT``, ``auto`` or ``ray://HOST:PORT``)."""
    try:
        import ray
    except ImportError:
        raise ClusterError("--ray needs Ray on this machine: pip install 'ray'") from None
    if ray.is_initialized():
        return ray
    _reachable(address)
    try:
        ray.init(
            address=address,
            log_to_driver=False,
            logging_level=logging.ERROR,
            include_dashboard=False,
        )
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
        raise ClusterError(f"cannot join the Ray cluster at {address}: {one_line(exc)}") from None
    return ray


def _reachable(address: str, timeout_s: float = 3.0) -> None:
    """A TCP connection to the address's host and port, before ``ray.init``: Ray retries an
    address where nothing listens for more than a minute (and ignores SIGTERM meanwhile)."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"--ray {address}: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: nothing answers at {host}:{port} "
            f"({exc.strerror or type(exc).__name__})"
        ) from None


def alive_nodes(ray: Any) -> list[Node]:
    """Every alive node with CPUs, labelled (duplicate labels get the node id's prefix)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    infos = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
    if not infos:
        raise ClusterError("the Ray cluster has no alive node with CPUs")
    facts = ray.remote(node_facts)
    refs = [
        facts.options(
            num_cpus=0,
            max_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
        ).remote((n.get("Labels") or {}).get(LABEL_KEY))
        for n in infos
    ]
    machines = ray.get(refs, timeout=120)
    counts: dict[str, int] = {}
    for machine in machines:
        counts[machine["node_label"]] = counts.get(machine["node_label"], 0) + 1
    nodes = []
    for info, machine in zip(infos, machines, strict=True):
        if counts[machine["node_label"]] > 1:
            machine["node_label"] = f"{machine['node_label']}-{info['NodeID'][:8]}"
        nodes.append(
            Node(info["NodeID"], machine["node_label"], float(info["Resources"]["CPU"]), machine)
        )
    return sorted(nodes, key=lambda n: n.label)


def collect_cases(
    session: Session, profile: Profile, keyword: str | None, pytest_args: list[str]
) -> list[dict[str, Any]]:
    """The session's cases in collection order, as the plugin lists them."""
    with tempfile.TemporaryDirectory(prefix="imgbench-collect-") as tmp:
        listing = Path(tmp) / "cases.json"
        args = session.args(sys.executable, profile, Path(tmp) / "results", keyword)
        args += [*pytest_args, "--collect-only", "-q", f"--imgbench-list-cases={listing}"]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=COLLECT_TIMEOUT_S)
        if not listing.is_file():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
            raise ClusterError(
                f"collecting the {session.save_name} cases failed (exit {proc.returncode}): "
                + " | ".join(tail)
            )
        cases: list[dict[str, Any]] = json.loads(listing.read_text())
        return cases


def split(cases: list[Any], parts: int) -> list[list[Any]]:
    """Contiguous shares of near-equal size, in order (the first ones one larger)."""
    parts = max(1, min(parts, len(cases)))
    size, extra = divmod(len(cases), parts)
    shares, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        shares.append(cases[start:end])
        start = end
    return shares


def failed_rows(
    share: Share, session: Session, profile: Profile, group: str, reason: str
) -> list[dict[str, Any]]:
    """A failed row for each case of the share that has no row: what the node did not measure."""
    done = set(share.table.column("test_id").to_pylist()) if share.table is not None else set()
    missing = [c for c in share.cases if c["test_id"] not in done]
    if not missing:
        return []
    from imgbench.machine import commit_info
    from imgbench.measure.rows import new_run_id

    run_id = share.file_name.removesuffix(".parquet") if share.file_name else None
    run_id = run_id or new_run_id(session.save_name)
    commit = commit_info()
    rows = []
    for case in missing:
        row = empty_row()
        row.update({k: v for k, v in share.node.machine.items() if k in row})
        row.update(case)
        row.update(
            run_id=run_id,
            run_name=session.save_name,
            run_group=group,
            created_utc=datetime.now(UTC),
            git_commit=commit.commit,
            git_branch=commit.branch,
            git_dirty=commit.dirty,
            dataset_name=session_dataset(session.dataset, profile, check=False),
            status="failed",
            reason=reason,
        )
        rows.append(row)
    share.file_name = f"{run_id}.parquet"
    return rows


def _finish_share(
    share: Share, session: Session, profile: Profile, group: str, results: ResultsLocation
) -> int:
    """Write failed rows for what the node did not measure; the share's exit code."""
    if share.error is not None:
        reason, code = share.error, 1
    elif share.exit_code in (0, 1, 5, None):
        last = share.log_tail.strip().splitlines()[-1:] if share.log_tail else []
        reason = f"Ray node {share.node.short} ended its session without measuring this case" + (
            f" ({last[0]})" if last else ""
        )
        code = share.exit_code or 0
    else:
        last = [ln for ln in share.log_tail.strip().splitlines() if ln.strip()][-1:]
        reason = (
            f"the session on Ray node {share.node.short} exited with code {share.exit_code}"
            + (f": {last[0]}" if last else "")
        )
        code = share.exit_code
    extra = failed_rows(share, session, profile, group, reason)
    if extra:
        from imgbench.results.store import rows_table

        table = rows_table(extra)
        if share.table is not None:
            table = pa.concat_tables([share.table, table.cast(share.table.schema)])
        assert share.file_name is not None
        results.write_table(share.file_name, table)
        share.table = table
        if share.file_name not in share.written:
            share.written.append(share.file_name)
        code = max(code, 1) if code in (0, 1, 5) else code
    return code


def _drive(ray: Any, share: Share, job: ShareJob, results: ResultsLocation) -> None:
    """Consume one node's stream: write each results file as it arrives; note how it ended."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(measure_share).options(
        num_cpus=share.node.cpus,  # the node measures nothing else of this cluster meanwhile
        max_retries=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(share.node.node_id, soft=False),
    )
    try:
        for ref in task.remote(job):
            message = ray.get(ref)
            if message[0] == "file":
                _, name, data = message
                table = pq.read_table(pa.BufferReader(data))
                results.write_table(name, table)
                share.file_name, share.table = name, table
                if name not in share.written:
                    share.written.append(name)
            elif message[0] == "exit":
                share.exit_code, share.log_tail = message[1], message[2]
    except Exception as exc:  # a RayError for a dead node or worker; anything else is one too
        share.error = f"Ray node {share.node.short} {_what_happened(ray, share.node, exc)}"


def _what_happened(ray: Any, node: Node, exc: BaseException) -> str:
    """ "died during the run: NodeDiedError: <Ray's first sentence>" or "lost its task: ..."."""
    died = isinstance(exc, ray.exceptions.NodeDiedError) or _node_gone(ray, node)
    text = one_line(exc)
    first = text.split(". ", 1)[0].split(" `", 1)[0]  # Ray appends hints and commands
    return f"{'died' if died else 'lost its task'} during the run: {first}"[:300]


# how long a lost task waits for the cluster to mark its node dead: a killed node's worker is
# reported crashed (WorkerCrashedError) before the GCS sees the node's raylet go, so asked at once
# the cluster still lists the node alive (make test saw it once in three runs)
NODE_DEATH_WAIT_S = 10.0


def _node_gone(ray: Any, node: Node, wait_s: float = NODE_DEATH_WAIT_S) -> bool:
    """The node is no longer alive in the cluster, or stops being so within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        with contextlib.suppress(Exception):
            if node.node_id not in {n["NodeID"] for n in ray.nodes() if n.get("Alive")}:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)


def run_session_on_nodes(
    ray: Any,
    session: Session,
    profile: Profile,
    keyword: str | None,
    pytest_args: list[str],
    results: ResultsLocation,
    group: str,
    create_envs: bool,
    say: Say,
) -> tuple[int, list[str]]:
    """One session spread over the alive nodes: its exit code and the files written."""
    nodes = alive_nodes(ray)
    cases = collect_cases(session, profile, keyword, pytest_args)
    if not cases:
        say(f"{session.save_name}: no cases selected")
        return 5, []
    shares = [
        Share(node, part) for node, part in zip(nodes, split(cases, len(nodes)), strict=False)
    ]
    threads = []
    for share in shares:
        say(f"{session.save_name}: {len(share.cases)} cases on Ray node {share.node.short}")
        job = ShareJob(
            session=session,
            profile=profile,
            test_ids=tuple(c["test_id"] for c in share.cases),
            label=share.node.label,
            node_id=share.node.node_id,
            group=group,
            create_envs=create_envs,
            pytest_args=tuple(pytest_args),
        )
        thread = threading.Thread(target=_drive, args=(ray, share, job, results), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    codes, written = [], []
    for share in shares:
        code = _finish_share(share, session, profile, group, results)
        codes.append(code)
        written += share.written
        statuses = share.table.column("status").to_pylist() if share.table is not None else []
        counts = ", ".join(f"{statuses.count(s)} {s}" for s in ("ok", "skipped", "failed"))
        say(
            f"{session.save_name} on {share.node.short}: {counts}"
            + (f"; {share.error}" if share.error else "")
        )
    from imgbench.sessions import combined_exit_code

    return combined_exit_code(codes), written


def run_on_ray(
    address: str,
    sessions: list[Session],
    profile: Profile,
    keyword: str | None,
    pytest_args: list[str],
    results: ResultsLocation,
    group: str,
    create_envs: bool,
    say: Say = print,
) -> tuple[list[int], list[str]]:
    """Every session over the cluster's nodes, one after another; exit codes and files written."""
    ray = connect(address)
    codes: list[int] = []
    written: list[str] = []
    try:
        for session in sessions:
            code, files = run_session_on_nodes(
                ray, session, profile, keyword, pytest_args, results, group, create_envs, say
            )
            codes.append(code)
            written += files
            if code not in (0, 1, 5):
                break
    finally:
        ray.shutdown()
    return codes, written
