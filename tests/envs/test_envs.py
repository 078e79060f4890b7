"""Isolated environments: the logic cheaply, and the real venvs only when they already exist.

Building a venv takes one to two minutes (pillow-simd compiles), so tests never build one:
`imgbench env create NAME` (run by `make bench`; `make test` builds the tensorflow and mosaic
envs) does. The layering of an env over the main one is tested on a bare venv (no pip).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

from imgbench.envs import (
    ENVIRONMENTS,
    EnvError,
    core_requirements,
    current_environment,
    env_dir,
    layer_over,
    main_site_packages,
    parse_facts,
    pillow_simd_problem,
    python_for,
    shadowed_distributions,
    simd_cflags,
    site_packages_of,
    verify_env,
)
from imgbench.objectstore.server import weed_missing
from imgbench.paths import repo_root
from tests.formats.mosaic_session import mosaic_run
from tests.profiling.tf_env_run import tf_env_run

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
    # layered: PIL must come from the env's own site-packages, not the main env's Pillow behind it
    behind = {**good, "PIL-own-site": "False", "PIL-file": "/main/site-packages/PIL/__init__.py"}
    assert "/main/site-packages" in (pillow_simd_problem(behind) or "")
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


def test_tensorflow_env_decodes_real_photos_within_tolerance(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Both TensorFlow readers, bytes and path, on two photos as JPEG and PNG, verified against
    the reference decode there: in the env's one interpreter of the test process, before the
    Keras and tf.data profiles it runs (tests/profiling/tf_env_run.py)."""
    _existing("tensorflow")
    run = tf_env_run(tmp_path_factory)
    assert run.returncode == 0 and run.found, run.output
    assert "decode_error" not in run.found, run.found["decode_error"]
    lines = run.found["decodes"]
    assert len(lines) == 12, lines  # decode-image: JPEG and PNG; decode-jpeg: JPEG; x2 photos x2
    assert all(ok is True for _, _, ok, _, _ in lines), lines


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


