"""The pytest plugin's options: which option overrides which :class:`Settings` field.

Declared as data, so that the plugin (:mod:`imgbench.pytest_plugin`) stays hooks only and a new
measuring control is one row here once it is a ``Settings`` field.
"""

from __future__ import annotations

from typing import Any

import pytest

from imgbench.controls import resolve
from imgbench.disks.catalog import PROFILES
from imgbench.measure.allocator import ALLOCATORS
from imgbench.measure.layout import LAYOUTS
from imgbench.measure.settings import (
    FIELDS,
    MEASURES,
    PROCESS_MODELS,
    WORKER_IMPORTS,
    Settings,
    parse_assignments,
)
from imgbench.profiles import Profile


def _ms(value: float | None) -> float | None:
    return None if value is None else value / 1e3


# option -> (argparse keywords, the Settings field it overrides, conversion)
_SETTING_OPTIONS: dict[str, tuple[dict[str, Any], str, Any]] = {
    "--imgbench-rounds": ({"type": int, "help": "timed rounds per case"}, "rounds", None),
    "--imgbench-max-images": ({"type": int, "help": "images per timed round"}, "max_images", None),
    "--imgbench-process": (
        {
            "choices": PROCESS_MODELS,
            "help": "worker: each case in a fresh fork of a pristine "
            "server process; in-process: in this pytest process",
        },
        "process_model",
        None,
    ),
    "--imgbench-allocator": (
        {"choices": ALLOCATORS, "help": "the worker processes' allocator"},
        "allocator",
        None,
    ),
    "--imgbench-worker-imports": (
        {
            "choices": WORKER_IMPORTS,
            "help": "profile: the worker server imports what every case "
            "of the profile needs, so a case alone and inside the suite fork from the same process; "
            "selected: only the selected cases' (always so for instruction counts)",
        },
        "worker_imports",
        None,
    ),
    "--imgbench-processes": (
        {
            "type": int,
            "metavar": "N",
            "help": "worker processes per case, each with its own heap "
            "layout, their rounds pooled (pyperf's processes)",
        },
        "processes",
        None,
    ),
    "--imgbench-address-layout": (
        {
            "choices": LAYOUTS,
            "help": "fixed: the worker processes run with address-space "
            "randomisation off; randomized: the kernel's draw per session",
        },
        "address_layout",
        None,
    ),
    "--imgbench-min-round-ms": (
        {"type": float, "help": "a timed round repeats its items until it lasts this long"},
        "min_round_s",
        _ms,
    ),
    "--imgbench-min-case-ms": (
        {"type": float, "help": "a case times rounds until they add up to this (0: rounds only)"},
        "min_case_s",
        _ms,
    ),
    "--imgbench-host-gate": (
        {
            "type": float,
            "metavar": "RATIO",
            "help": "time a round again when a host probe beside "
            "it ran this many times slower than the session's fastest; 0 keeps every round",
        },
        "host_max_ratio",
        None,
    ),
    "--imgbench-disk": (
        {
            "choices": tuple(PROFILES),
            "help": "put the dataset and the format stores on an emulated disk (a loop device "
            "whose reads are capped: docs/disks.md); none: the disk the data sits on",
        },
        "disk_profile",
        None,
    ),
    "--imgbench-measure": (
        {
            "choices": MEASURES,
            "help": "wall: timed rounds; instructions: one pass per case "
            "counted under valgrind's callgrind (deterministic; CPU-bound single-thread cases only)",
        },
        "measure",
        None,
    ),
}
_SESSION_OPTIONS: dict[str, dict[str, Any]] = {
    "--imgbench-results": {
        "metavar": "DIR",
        "default": "results",
        "help": "folder or s3:// prefix for the run's parquet file",
    },
    "--imgbench-profile": {
        "metavar": "NAME",
        "default": "default",
        "help": "quick | default | full, or a [tool.imgbench.profiles.NAME] of pyproject.toml",
    },
    "--imgbench-env": {
        "metavar": "NAME",
        "default": "main",
        "help": "the isolated environment "
        "this session runs in (main, pillow-simd, tensorflow, mosaic, albumentationsx, mxnet)",
    },
    "--imgbench-secondary": {
        "action": "store_true",
        "help": "this session runs one of the profile's extra datasets: stages thin their plans",
    },
    "--imgbench-allocator-session": {
        "action": "store_true",
        "help": "this session measures one of the profile's allocators: its allocator_plans",
    },
    "--imgbench-disk-session": {
        "action": "store_true",
        "help": "this session is one of the profile's disk passes on --imgbench-disk's disk "
        "(none: the real disk's): its disk_plans",
    },
    "--imgbench-select": {
        "metavar": "FILE",
        "help": "run only the tests whose node ids FILE "
        "lists, one a line (how `imgbench run --ray` gives nodes their share)",
    },
    "--imgbench-list-cases": {
        "metavar": "FILE",
        "help": "write the collected cases (test id, case id, stage, library, ...) to FILE as JSON",
    },
}


def add_options(parser: pytest.Parser) -> None:
    """Every imgbench option, in one group of ``pytest --help``."""
    group = parser.getgroup("imgbench", "imgbench: image pipeline benchmarks")
    group.addoption(
        "--dataset",
        "--imgbench-dataset",
        dest="imgbench_dataset",
        metavar="PATH_OR_RECIPE",
        help="a folder of images, or a recipe name from datasets/ (default: the profile's)",
    )
    for name, kwargs in _SESSION_OPTIONS.items():
        group.addoption(name, **kwargs)
    group.addoption(
        "--imgbench-set",
        action="append",
        metavar="NAME=VALUE",
        help=f"any measuring control by its Settings name ({', '.join(FIELDS)}); repeatable; "
        "the named options below win over it",
    )
    for name, (kwargs, setting, _) in _SETTING_OPTIONS.items():
        group.addoption(
            name,
            default=None,
            **{
                **kwargs,
                "help": kwargs["help"] + (f" (Settings.{setting}; default: the profile's)"),
            },
        )


def _option(config: pytest.Config, flag: str) -> Any:
    return config.getoption(flag.removeprefix("--").replace("-", "_"))


def settings_from(config: pytest.Config, profile: Profile) -> Settings:
    """The session's settings: the profile's, then ``$IMGBENCH_WORKER_IMPORTS``, then
    ``--imgbench-set``, then the named options."""
    overrides = parse_assignments(config.getoption("imgbench_set"))
    for flag, (_, setting, convert) in _SETTING_OPTIONS.items():
        value = _option(config, flag)
        if value is not None:
            overrides[setting] = convert(value) if convert else value
    return resolve(profile, overrides)
