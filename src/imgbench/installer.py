"""Install into a venv with uv where it is there, with pip's configuration; pip otherwise.

uv installs what pip resolves (the same 161 distributions and versions for ``.[all]`` here) in
about a sixth of the time (docs/decisions.md), but it does not read pip's configuration: an
index, find-links folder or constraints file that pip was told about (``pip.conf``, ``PIP_*``)
would be missed, and uv would resolve against PyPI alone. So the flags are carried over from
``pip config list``, pip's own view of every configuration file and variable, and uv is asked to
pick the best match across indexes, as pip does. Stdlib only: the Makefile runs it
(``python -m imgbench.installer``) before imgbench's dependencies are installed.

Not for a *layered* env (:mod:`imgbench.envs`): uv looks only at the target's own site-packages
and would install again everything the main env's ``.pth`` layer already provides.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

# pip options (from its configuration) that uv names another way; each value is a list of items
_LIST_FLAGS = {
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
}
# pip command-line flags that uv spells differently or has no use for
_FLAG_NAMES = {"--no-cache-dir": "--no-cache"}
_DROPPED_FLAGS = frozenset({"--disable-pip-version-check"})
_SECTION_RANK = {"global": 0, "install": 1, ":env:": 2}


def pip_config(python: Path) -> dict[str, str]:
    """pip's configuration as ``python``'s pip sees it: option -> value. ``pip config list``
    prints each section's effective value (files merged already), sorted by name; for an install
    a ``PIP_*`` variable wins over the ``[install]`` section, which wins over ``[global]``."""
    for interpreter in (python, Path(sys.executable)):  # a venv made --without-pip: ours
        proc = subprocess.run(
            [str(interpreter), "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode == 0:
            break
    ranked: dict[str, tuple[int, str]] = {}
    for line in proc.stdout.splitlines():
        key, sep, raw = line.partition("=")
        section, dot, option = key.rpartition(".")
        rank = _SECTION_RANK.get(section)
        if not sep or not dot or rank is None:
            continue
        try:
            value = str(ast.literal_eval(raw))
        except (ValueError, SyntaxError):
            value = raw.strip("'\"")
        if option not in ranked or rank >= ranked[option][0]:
            ranked[option] = (rank, value)
    return {option: value for option, (_, value) in ranked.items()}


def uv_flags(options: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The uv flags and environment that say what pip's ``options`` say."""
    flags = [
        "--index-strategy",
        "unsafe-best-match",  # pip takes the best version of any index
        # pip writes every module's bytecode at install time; without it each first import
        # compiles (torch's 2,351 modules: the first test sessions paid it, not the install)
        "--compile-bytecode",
    ]
    env: dict[str, str] = {}
    if "index-url" in options:
        flags += ["--index-url", options["index-url"]]
    for option, flag in _LIST_FLAGS.items():
        for item in options.get(option, "").split():
            flags += [flag, item]
    if options.get("no-index", "").lower() in {"1", "true", "yes", "on"}:
        flags.append("--no-index")
    if "cert" in options:
        env["SSL_CERT_FILE"] = options["cert"]
    timeout = options.get("timeout") or options.get("default-timeout")
    if timeout:
        env["UV_HTTP_TIMEOUT"] = timeout
    return flags, env


def find_uv(python: Path) -> Path | None:
    """uv beside ``python`` (installed into that venv) or beside this interpreter, else on PATH."""
    for folder in (python.parent, Path(sys.executable).parent):
        candidate = folder / "uv"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("uv")
    return Path(found) if found else None


def install_command(
    python: Path, args: list[str], *, use_uv: bool = True
) -> tuple[list[str], dict[str, str]]:
    """The command (and extra environment) that installs ``args`` (pip's syntax) into the venv
    of ``python``: uv's when it is found and ``use_uv``, pip's otherwise."""
    uv = find_uv(python) if use_uv else None
    if uv is None:
        return [str(python), "-m", "pip", "install", "--disable-pip-version-check", *args], {}
    flags, env = uv_flags(pip_config(python))
    translated = [_FLAG_NAMES.get(arg, arg) for arg in args if arg not in _DROPPED_FLAGS]
    return [str(uv), "pip", "install", "--python", str(python), *flags, *translated], env


def main(argv: list[str]) -> int:
    """``python -m imgbench.installer --python PY ARGS...``: install ARGS into PY's venv."""
    if len(argv) < 2 or argv[0] != "--python":
        print("usage: python -m imgbench.installer --python PYTHON PIP-ARGS...", file=sys.stderr)
        return 2
    cmd, env = install_command(Path(argv[1]), argv[2:])
    print(f"installing with {Path(cmd[0]).name}: {' '.join(argv[2:])}", file=sys.stderr)
    return subprocess.run(cmd, env={**os.environ, **env}, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
