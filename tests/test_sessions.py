"""How `imgbench run` splits a profile into pytest sessions."""

from collections.abc import Callable
from pathlib import Path

import pytest

from imgbench.profiles import get_profile
from imgbench.sessions import combined_exit_code, plan_sessions

BENCHES = Path("benches")


def test_quick_is_one_session() -> None:
    (session,) = plan_sessions(get_profile("quick"), BENCHES, "ci")
    assert (session.environment, session.dataset, session.save_name) == ("main", None, "ci")
    assert session.bench_target == BENCHES


def test_default_adds_environments_and_real_photos_for_readers() -> None:
    sessions = plan_sessions(get_profile("default"), BENCHES, "default")
    names = [s.save_name for s in sessions]
    assert names == [
        "default",
        "default-real-sample",
        "default-pillow-simd",
        "default-pillow-simd-real-sample",
        "default-tensorflow",
        "default-tensorflow-real-sample",
        "default-albumentationsx",  # its loader pipeline is not on the real photos: no session
        "default-mxnet",
        "default-mxnet-real-sample",
        "default-allocator-glibc-tuned",
        "default-allocator-jemalloc",
        "default-allocator-tcmalloc",
        "default-disk-hdd",
        "default-disk-real",
    ]
    real = [s for s in sessions if s.dataset == "real-sample"]
    readers_and_loaders = (BENCHES / "bench_readers.py", BENCHES / "bench_loaders.py")
    assert all(s.bench_targets == readers_and_loaders and s.secondary for s in real)
    args = real[0].args("python", get_profile("default"), Path("out"), None)
    assert args[3:5] == [str(p) for p in readers_and_loaders]
    assert "--imgbench-secondary" in args
    assert not any(s.secondary for s in sessions if s.dataset is None)


def test_secondary_sessions_thin_the_loader_plan() -> None:
    from imgbench.loaders.cases import loader_cases

    default = get_profile("default")
    main = loader_cases(default)
    extra = loader_cases(default.on_extra_dataset())
    # real photos meet the whole pipeline in each environment's reference loader, without the sweep
    assert {c.library for c in extra} >= {"torch-dataloader", "tf-data"}
    assert "cow-experiment" not in {c.library for c in extra}
    assert sorted(c.params["workers"] for c in extra if c.library == "torch-dataloader") == [0, 2]
    assert len(extra) < len(main) / 4


def test_user_dataset_and_env_narrow_the_plan() -> None:
    sessions = plan_sessions(get_profile("default"), BENCHES, "mine", dataset="/photos")
    assert [s.environment for s in sessions if not s.allocator and s.disk is None] == [
        "main",
        "pillow-simd",
        "tensorflow",
        "albumentationsx",
        "mxnet",
    ]
    assert all(s.dataset == "/photos" for s in sessions)
    only = plan_sessions(get_profile("default"), BENCHES, "x", environment="tensorflow")
    assert {s.environment for s in only} == {"tensorflow"}
    none = plan_sessions(get_profile("default"), BENCHES, "x", with_environments=False)
    assert {s.environment for s in none} == {"main"}


def test_args_carry_profile_dataset_and_selection() -> None:
    session = plan_sessions(get_profile("quick"), BENCHES, "ci", dataset="real-sample")[0]
    args = session.args("python", get_profile("quick"), Path("out"), "jpeg")
    assert args[:4] == ["python", "-m", "pytest", "benches"]
    assert "--imgbench-profile=quick" in args and "--dataset=real-sample" in args
    assert args[-2:] == ["-k", "jpeg"]


def test_exit_codes_combine() -> None:
    assert combined_exit_code([0, 0]) == 0
    assert combined_exit_code([0, 1, 5]) == 1
    assert combined_exit_code([1, 2]) == 2


def test_default_adds_one_session_per_allocator_under_that_allocator() -> None:
    from imgbench.measure.allocator import GLIBC_TUNED

    default = get_profile("default")
    sessions = [s for s in plan_sessions(default, BENCHES, "d") if s.allocator]
    assert [s.allocator for s in sessions] == ["glibc-tuned", "jemalloc", "tcmalloc"]
    for session in sessions:
        assert session.environment == "main" and session.dataset is None
        assert {t.name for t in session.bench_targets} == {
            "bench_readers.py",
            "bench_augment.py",
            "bench_loaders.py",
        }
        args = session.args("python", default, Path("out"), None)
        assert f"--imgbench-allocator={session.allocator}" in args
        assert "--imgbench-allocator-session" in args
    tuned = sessions[0].process_env({"PATH": "/bin", "MALLOC_ARENA_MAX": "2"})
    assert tuned == {"PATH": "/bin", **GLIBC_TUNED}  # other MALLOC_ settings are not inherited
    assert not [s for s in plan_sessions(get_profile("quick"), BENCHES, "q") if s.allocator]


def test_allocator_sessions_thin_the_plan_and_name_the_allocator_in_case_ids() -> None:
    from imgbench.measure.case import with_allocator
    from imgbench.stages import stage_cases

    profile = get_profile("default").in_allocator_session()
    reads = with_allocator(stage_cases("read", profile), "jemalloc")
    assert {c.library for c in reads} == {"pillow", "opencv", "simplejpeg"}
    assert all(
        c.params["allocator"] == "jemalloc" and "allocator=jemalloc" in c.case_id for c in reads
    )
    main_ids = {c.case_id for c in stage_cases("read", get_profile("default"))}
    assert not main_ids & {c.case_id for c in reads}


