"""How `imgbench run` splits a profile into pytest sessions."""

from pathlib import Path

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
    assert {c.library for c in extra} >= {"torch-dataloader", "ray-data", "tf-data", "threadpool"}
    assert "cow-experiment" not in {c.library for c in extra}
    assert 15 < len(extra) < len(main)


def test_user_dataset_and_env_narrow_the_plan() -> None:
    sessions = plan_sessions(get_profile("default"), BENCHES, "mine", dataset="/photos")
    assert [s.environment for s in sessions] == ["main", "pillow-simd", "tensorflow"]
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