def test_mosaic_env_has_streaming_without_downgrading_numpy(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """What the env verifies and sees, read in its bench session's interpreter after the cases
    (tests/formats/mosaic_session.py: one mosaic-env start for this and the MDS tests;
    `verify_env` itself, the env's script in a fresh interpreter, is test_mxnet_env.py's)."""
    python = _existing("mosaic")
    if reason := weed_missing():  # the env links the main env's weed: it must be there
        pytest.fail(f"the mosaic env links weed, and {reason}")
    run = mosaic_run(tmp_path_factory, request.getfixturevalue("s3_env"))
    found = run.probe.get("facts", {})
    assert found and "error" not in found, found.get("error", run.output)
    facts = found["verified"]
    assert found["problem"] is None, found["problem"]  # what verify_env raises on
    assert (
        facts["streaming"].startswith("0.13.") and facts["mosaicml-streaming"] == facts["streaming"]
    )
    major, minor = (int(x) for x in facts["numpy"].split(".")[:2])
    assert (major, minor) >= (2, 2), facts  # streaming declares numpy<2.2: installed --no-deps
    assert found["environment"] == "mosaic"
    # layered: streaming is the env's own; numpy and torch are this (main) env's, the very files
    # and versions; the env holds no second copy of anything the main env has; the main env
    # cannot import streaming
    own, main = site_packages_of(python), main_site_packages()
    import numpy

    assert facts["numpy"] == numpy.__version__
    assert Path(facts["numpy-site"]) in main and Path(facts["torch-site"]) in main
    assert facts["torch"].split("+")[0] == metadata.version("torch").split("+")[0]
    assert Path(facts["streaming-site"]) == own and own.parent.parent.parent == env_dir("mosaic")
    assert shadowed_distributions(own, main) == []
    assert facts["layered-over"].split(",") == [str(site) for site in main]
    assert not (own / "numpy").exists() and not (own / "torch").exists()
    assert [found["numpy"], found["torch"]] == [
        metadata.version("numpy"),
        metadata.version("torch"),
    ]
    # seaweedfs' binary, linked beside the env's python
    assert found["weed"] and Path(found["weed"]).parent == python.parent
    # the main env: no streaming, not even in a fresh interpreter of it
    assert importlib.util.find_spec("streaming") is None
    main_run = subprocess.run(
        [sys.executable, "-c", "import streaming"], capture_output=True, text=True, check=False
    )
    assert main_run.returncode == 1 and "No module named 'streaming'" in main_run.stderr


def test_main_site_packages_are_this_interpreters(monkeypatch: pytest.MonkeyPatch) -> None:
    sites = main_site_packages()
    assert Path(sysconfig.get_paths()["purelib"]) in sites
    import numpy

    assert Path(numpy.__file__).parents[1] in sites
    monkeypatch.setattr(sys, "prefix", str(Path("/x/.venvs/mosaic")))
    with pytest.raises(EnvError, match="this interpreter is the mosaic environment"):
        main_site_packages()


def test_a_layered_venv_sees_the_main_env_after_its_own(tmp_path: Path) -> None:
    """A bare venv (no pip) with the layer file: it imports the main env's numpy, its own
    site-packages come first, and the main env's own .pth files (its editable imgbench) do not
    run."""
    venv = tmp_path / "layered"
    base = getattr(sys, "_base_executable", None) or sys.executable
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own, main = site_packages_of(python), main_site_packages()
    pth = layer_over(own, main)
    assert pth.parent == own and pth.read_text().splitlines() == [str(s) for s in main]
    (own / "imgbench_layer_probe.py").write_text("WHERE = 'own'\n")
    code = (
        "import sys, numpy, imgbench_layer_probe as p; "
        "print(numpy.__version__, numpy.__file__, p.WHERE, sys.path.index(sys.argv[1]), "
        "sys.path.index(sys.argv[2]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [str(python), "-c", code, str(own), str(main[0])],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    version, numpy_file, where, own_at, main_at = out.stdout.split()
    import numpy

    assert version == numpy.__version__ and Path(numpy_file).is_relative_to(main[0])
    assert where == "own" and int(own_at) < int(main_at)
    main_pth_paths = [
        line.strip()
        for pth_file in main[0].glob("*.pth")
        for line in pth_file.read_text().splitlines()
        if line.strip() and not line.startswith(("import", "#"))
    ]
    listed = subprocess.run(
        [str(python), "-c", "import sys; print('\\n'.join(sys.path))"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.splitlines()
    assert not set(main_pth_paths) & set(listed)
    # and the main env does not see the venv
    assert str(own) not in sys.path and importlib.util.find_spec("imgbench_layer_probe") is None


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_shadowed_distributions_are_second_copies_of_main_packages(tmp_path: Path) -> None:
    own, main = tmp_path / "own", tmp_path / "main"
    for name, version in (("numpy", "2.1.3"), ("pip", "23.2"), ("imgbench", "0.1.0")):
        _dist(own, name, version)
    _dist(own, "mosaicml-streaming", "0.13.0")
    for name, version in (("numpy", "2.4.6"), ("pip", "26.0"), ("imgbench", "0.1.0")):
        _dist(main, name, version)
    _dist(main, "torch", "2.14.1")
    assert shadowed_distributions(own, [main]) == ["numpy 2.1.3 over 2.4.6"]
    assert shadowed_distributions(main, [own]) == ["numpy 2.4.6 over 2.1.3"]
    assert shadowed_distributions(own, [main], allowed=("numpy",)) == []  # an env's may_shadow
    (own / "numpy-2.1.3.dist-info" / "METADATA").unlink()
    assert shadowed_distributions(own, [main]) == []


def test_the_mosaic_env_is_layered_and_links_weed() -> None:
    spec = ENVIRONMENTS["mosaic"]
    assert spec.layered and spec.link_bin == ("weed",)
    assert not ENVIRONMENTS["tensorflow"].layered
    # pillow-simd and AlbumentationsX are layered too: torch, OpenCV and the rest are the main env's
    assert ENVIRONMENTS["pillow-simd"].layered and ENVIRONMENTS["albumentationsx"].layered
    good = {"streaming": "0.13.0", "numpy": "2.4.6", "layered-over": "/x/site-packages"}
    assert spec.problem(good) is None
    assert "not layered over the main env" in (spec.problem({**good, "layered-over": ""}) or "")
    assert "does not import" in (spec.problem({**good, "streaming": ""}) or "")