def test_counting_instructions_runs_the_main_environment_without_allocator_sessions() -> None:
    sessions = plan_sessions(get_profile("default"), BENCHES, "gate", measure="instructions")
    assert [s.save_name for s in sessions] == ["gate", "gate-real-sample"]
    assert all(s.environment == "main" and s.allocator is None for s in sessions)
    args = sessions[0].args("python", get_profile("default"), Path("out"), None)
    assert "--imgbench-measure=instructions" in args
    wall = plan_sessions(get_profile("quick"), BENCHES, "w")[0]
    assert not any(
        a.startswith("--imgbench-measure")
        for a in wall.args("p", get_profile("quick"), Path("o"), None)
    )


def test_missing_environments_build_at_once_and_a_failed_one_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run builds what it lacks in parallel before measuring; a build that fails is reported
    (and its sessions skipped by the run), the others are built."""
    import threading
    import time

    import imgbench.envs as envs
    from imgbench.envs import EnvError
    from imgbench.sessions import build_missing_environments

    running: set[str] = set()
    overlapped = threading.Event()
    lock = threading.Lock()

    def create_env(name: str, *, log: Callable[[str], None]) -> Path:
        with lock:
            running.add(name)
            if len(running) > 1:
                overlapped.set()
        log("creating")
        time.sleep(0.2)
        with lock:
            running.discard(name)
        if name == "mxnet":
            raise EnvError("pip install mxnet failed: no wheel")
        return Path(name)

    monkeypatch.setattr(envs, "create_env", create_env)
    monkeypatch.setattr(envs, "is_built", lambda name: name == "tensorflow")
    lines: list[str] = []
    failed = build_missing_environments(
        ["main", "pillow-simd", "tensorflow", "mxnet", "pillow-simd"], say=lines.append
    )
    assert failed == {"mxnet": "pip install mxnet failed: no wheel"}
    assert overlapped.is_set()
    assert lines[0] == "building the pillow-simd, mxnet environments at once (a few minutes, once)"
    assert "  mxnet: creating" in lines
    assert build_missing_environments(["main", "tensorflow"], say=lines.append) == {}


def test_default_adds_an_hdd_session_and_the_real_disk_pass_of_the_same_sample() -> None:
    default = get_profile("default")
    hdd, real = (s for s in plan_sessions(default, BENCHES, "d") if s.disk is not None)
    assert (hdd.disk, hdd.save_name, real.disk, real.save_name) == (
        "hdd",
        "d-disk-hdd",
        "none",
        "d-disk-real",
    )
    assert all(
        s.environment == "main" and s.dataset is None and not s.allocator for s in (hdd, real)
    )
    # the real disk's format reads are the main session's own cold rows: only its loaders run
    assert [t.name for t in hdd.bench_targets] == ["bench_formats.py", "bench_loaders.py"]
    assert [t.name for t in real.bench_targets] == ["bench_loaders.py"]
    args = hdd.args("python", default, Path("out"), None)
    assert "--imgbench-disk=hdd" in args and "--imgbench-disk-session" in args
    assert "--imgbench-disk=none" in real.args("python", default, Path("out"), None)
    # none where the run is on an emulated disk already, counts instructions, or lacks main
    assert not [s for s in plan_sessions(default, BENCHES, "d", with_disks=False) if s.disk]
    assert not [s for s in plan_sessions(default, BENCHES, "d", measure="instructions") if s.disk]
    assert not [s for s in plan_sessions(default, BENCHES, "d", environment="mxnet") if s.disk]
    assert not [s for s in plan_sessions(get_profile("quick"), BENCHES, "q") if s.disk]


def test_disk_sessions_read_cold_on_a_small_sample_with_the_disk_in_case_ids() -> None:
    from imgbench.controls import resolve
    from imgbench.loaders.plan import LoaderPlan
    from imgbench.profiles import ProfileChoice
    from imgbench.stages import session_cases

    default = get_profile("default")
    hdd = ProfileChoice("default", disk_session="hdd")
    settings = resolve(hdd.resolve())
    formats = session_cases("format", hdd, settings)
    assert sorted({c.params["format"] for c in formats}) == ["folder", "lmdb", "recordio", "tar"]
    reads = [c for c in formats if c.params.get("mode") == "read"]
    assert len(reads) == 4 and all(
        (c.params["cache_state"], c.params["order"], c.params["payload"])
        == ("cold", "shuffled", "bytes")
        for c in reads
    )
    loaders = session_cases("loader", hdd, settings)
    assert sorted(c.params["format"] for c in loaders) == ["files", "recordio", "tar"]
    assert {(c.library, c.params["workers"], c.params["batch_size"]) for c in loaders} == {
        ("torch-dataloader", 2, 8)
    }
    assert hdd.resolve().plan(LoaderPlan).cold_rounds  # the real disk's loader rounds too
    assert settings.max_images == default.settings["max_images"]  # the main session's sample
    assert all(c.params["disk_pass"] == "hdd" for c in formats + loaders)
    main_ids = {c.case_id for c in session_cases("format", ProfileChoice("default"), settings)}
    assert not main_ids & {c.case_id for c in formats}  # never joined with the main rows
    real = ProfileChoice("default", disk_session="none")
    assert session_cases("format", real, settings) == []
    assert {c.params["disk_pass"] for c in session_cases("loader", real, settings)} == {"none"}
    for stage in ("read", "augment"):
        assert session_cases(stage, hdd, settings) == []


def test_a_disk_pass_row_is_the_disk_advice_s_never_the_main_answer_s() -> None:
    from imgbench.answer.rows import is_disk_pass

    assert is_disk_pass({"params_json": '{"format": "tar", "disk_pass": "hdd"}'})
    assert not is_disk_pass({"params_json": '{"format": "tar"}'})
    assert not is_disk_pass({"params_json": None})
