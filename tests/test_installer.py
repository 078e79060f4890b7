"""imgbench.installer: uv installs with pip's configuration, or pip does.

Real pip (its configuration read through ``pip config list``), real uv, a real venv and a real
wheel in a find-links folder: a uv that missed pip's configuration would not find the wheel.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from imgbench.installer import find_uv, install_command, pip_config, uv_flags
from imgbench.paths import repo_root


def write_wheel(folder: Path, name: str = "imgbench_toy", version: str = "1.0") -> Path:
    """A pure-Python wheel holding one module that says its version."""
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"VERSION = {version!r}\n",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def pip_env(tmp_path: Path, config: str, **variables: str) -> dict[str, str]:
    """An environment whose pip reads ``config`` as its only configuration file, plus
    ``PIP_*`` variables (and none of this machine's)."""
    conf = tmp_path / "pip.conf"
    conf.write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": str(conf), **variables}


def test_pip_configuration_becomes_uv_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files and variables, as pip applies them: a variable overrides the file's value."""
    config = (
        "[global]\nindex-url = https://index.invalid/simple\n"
        "extra-index-url = file:///a/simple file:///b/simple\nfind-links = /from/file\n"
        "cert = /etc/ssl/certs/ca-certificates.crt\ntimeout = 99\n"
    )
    env = pip_env(tmp_path, config, PIP_FIND_LINKS="/from/variable", PIP_CONSTRAINT="/c.txt")
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    options = pip_config(Path(sys.executable))
    assert options["find-links"] == "/from/variable"
    flags, uv_env = uv_flags(options)
    assert flags[:3] == ["--index-strategy", "unsafe-best-match", "--compile-bytecode"]
    pairs = list(zip(flags[3::2], flags[4::2], strict=True))
    assert ("--index-url", "https://index.invalid/simple") in pairs
    assert ("--extra-index-url", "file:///a/simple") in pairs
    assert ("--extra-index-url", "file:///b/simple") in pairs
    assert ("--find-links", "/from/variable") in pairs
    assert ("--find-links", "/from/file") not in pairs
    assert ("--constraint", "/c.txt") in pairs
    assert uv_env == {
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "UV_HTTP_TIMEOUT": "99",
    }


def test_without_uv_the_command_is_pips() -> None:
    cmd, env = install_command(Path(sys.executable), ["--no-cache-dir", "x"], use_uv=False)
    assert cmd[1:4] == ["-m", "pip", "install"] and cmd[-2:] == ["--no-cache-dir", "x"]
    assert env == {}


@pytest.mark.skipif(find_uv(Path(sys.executable)) is None, reason="uv is not installed")
def test_uv_installs_from_the_folder_only_pips_configuration_names(tmp_path: Path) -> None:
    """No index, one find-links folder, both said to pip alone: the module's command installs
    the wheel from that folder into a venv, through uv."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    write_wheel(wheels)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    env = pip_env(tmp_path, "[global]\nno-index = true\n", PIP_FIND_LINKS=str(wheels))
    env["PYTHONPATH"] = str(repo_root() / "src")
    python = venv / "bin" / "python"
    proc = subprocess.run(
        [sys.executable, "-m", "imgbench.installer", "--python", str(python), "imgbench_toy"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "installing with uv" in proc.stderr
    # compiled at install time, as pip does (before anything imported it)
    assert list(venv.glob("lib/python3*/site-packages/__pycache__/imgbench_toy.*.pyc"))
    version = subprocess.run(
        [str(python), "-c", "import imgbench_toy; print(imgbench_toy.VERSION)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.strip() == "1.0"
    assert list(venv.glob("lib/python3*/site-packages/__pycache__/imgbench_toy.*.pyc")), (
        "no bytecode"
    )
