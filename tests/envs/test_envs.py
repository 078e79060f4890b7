"""Isolated environments: the logic cheaply, and the real venvs only when they already exist.

Building a venv takes one to two minutes (pillow-simd compiles), so tests never build one:
`imgbench env create NAME` (run by `make bench`) does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from imgbench.envs import (
    ENVIRONMENTS,
    EnvError,
    core_requirements,
    current_environment,
    env_dir,
    parse_facts,
    pillow_simd_problem,
    python_for,
    simd_cflags,
    verify_env,
)
from imgbench.paths import repo_root

ROOT = repo_root()


def test_core_requirements_come_from_pyproject_without_pillow() -> None:
    assert ROOT is not None
    reqs = core_requirements(ROOT / "pyproject.toml", drop=("pillow",))
    names = {r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in reqs}
    assert "pillow" not in names and {"numpy", "pytest-benchmark", "pyarrow"} <= names
    assert any(r.lower().startswith("pillow") for r in core_requirements(ROOT / "pyproject.toml"))


def test_core_requirements_error_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("not toml [")
    with pytest.raises(EnvError, match="cannot read the dependencies") as excinfo:
        core_requirements(tmp_path / "pyproject.toml")
    assert "\n" not in str(excinfo.value)


def test_python_for_a_missing_env_says_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(EnvError, match="imgbench env create pillow-simd"):
        python_for("pillow-simd", root=tmp_path)
    with pytest.raises(
        EnvError, match="unknown environment 'nope'; known: pillow-simd, tensorflow, mosaic"
    ):
        env_dir("nope")


def test_pillow_simd_problems_are_named() -> None:
    good = {"PIL": "12.1.1.post0", "pillow-simd": "12.1.1.post0", "pillow": "None"}
    assert pillow_simd_problem(good) is None
    assert "shadows it" in (pillow_simd_problem({**good, "pillow": "13.0.0"}) or "")
    assert "not installed" in (pillow_simd_problem({**good, "pillow-simd": "None"}) or "")
    assert "not the pillow-simd version" in (pillow_simd_problem({**good, "PIL": "13.0.0"}) or "")
    plain = {"PIL": "9.0.0", "pillow-simd": "9.0.0", "pillow": "None"}
    assert "does not look like a SIMD build" in (pillow_simd_problem(plain) or "")


def test_facts_and_flags() -> None:
    assert parse_facts("PIL=1.2\nnoise\npillow = None\n") == {"PIL": "1.2", "pillow": "None"}
    assert simd_cflags() in ("-mavx2", "-msse4")
    spec = ENVIRONMENTS["pillow-simd"]
    assert spec.pip_env["CC"].startswith("cc -m") and "--no-cache-dir" in spec.pip_flags
    assert spec.drop == ("pillow",) and spec.last == ("pillow-simd",)
    assert current_environment() == "main"


def _existing(name: str) -> Path:
    assert ROOT is not None
    python = env_dir(name, ROOT) / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{name} env not built here (`imgbench env create {name}`; make bench does)")
    return python


def test_pillow_simd_env_is_a_verified_simd_build() -> None:
    python = _existing("pillow-simd")
    facts = verify_env("pillow-simd", ROOT)
    assert ".post" in facts["PIL"] and facts["PIL"] == facts["pillow-simd"]
    code = (
        "from imgbench.envs import current_environment, pillow_simd_facts, pillow_simd_problem;"
        "print(current_environment(), pillow_simd_problem(pillow_simd_facts()))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["pillow-simd", "None"]


def test_tensorflow_env_decodes_real_photos_within_tolerance(tmp_path: Path) -> None:
    python = _existing("tensorflow")
    from tests.readers.images import photo_bytes

    for name in ("coffee", "chelsea"):
        (tmp_path / f"{name}.jpg").write_bytes(photo_bytes(name, "jpeg"))
        (tmp_path / f"{name}.png").write_bytes(photo_bytes(name, "png"))
    code = f"""
import sys
from pathlib import Path
from imgbench.readers.registry import find_spec, build_reader
from imgbench.readers.verify import verify_item
for variant in ("decode-image", "decode-jpeg"):
    spec = find_spec("tensorflow", variant)
    reader = build_reader(spec)
    for path in sorted(Path({str(tmp_path)!r}).iterdir()):
        codec = "jpeg" if path.suffix == ".jpg" else "png"
        if codec not in spec.codecs:
            continue
        data = path.read_bytes()
        for fn, item in ((reader.decode, data), (reader.read, str(path))):
            v = verify_item(fn, item, path=path.name, data=data, key=path.name, codec=codec)
            print(variant, path.name, v.ok, v.detail, v.mae)
"""
    proc = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 12, proc.stdout
    assert all(line.split()[2] == "True" for line in lines), proc.stdout


def test_this_interpreter_is_not_an_env() -> None:
    assert ".venvs" not in Path(sys.prefix).parts[-2:]


def test_a_case_of_an_env_not_built_here_says_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from imgbench.envs import environment_problem, is_built
    from imgbench.formats.registry import get_format

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "benches").mkdir()
    monkeypatch.chdir(tmp_path)  # this folder is the checkout: it has no .venvs/
    assert not is_built("mosaic") and environment_problem("main") is None
    reason = "mosaic env not built: `imgbench env create mosaic`"
    assert environment_problem("mosaic") == reason
    assert get_format("mds").unmet_requirement() == reason  # before its imports are tried
    assert environment_problem("nope") == "nope env not built: `imgbench env create nope`"


def test_mosaic_env_has_streaming_without_downgrading_numpy() -> None:
    python = _existing("mosaic")
    facts = verify_env("mosaic", ROOT)
    assert (
        facts["streaming"].startswith("0.13.") and facts["mosaicml-streaming"] == facts["streaming"]
    )
    major, minor = (int(x) for x in facts["numpy"].split(".")[:2])
    assert (major, minor) >= (2, 2), facts  # streaming declares numpy<2.2: installed --no-deps
    code = "from imgbench.envs import current_environment; print(current_environment())"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["mosaic"]
