"""docs/contributing.md's worked examples, applied to a copy of the package and run.

A new library is one adapter file in its stage's ``libs/`` plus one registry entry; a new control
is one ``Settings`` field plus its schema column. The page shows both as code blocks whose first
line names where they go; this test copies ``src/imgbench`` to a temporary folder, puts each block
there, and checks that the library is planned and measured through the engine, and that the
control is resolved, checked and carried into a row. A layout change that leaves the page behind
fails here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "contributing.md"
BLOCK = re.compile(
    r"^[ \t]*```python\n[ \t]*# (?P<where>[^\n]+)\n(?P<code>.*?)^[ \t]*```", re.S | re.M
)

CHECK = """
import sys
from imgbench.controls import resolve
from imgbench.measure.case import Case
from imgbench.measure.manager import Manager
from imgbench.measure.rounds import Measurement
from imgbench.measure.rows import settings_columns
from imgbench.measure.settings import FIELDS, Settings, SettingsError
from imgbench.profiles import ProfileChoice, get_profile
from imgbench.results.schema import COLUMNS
from imgbench.stages import planner, stage_cases

# the library: planned by the default profile (default=True), measured through the engine
cases = [c for c in stage_cases("read", get_profile("default")) if c.library == "mydecoder"]
assert cases, "the new reader is not planned"
case = next(c for c in cases if c.params.get("mode") == "memory")
settings = resolve(
    get_profile("quick"),
    {"process_model": "in-process", "rounds": 2, "max_images": 4, "host_max_ratio": 0},
    environ={},
)
outcome = Manager(settings, planner(ProfileChoice("default")), sys.argv[1]).measure(case)
assert isinstance(outcome, Measurement), outcome
assert outcome.metrics()["images_per_s_median"] > 0
# the control: a field, resolved and checked, in the schema and in every row's columns
assert "gc" in FIELDS and "gc" in COLUMNS
assert settings_columns(Settings())["gc"] == "enabled"
assert resolve(get_profile("quick"), {"gc": "disabled"}, environ={}).gc == "disabled"
try:
    resolve(get_profile("quick"), {"gc": "off"}, environ={})
except SettingsError as exc:
    assert "gc" in str(exc)
else:
    raise AssertionError("a bad value of the new control was accepted")
print("worked examples: ok")
"""


def blocks() -> dict[str, str]:
    """Each code block of the page that starts with ``# <where it goes>``: where -> code."""
    text = DOC.read_text(encoding="utf-8")
    return {m["where"]: textwrap.dedent(m["code"]) for m in BLOCK.finditer(text)}


def insert_after(path: Path, anchor: str, text: str) -> None:
    """``text`` after the first line of ``path`` that starts with ``anchor`` (stripped)."""
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(anchor))
    lines.insert(at + 1, text if text.endswith("\n") else text + "\n")
    path.write_text("".join(lines))


def test_the_worked_examples_add_a_library_and_a_control(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    found = blocks()
    adapter = next(w for w in found if re.fullmatch(r"src/imgbench/readers/libs/\w+\.py", w))
    entry = found["src/imgbench/readers/registry.py, in READERS"]
    field = found["src/imgbench/measure/settings.py, in Settings"]
    column = found["src/imgbench/results/schema.py, in _FIELDS"]

    shutil.copytree(
        ROOT / "src" / "imgbench",
        tmp_path / "imgbench",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (tmp_path / adapter.removeprefix("src/")).write_text(found[adapter])
    insert_after(
        tmp_path / "imgbench/readers/registry.py",
        "READERS: tuple[ReaderSpec, ...] = (",
        textwrap.indent(entry.strip(), "    ") + ",",
    )
    insert_after(
        tmp_path / "imgbench/measure/settings.py",
        'disk_profile: str = "none"',
        textwrap.indent(field.strip(), "    "),
    )
    insert_after(
        tmp_path / "imgbench/results/schema.py",
        "_FIELDS: list[tuple[str, pa.DataType, str]] = [",
        textwrap.indent(column.strip(), "    ") + ",",
    )
    # the library the example adapts: a decoder module of its own (Pillow underneath)
    (tmp_path / "mydecoder.py").write_text(
        "import io\n\nimport numpy as np\nfrom PIL import Image\n\n\n"
        "def decode_rgb(data):\n    return np.asarray(Image.open(io.BytesIO(data)).convert('RGB'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, str(tiny_dataset)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "worked examples: ok" in proc.stdout
    assert (
        str(tmp_path)
        in subprocess.run(
            [sys.executable, "-c", "import imgbench; print(imgbench.__file__)"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={"PYTHONPATH": str(tmp_path)},
        ).stdout
    )  # the copy ran, not the checkout
