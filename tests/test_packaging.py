"""What pyproject.toml ships: every package-data glob names files that exist."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _package_dirs(package: str) -> list[Path]:
    """The source folders of ``package`` ("*" in package-data means every package)."""
    where = [ROOT / w for w in _setuptools()["packages"]["find"]["where"]]
    if package == "*":
        return [init.parent for w in where for init in w.rglob("__init__.py")]
    parts = package.split(".")
    return [w.joinpath(*parts) for w in where if w.joinpath(*parts).is_dir()]


def test_every_package_data_glob_matches_a_file() -> None:
    package_data = _setuptools()["package-data"]
    assert package_data, "no [tool.setuptools.package-data]"
    for package, patterns in package_data.items():
        folders = _package_dirs(package)
        assert folders, f"package-data names {package!r}, which is not a package under src/"
        for pattern in patterns:
            matches = [f for folder in folders for f in folder.glob(pattern) if f.is_file()]
            assert matches, f"package-data {package!r}: {pattern!r} matches no file in {folders}"
