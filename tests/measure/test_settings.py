"""One Settings record: resolved once, in a fixed order, checked, and carried into every row."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from imgbench.controls import SETTINGS_ENV, WORKER_IMPORTS_ENV, case_context, resolve
from imgbench.measure.rows import settings_columns
from imgbench.measure.settings import FIELDS, Settings, SettingsError, parse_assignments
from imgbench.profiles import Profile, get_profile
from imgbench.results.schema import COLUMNS, DESCRIPTIONS
from imgbench.stages import stage_cases

QUICK = get_profile("quick")


def test_every_control_has_a_documented_schema_column() -> None:
    """Adding a control is a Settings field, its use and one schema column: the row carries it
    without another line (imgbench.measure.rows.settings_columns)."""
    missing = [name for name in FIELDS if name not in COLUMNS]
    assert not missing, f"add a schema column (and a docs row) for these settings: {missing}"
    assert all(DESCRIPTIONS[name] for name in FIELDS)
    assert settings_columns(Settings()) == {f.name: f.default for f in dataclasses.fields(Settings)}


def test_the_profile_then_the_environment_then_the_overrides() -> None:
    environ = {WORKER_IMPORTS_ENV: "selected", SETTINGS_ENV: "rounds=7 host_max_ratio=0"}
    settings = resolve(QUICK, {"rounds": 3, "min_round_s": None}, environ=environ)
    assert settings.rounds == 3  # the override wins over the environment
    assert settings.host_max_ratio == 0.0 and settings.worker_imports == "selected"
    assert settings.min_round_s == Settings().min_round_s  # None keeps what came before
    assert settings.max_images == QUICK.settings["max_images"] == 16
    assert settings.warmup_rounds == QUICK.settings["warmup_rounds"]
    assert resolve(QUICK, environ={}).rounds == QUICK.settings["rounds"]


def test_rounds_chosen_for_a_session_are_the_loaders_rounds_too() -> None:
    """The default profile screens loaders with 5 rounds; ``--imgbench-rounds 3`` (or
    ``$IMGBENCH_SETTINGS``) must time them 3, not 5, unless ``loader_rounds`` is chosen too."""
    default = get_profile("default")
    loader, read = stage_cases("loader", default)[0], stage_cases("read", default)[0]
    assert loader.screen and not read.screen  # the registry stamps the stage's fact
    assert resolve(default, environ={}).for_case(loader).rounds == 5
    assert resolve(default, {"rounds": 3}, environ={}).for_case(loader).rounds == 3
    from_env = resolve(default, environ={SETTINGS_ENV: "rounds=2"})
    assert from_env.for_case(loader).rounds == 2
    both = resolve(default, {"rounds": 3, "loader_rounds": 4}, environ={})
    assert both.for_case(loader).rounds == 4 and both.for_case(read).rounds == 3


def test_counting_instructions_runs_one_process_importing_what_it_selected() -> None:
    settings = resolve(QUICK, {"measure": "instructions", "processes": 3}, environ={})
    assert settings.processes == 1 and settings.worker_imports == "selected"
    assert settings.in_worker()
    assert not resolve(QUICK, {"process_model": "in-process"}, environ={}).in_worker()


@pytest.mark.parametrize(
    ("assignments", "message"),
    [
        (["rounds=many"], "settings.rounds: expected int, got 'many'"),
        (["rounds=0"], "rounds=0: at least 1"),
        (["allocator=mimalloc"], "allocator='mimalloc'; known: glibc"),
        (["measure=cycles"], "settings.measure: 'cycles' is not one of"),
        (["roundz=3"], "unknown setting 'roundz'"),
        (["rounds"], "expected NAME=VALUE"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_control(assignments: list[str], message: str) -> None:
    with pytest.raises(SettingsError) as info:
        resolve(QUICK, parse_assignments(assignments), environ={})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_bad_environment_value_names_the_variable() -> None:
    with pytest.raises(SettingsError, match=f"{WORKER_IMPORTS_ENV}='everything'"):
        resolve(QUICK, environ={WORKER_IMPORTS_ENV: "everything"})


def test_values_read_as_json_else_as_text() -> None:
    assert parse_assignments(["rounds=3", "host_max_ratio=0.5", "allocator=jemalloc"]) == {
        "rounds": 3,
        "host_max_ratio": 0.5,
        "allocator": "jemalloc",
    }


def test_the_augment_budget_sees_the_sessions_rounds(tiny_dataset: Path) -> None:
    """A slow transform keeps fewer inputs when the session times more rounds: the budget is
    sized from the settings (``--imgbench-rounds``), not the profile's own count."""
    from imgbench import datasets
    from imgbench.augment.cases import augment_cases, prepare
    from imgbench.augment.plan import AugmentPlan

    plan = dataclasses.replace(QUICK.plan(AugmentPlan), budget_s=2.0)
    profile = dataclasses.replace(QUICK, plans={**QUICK.plans, "augment": plan})
    case = next(
        c
        for c in augment_cases(profile)
        if (c.library, c.variant) == ("albumentations", "numpy")
        and c.params.get("transform") == "hflip"
    )
    dataset = datasets.load_dataset(str(tiny_dataset))
    few = prepare(case_context(dataset, profile, rounds=1, max_images=8), case)
    many = prepare(case_context(dataset, profile, rounds=10**9, max_images=8), case)
    # the sample of 8 (all 10 images: no 8 of them have the folder's mean size)
    pool = len(case_context(dataset, profile, max_images=8).entries())
    assert few.images_per_round == pool and many.images_per_round == 1
    assert many.extra["items_cut_from"] == pool


def test_a_profile_table_sets_any_control(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        "[tool.imgbench.profiles.gated]\nbase = 'quick'\nrounds = 4\n"
        "[tool.imgbench.profiles.gated.settings]\nhost_budget_s = 0.25\nmeasure = 'instructions'\n"
    )
    profile = get_profile("gated", pyproject)
    settings = resolve(profile, environ={})
    assert settings.rounds == 4 and settings.host_budget_s == 0.25
    assert settings.measure == "instructions" and settings.processes == 1
    pyproject.write_text("[tool.imgbench.profiles.bad.settings]\nroundz = 3\n")
    with pytest.raises(SettingsError, match="unknown setting 'roundz'"):
        resolve(get_profile("bad", pyproject), environ={})


def test_a_profile_holds_no_copy_of_a_control() -> None:
    """``Settings`` is the one record of the controls: a profile names them in its ``settings``
    mapping and has no field of its own for any of them (no second default to drift)."""
    profile_fields = {f.name for f in dataclasses.fields(Profile)}
    assert profile_fields & set(FIELDS) == set()
    for name in ("quick", "default", "full", "gpu", "disk"):
        assert set(get_profile(name).settings) <= set(FIELDS)
