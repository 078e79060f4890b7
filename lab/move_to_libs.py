"""Issue 46, step 4 ("Every stage the same shape"): library adapters into ``<stage>/libs/``.

Run once from the root of a clean imgbench checkout::

    python lab/move_to_libs.py

What it does, in order:

1. Checks the tree: every file listed below exists, no target exists yet, and every module at a
   stage package's root is classified (an adapter that moves, or machinery that stays), so a file
   added since this script was written stops it instead of being left behind.
2. Applies a few edits of prose that a rename alone would leave wrong (``EDITS``).
3. ``git mv``s every file (``ADAPTERS``, ``PACKAGES``, ``RENAMED``), writes the new packages'
   ``__init__.py`` (``NEW_FILES``) and removes the emptied folders.
4. Rewrites every reference in the text files under ``TEXT_ROOTS``: imports (absolute, relative,
   ``from imgbench.<stage> import <module>``), ``"module:attr"`` strings and ``_M = "imgbench.x."``
   prefix constants, ``mock.patch`` targets, ``python -m`` lines, and paths (``src/imgbench/x/y.py``,
   ``x/y.py``).
5. Sorts the imports and formats the Python files it changed (ruff), then searches the whole tree
   for any old name or path left and exits 1 if one is found outside the CHANGELOG.

Decisions (see the issue): an *adapter* is the code for one third-party library or one storage
format (what one registry entry's ``module`` names); *machinery* is what a stage's adapters share
(spec/base, registry, plan, cases, verify, pipeline, ...). ``gpu/`` becomes the ``loaders/gpu/``
subpackage as a whole: it is one registry entry (``gpu``) whose files are machinery (cases, feeds,
device, a training step) and whose ``ops.py`` calls several libraries, so none of it is one
library's adapter. ``native/`` folds into ``readers/``: tjbench is an adapter, its cases join the
readers' as ``readers/native_cases.py``. ``storage/`` is ``disks/``, its ``profiles.py``
``disks/catalog.py``.
"""

from __future__ import annotations

import argparse
import functools
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

# ---------------------------------------------------------------------------------------------
# What moves (paths under src/imgbench)
# ---------------------------------------------------------------------------------------------

# One file per library adapter: <stage>/<name>.py -> <stage>/libs/<name>.py
ADAPTERS: dict[str, tuple[str, ...]] = {
    "readers": (
        "ajpegli", "dali", "imagecodecs", "imageio", "jpeg4py", "kornia_rs", "mxnet",
        "nvimgcodec", "opencv", "pillow", "pyvips", "simplejpeg", "skimage", "spdl",
        "tensorflow", "torchcodec", "torchvision", "turbojpeg",
    ),
    "augment": ("albumentations", "kornia", "opencv", "pillow", "torchvision"),
    "formats": (
        "folder", "hdf5", "litdata", "lmdb", "mds", "npy", "parquet", "raw", "recordio",
        "sqlite", "tar", "tfrecord", "torch_save", "zarr",
        # the S3 formats: one storage format (and its client library) each
        "s3_litdata", "s3_mds", "s3_objects", "s3_parquet", "s3_tar",
    ),
    "loaders": (
        # every loader registry entry's module: one loading system each
        "dali", "keras", "mxnet_recordio", "prefetch", "queue_feeder", "ray_data",
        "sharded_iterable", "spdl", "spdl_subprocess", "tfdata", "threads", "torch_dataloader",
        "torchdata_nodes",
    ),
}  # fmt: skip

# What stays at each stage's root: the machinery every adapter shares. Listed so that a module
# this script does not know stops it (classify it here or in ADAPTERS), never moves by default.
MACHINERY: dict[str, tuple[str, ...]] = {
    "readers": ("__init__", "base", "cases", "pixels", "plan", "registry", "verify", "verify_cli"),
    "augment": (
        "__init__", "base", "cases", "handmade", "outputs", "pipelines", "plan", "registry",
        "spec", "task_cases", "tasks", "verify", "verify_cli",
    ),
    "formats": (
        "__init__", "base", "cases", "convert", "plan", "reads", "registry", "roundtrip", "s3",
        "s3_cases", "session", "verify", "verify_cli",
    ),
    "loaders": (
        "au", "base", "cases", "checks", "cold", "cow", "crop_decode", "documented", "memory",
        "pipeline", "plan", "registry", "run", "stages", "supply",
    ),
}  # fmt: skip

# Whole packages that move: every tracked file in them (found in the tree) goes along.
PACKAGES: dict[str, str] = {
    "gpu": "loaders/gpu",  # the accelerator half of the loader stage, one subpackage
    "storage": "disks",  # emulated disks: "storage" also meant formats and S3
}

# Single files moved with a new name (these win over PACKAGES).
RENAMED: dict[str, str] = {
    "storage/profiles.py": "disks/catalog.py",  # "profile" meant four things
    "native/tjbench.py": "readers/libs/tjbench.py",  # the native decoder ceiling: an adapter
    "native/cases.py": "readers/native_cases.py",  # its cases, beside the readers' own
}

# Files removed: the package they opened is folded away.
REMOVED: tuple[str, ...] = ("native/__init__.py",)

# Packages whose name goes away without one successor (references left are errors).
GONE_PACKAGES: tuple[str, ...] = ("native",)

NEW_FILES: dict[str, str] = {
    "readers/libs/__init__.py": (
        '"""The reader adapters: one file per decoding library (and tjbench, libjpeg-turbo\'s own\n'
        "benchmark, the native ceiling). ``imgbench.readers.registry`` names each by\n"
        '``"module:attr"``; the contract is ``imgbench.readers.base``."""\n'
    ),
    "augment/libs/__init__.py": (
        '"""The augmentation adapters: one file per library, each building the transforms and\n'
        "pipelines of ``imgbench.augment.spec`` with that library's calls. ``imgbench.augment.registry``\n"
        'names each by module; the contract is ``imgbench.augment.base``."""\n'
    ),
    "formats/libs/__init__.py": (
        '"""The storage formats: one file per format (its ``write`` and ``Reader``), local and on S3.\n'
        "``imgbench.formats.registry`` names each by module; the contract is\n"
        '``imgbench.formats.base`` (``imgbench.formats.s3`` for the S3 ones)."""\n'
    ),
    "loaders/libs/__init__.py": (
        '"""The loaders: one file per loading system (its ``build(pipeline, params)``), each running\n'
        "the same sample pipeline (``imgbench.loaders.pipeline``). ``imgbench.loaders.registry``\n"
        'names each by module; the contract is ``imgbench.loaders.base``."""\n'
    ),
    "loaders/__init__.py": (
        '"""The loader stage: loaders turn one sample pipeline into batches, measured end to end.\n'
        "\n"
        "The machinery is here (``pipeline``, ``registry``, ``plan``, ``cases``, ``run``, ``checks``);\n"
        "one file per loading system is in ``libs/``; the accelerator half (after a batch leaves\n"
        'the CPU) is ``gpu/``."""\n'
    ),
}

# Prose that a rename alone leaves wrong, or pushes past 100 characters: (file as it is before
# the move, old text, new text). The rewrite of names runs after these, on the new text too.
# Applied where the old text is found; a missing one is only reported (the prose may have moved).
EDITS: tuple[tuple[str, str, str], ...] = (
    # the layer test: gpu/ and native/ are inside the loaders and readers packages now
    ("tests/test_layers.py", '            "imgbench.gpu",\n', ""),
    ("tests/test_layers.py", '            "imgbench.native",\n', ""),
    (
        "src/imgbench/storage/__init__.py",
        "``profiles`` names the disks",
        "``catalog`` names the disks",
    ),
    (
        "src/imgbench/readers/__init__.py",
        "one adapter file per library, one registry.",
        "one adapter file per library (in ``libs/``), one registry.",
    ),
    (
        "src/imgbench/formats/__init__.py",
        "one writer + reader module per format, one registry, one atomic builder.",
        "one writer + reader module per format (in ``libs/``),\none registry, one atomic builder.",
    ),
    (
        "src/imgbench/readers/registry.py",
        "Adding a library is one adapter file plus one entry here.",
        "A new library: one adapter file in ``libs/`` + one entry here.",
    ),
    (
        "src/imgbench/augment/registry.py",
        "Adding one is an adapter file plus an entry here.",
        "A new one: an adapter in ``libs/`` + an entry.",
    ),
    (
        "src/imgbench/formats/registry.py",
        "Adding one: a module (``write``, ``Reader``) + an entry.",
        "A new one: a ``libs/`` module (``write``, ``Reader``) + an entry.",
    ),
    (
        "src/imgbench/loaders/registry.py",
        "Adding one is a module with ``build(pipeline, params)`` that\nreturns a",
        "Adding one is a module in ``libs/`` with\n``build(pipeline, params)`` that returns a",
    ),
    (
        "src/imgbench/export/decoders.py",
        "# uses ``_tensor``/``_hwc`` (copied from imgbench.readers.torchvision)",
        "# uses ``_tensor``/``_hwc`` (from imgbench.readers.torchvision)",
    ),
    (
        "src/imgbench/gpu/feeds.py",
        "``requires``: the modules the\n    feed imports",
        "``requires``: the modules\n    the feed imports",
    ),
    (
        "src/imgbench/gpu/cases.py",
        '  ``device="mixed"`` on it (each where the library imports; ``imgbench.gpu.ops.GpuDecoder``);\n'
        "  ``decode-cpu-threads``: torchvision's decode on the CPU by one thread per core, the comparison.",
        '  ``device="mixed"`` on it (each where the library imports:\n'
        "  ``imgbench.gpu.ops.GpuDecoder``); ``decode-cpu-threads``: torchvision's decode on the CPU\n"
        "  by one thread per core, the comparison.",
    ),
    (
        "src/imgbench/loaders/plan.py",
        '    # the accelerator half (imgbench.gpu, library "gpu"): skipped rows where gpu_device is CUDA\n'
        "    # and there is none. Copies, nvJPEG, GPU augmentation, the step on a cached batch, and each\n"
        "    # of gpu_feeds (imgbench.gpu.cases.FEEDS; () none) at gpu_workers DataLoader workers\n",
        '    # the accelerator half (imgbench.gpu, library "gpu"): skipped rows where gpu_device is\n'
        "    # CUDA and there is none. Copies, nvJPEG, GPU augmentation, the step on a cached batch,\n"
        "    # and each of gpu_feeds (imgbench.gpu.cases.FEEDS; () none) at gpu_workers DataLoader\n"
        "    # workers\n",
    ),
    (
        "src/imgbench/profiling/step.py",
        "elsewhere the call's wall time (a CPU step is synchronous).",
        "elsewhere the call's wall time (a CPU step is\nsynchronous).",
    ),
    (
        "docs/architecture.md",
        "per stage: a spec class, one registry, the stage's cases, one adapter file per library",
        "per stage: a spec class, one registry, the stage's cases; one adapter file per library in "
        "its libs/ folder",
    ),
    (
        "docs/architecture.md",
        "emulated disks (`--disk`): named profiles,",
        "emulated disks (`--disk`): the named disks' catalog,",
    ),
    (
        "docs/export.md",
        "`imgbench/augment/albumentations.py`, `torchvision.py`, `pillow.py`, `opencv.py`, `handmade.py` and\n"
        "`base.py` (and DALI's `_recipe`, `_roi_crop` and `roi_decode` out of `imgbench/loaders/dali.py`) with\n"
        "`ast`, rewrites `spec.SIZE` to `SIZE`, and writes the constants the code uses from `imgbench.augment.spec`\n"
        "above it.",
        "`imgbench/augment/libs/albumentations.py`, `torchvision.py`, `pillow.py` and `opencv.py`, out of\n"
        "`imgbench/augment/handmade.py` and `base.py` (and DALI's `_recipe`, `_roi_crop` and `roi_decode` out\n"
        "of `imgbench/loaders/libs/dali.py`) with `ast`, rewrites `spec.SIZE` to `SIZE`, and writes the\n"
        "constants the code uses from `imgbench.augment.spec` above it.",
    ),
    (
        "docs/contributing.md",
        "| adapter | one file per library |",
        "| adapter | `<stage>/libs/<library>.py`, one file per library |",
    ),
    (
        "docs/contributing.md",
        "# src/imgbench/readers/mydecoder.py",
        "# src/imgbench/readers/libs/mydecoder.py",
    ),
    (
        "docs/contributing.md",
        '"imgbench.readers.mydecoder:',
        '"imgbench.readers.libs.mydecoder:',
    ),
    (
        "docs/contributing.md",
        '"imgbench.formats.myformat"',
        '"imgbench.formats.libs.myformat"',
    ),
    (
        "docs/contributing.md",
        '"imgbench.loaders.myloader"',
        '"imgbench.loaders.libs.myloader"',
    ),
)

# Where references are rewritten (files tracked by git under these, text only).
TEXT_ROOTS: tuple[str, ...] = (
    "src", "tests", "benches", "lab", "scripts", "docs", "dashboard",
    "README.md", "CHANGELOG.md", "Makefile", "pyproject.toml",
)  # fmt: skip
# Rewritten too, but old names left in it do not fail the run (its history may keep them).
CHANGELOG = "CHANGELOG.md"

PKG = Path("src/imgbench")
SELF = Path("lab/move_to_libs.py")
LINE = 100  # pyproject's line-length


class MoveError(SystemExit):
    def __init__(self, message: str) -> None:
        super().__init__(f"move_to_libs: {message}")


# ---------------------------------------------------------------------------------------------
# The plan: old file -> new file, computed from the lists and the tree
# ---------------------------------------------------------------------------------------------


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def tracked(under: str) -> list[str]:
    """Tracked files under ``src/imgbench/<under>``, relative to src/imgbench."""
    out = git("ls-files", "-z", "--", str(PKG / under))
    return sorted(str(Path(p).relative_to(PKG)) for p in out.split("\0") if p)


def stage_moves(problems: list[str]) -> dict[str, str]:
    """``<stage>/<adapter>.py`` -> ``<stage>/libs/<adapter>.py``, each stage's root classified."""
    moves = {}
    for stage, adapters in ADAPTERS.items():
        files = tracked(stage)
        present = {Path(p).stem for p in files if p.count("/") == 1}
        moves.update({f"{stage}/{name}.py": f"{stage}/libs/{name}.py" for name in adapters})
        problems += [f"adapter {stage}/{n}.py is missing" for n in adapters if n not in present]
        unknown = sorted(present - set(adapters) - set(MACHINERY[stage]))
        problems += [f"{stage}/{n}.py is neither in ADAPTERS nor MACHINERY" for n in unknown]
        problems += [f"{p} exists: has this script run here?" for p in files if "/libs/" in p]
        # harmless for the move, but the lists should say the truth
        gone = sorted(set(MACHINERY[stage]) - present - {"__init__"})
        for name in gone:
            print(f"note: machinery {stage}/{name}.py is not in the tree (listed in MACHINERY)")
    return moves


def package_moves(problems: list[str]) -> dict[str, str]:
    """Every file of each package in PACKAGES, then RENAMED (which wins)."""
    moves = {}
    for old_pkg, new_pkg in PACKAGES.items():
        files = tracked(old_pkg)
        if not files:
            problems.append(f"package {old_pkg}/ is missing")
        moves.update({path: new_pkg + path[len(old_pkg) :] for path in files})
    moves.update(RENAMED)
    for pkg in GONE_PACKAGES:  # a folded package: every file in it must have a destination
        unplaced = [p for p in tracked(pkg) if p not in moves and p not in REMOVED]
        problems += [f"{pkg}/ has {p}, which this script does not place" for p in unplaced]
    return moves


def plan_moves() -> dict[str, str]:
    """old -> new, paths relative to src/imgbench; fails on anything unexpected."""
    problems: list[str] = []
    moves = {**stage_moves(problems), **package_moves(problems)}
    missing = [old for old in [*moves, *REMOVED] if not (PKG / old).is_file()]
    problems += [f"expected file src/imgbench/{old} is missing" for old in missing]
    taken = [new for new in [*moves.values(), *NEW_FILES] if (PKG / new).exists()]
    problems += [f"target src/imgbench/{new} exists already" for new in taken]
    if problems:
        raise MoveError("the tree is not what this script expects:\n  " + "\n  ".join(problems))
    return moves


def module_of(path: str) -> str:
    """``loaders/gpu/cases.py`` -> ``imgbench.loaders.gpu.cases`` (a package's __init__: itself)."""
    parts = ["imgbench", *Path(path).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_moves(moves: dict[str, str]) -> dict[str, str]:
    """Old dotted name -> new dotted name: every moved module, and each moved package."""
    names = {module_of(old): module_of(new) for old, new in moves.items()}
    for old_pkg, new_pkg in PACKAGES.items():
        names[module_of(old_pkg)] = module_of(new_pkg)
    return names


def path_moves(moves: dict[str, str]) -> dict[str, str]:
    """Old path -> new path under src/imgbench: every moved file, and each moved folder."""
    paths = dict(moves)
    for old_pkg, new_pkg in PACKAGES.items():
        paths[old_pkg] = new_pkg
    return paths


# ---------------------------------------------------------------------------------------------
# Rewrites of one text
# ---------------------------------------------------------------------------------------------


def alternation(names: Iterable[str]) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


def relative_to_absolute(text: str, module: str, is_package: bool, only: set[str] | None) -> str:
    """``from .x import y`` in ``module`` (its name before the move) -> ``from imgbench... import y``;
    with ``only``, just the statements that import one of those modules."""
    package = module.split(".") if is_package else module.split(".")[:-1]

    def absolute(match: re.Match[str]) -> str:
        level = len(match["dots"])
        base = package[: len(package) - (level - 1)] if level > 1 else package
        target = ".".join([*base, *([match["rest"]] if match["rest"] else [])])
        names = re.findall(r"\w+", match["names"].split(" as ")[0])
        reached = {target, *(f"{target}.{n}" for n in names)}
        if only is not None and not reached & only:
            return match[0]
        return f"{match['indent']}from {target} import {match['names']}"

    pattern = (
        r"^(?P<indent>[ \t]*)from[ \t]+(?P<dots>\.+)(?P<rest>[\w.]*)[ \t]+import[ \t]+"
        r"(?P<names>\([^)]*\)|[^\n]*)"
    )
    return re.sub(pattern, absolute, text, flags=re.MULTILINE)


FROM_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)from[ \t]+(?P<pkg>imgbench(?:\.\w+)*)[ \t]+import[ \t]+"
    r"(?:\((?P<paren>[^)]*)\)|(?P<line>[^\n#(]*[^\s#(]))(?P<comment>[ \t]*#[^\n]*)?$",
    re.MULTILINE,
)


def rewrite_from_imports(text: str, modules: dict[str, str], where: str) -> str:
    """``from imgbench.formats import lmdb as x`` -> ``from imgbench.formats.libs import lmdb as x``.

    A submodule imported through its package is not a dotted name the other rewrites see; a
    statement mixing moved modules and other names is split, one statement per package.
    """

    def rewrite(match: re.Match[str]) -> str:
        body = match["paren"] if match["paren"] is not None else match["line"]
        pkg = match["pkg"]
        items = [i.strip() for i in body.split(",") if i.strip()]
        if not any(f"{pkg}.{i.split()[0]}" in modules for i in items):
            return match[0]
        if "#" in body:
            raise MoveError(f"{where}: a comment inside a multi-line import of a moved module")
        groups: dict[str, list[str]] = {}
        for item in items:
            name, *alias = item.split()
            alias_name = alias[1] if alias[:1] == ["as"] else None
            old = f"{pkg}.{name}"
            if old in modules:
                new_pkg, _, new_name = modules[old].rpartition(".")
                if new_name != name and alias_name is None:
                    alias_name = name  # keep the name the code uses
                name = new_name
            else:
                new_pkg = pkg
            groups.setdefault(new_pkg, []).append(f"{name} as {alias_name}" if alias_name else name)
        comment = match["comment"] or ""
        lines = [
            f"{match['indent']}from {p} import {', '.join(names)}" for p, names in groups.items()
        ]
        lines[0] += comment
        return "\n".join(lines)

    return FROM_IMPORT.sub(rewrite, text)


PREFIX = re.compile(r'^(?P<name>_?[A-Z][A-Z0-9_]*) = "(?P<prefix>imgbench\.[\w.]+\.)"$', re.M)


def spell(m: re.Match[str], name: str, shared: str, new_of: dict[str, str]) -> str:
    """One ``_M + "x:attr"``, under the new prefix where it is there, else in full."""
    new, attr = new_of[m["mod"]], m["attr"] or ""
    if new.startswith(shared) and "." not in new[len(shared) :]:
        return f'{name} + "{new[len(shared) :]}{attr}"'
    return f'"{new}{attr}"'


def prefix_constants(text: str, modules: dict[str, str]) -> str:
    """``_M = "imgbench.loaders."`` with ``_M + "dali"``: the prefix most entries now share, and
    the entries under another prefix (``cow`` stays at the root) spelled out in full."""
    for const in PREFIX.finditer(text):
        name, prefix = const["name"], const["prefix"]
        use = re.compile(rf'\b{re.escape(name)} \+ "(?P<mod>\w+)(?P<attr>:[\w.]+)?"')
        new_of = {
            m["mod"]: modules.get(prefix + m["mod"], prefix + m["mod"]) for m in use.finditer(text)
        }
        if all(new == prefix + mod for mod, new in new_of.items()):
            continue  # nothing under this prefix moved
        parents = Counter(new.rpartition(".")[0] + "." for new in new_of.values())
        shared = parents.most_common(1)[0][0]
        text = use.sub(functools.partial(spell, name=name, shared=shared, new_of=new_of), text)
        text = text.replace(const[0], f'{name} = "{shared}"', 1)
    return text


def make_rewriter(modules: dict[str, str], paths: dict[str, str]) -> Callable[[str, str], str]:
    stages = alternation(ADAPTERS)
    dotted = re.compile(rf"(?<![\w.])(?:{alternation(modules)})(?!\w)")
    # src/imgbench/gpu/ops.py, imgbench/storage/ (the folder), .../site-packages/imgbench/...
    long_path = re.compile(rf"(?<=imgbench/)(?:{alternation(paths)})(?![\w.])")
    # gpu/ops.py, loaders/dali.py: a file named from src/imgbench (not tests/gpu/..., no folders)
    short = {old: new for old, new in paths.items() if old.endswith(".py") and "/" in old}
    short_path = re.compile(rf"(?<![\w./-])(?:{alternation(short)})(?!\w)")
    placeholder = re.compile(rf"\bimgbench\.({stages})\.<")  # ``imgbench.readers.<library>``

    def rewrite(text: str, where: str) -> str:
        text = prefix_constants(text, modules)
        text = rewrite_from_imports(text, modules, where)
        text = dotted.sub(lambda m: modules[m[0]], text)
        text = long_path.sub(lambda m: paths[m[0]], text)
        text = short_path.sub(lambda m: short[m[0]], text)
        return placeholder.sub(r"imgbench.\1.libs.<", text)

    return rewrite


def leftovers(modules: dict[str, str], paths: dict[str, str]) -> Callable[[str], list[str]]:
    """What in a text still names an old module, package or path."""
    old_names = [*modules, *(f"imgbench.{p}" for p in GONE_PACKAGES)]
    dotted = re.compile(rf"(?<![\w.])(?:{alternation(old_names)})(?!\w)")
    old_paths = [*paths, *GONE_PACKAGES]
    long_path = re.compile(rf"(?<=imgbench/)(?:{alternation(old_paths)})(?![\w.])")
    short = [old for old in paths if old.endswith(".py") and "/" in old]
    short_path = re.compile(rf"(?<![\w./-])(?:{alternation(short)})(?!\w)")
    placeholder = re.compile(rf"\bimgbench\.({alternation(ADAPTERS)})\.<")
    # readers.pillow, gpu.cases: a module named from src/imgbench, in prose (not rewritten)
    short_names = [n.removeprefix("imgbench.") for n in modules if n.count(".") > 1]
    short_dotted = re.compile(rf"(?<![\w.])(?:{alternation(short_names)})(?!\w)")
    patterns = (dotted, long_path, short_path, placeholder, short_dotted)

    def found(text: str) -> list[str]:
        hits = [m[0] for p in patterns for m in p.finditer(text)]
        for m in FROM_IMPORT.finditer(text):
            body = m["paren"] if m["paren"] is not None else m["line"]
            for item in body.split(","):
                if item.split() and f"{m['pkg']}.{item.split()[0]}" in modules:
                    hits.append(m[0].strip())
        return hits

    return found


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def text_files() -> list[Path]:
    out = git("ls-files", "-z", "--", *TEXT_ROOTS)
    files = []
    for name in out.split("\0"):
        path = Path(name)
        if not name or path == SELF or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append(path)
    return files


def check_clean() -> None:
    status = [
        line
        for line in git("status", "--porcelain", "--untracked-files=all").splitlines()
        if line[3:] != str(SELF)
    ]
    if status:
        raise MoveError(
            "the work tree has changes; commit or stash them first:\n  " + "\n  ".join(status)
        )


def apply_edits() -> None:
    for file, old, new in EDITS:
        path = Path(file)
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if old in text:
            path.write_text(text.replace(old, new, 1), encoding="utf-8")
        else:
            print(f"note: edit not applied, its text is not in {file}: {old.strip()[:70]!r}")


def absolute_imports(moves: dict[str, str], modules: dict[str, str]) -> None:
    """Relative imports in the moved files, and relative imports elsewhere that reach a moved
    module, become absolute (before the move: they are resolved where the file is now)."""
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        text = path.read_text(encoding="utf-8")
        if not re.search(r"^[ \t]*from[ \t]+\.", text, re.M):
            continue
        only = None if rel in moves else set(modules)
        new = relative_to_absolute(text, module_of(rel), path.name == "__init__.py", only)
        if new != text:
            path.write_text(new, encoding="utf-8")


def move_files(moves: dict[str, str]) -> None:
    for old, new in moves.items():
        (PKG / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", str(PKG / old), str(PKG / new))
    for old in REMOVED:
        git("rm", "-q", str(PKG / old))
    for rel, text in NEW_FILES.items():
        (PKG / rel).write_text(text, encoding="utf-8")
        git("add", str(PKG / rel))
    for folder in sorted({*PACKAGES, *GONE_PACKAGES}):
        leftover = [
            p for p in (PKG / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts
        ]
        if leftover:
            raise MoveError(f"src/imgbench/{folder}/ still holds {leftover}")
        shutil.rmtree(PKG / folder, ignore_errors=True)  # only __pycache__ is left


def rewrite_references(rewrite: Callable[[str, str], str]) -> dict[Path, set[str]]:
    """Every text file rewritten; returns the changed ones with their long lines before."""
    changed = {}
    for path in text_files():
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, str(path))
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed[path] = {line for line in text.splitlines() if len(line) > LINE}
    return changed


def longer_lines(changed: dict[Path, set[str]]) -> None:
    """Python lines a longer name pushed past the line length (ruff wraps code, not prose)."""
    for path, before in changed.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        if path.suffix != ".py" or sum(len(line) > LINE for line in lines) <= len(before):
            continue
        for number, line in enumerate(lines, 1):
            if len(line) > LINE and line not in before:
                print(f"note: {path}:{number} is {len(line)} characters now; reflow it by hand")


def ruff(changed: Iterable[Path]) -> None:
    """Imports sorted (a module's new name sorts elsewhere) and lines wrapped, in changed files."""
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    files = [str(p) for p in changed if p.suffix == ".py"]
    if not Path(exe).exists() and not shutil.which(exe):
        print("note: ruff not found: run `ruff check --select I --fix . && ruff format .` yourself")
        return
    if files:
        subprocess.run([exe, "check", "--quiet", "--select", "I", "--fix", *files], check=False)
        subprocess.run([exe, "format", "--quiet", *files], check=True)


def report(found: Callable[[str], list[str]]) -> int:
    failing = 0
    for path in text_files():
        hits = found(path.read_text(encoding="utf-8"))
        if not hits:
            continue
        kept = str(path) == CHANGELOG
        failing += 0 if kept else len(hits)
        label = "kept (history)" if kept else "LEFT"
        print(f"{label}: {path}: {sorted(set(hits))}")
    return failing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the moves, change nothing")
    parser.add_argument("--check", action="store_true", help="only report old names left")
    args = parser.parse_args()
    if not (Path("pyproject.toml").is_file() and PKG.is_dir()):
        raise MoveError("run it from the root of an imgbench checkout")
    if args.check:
        # after the move the old names are gone from the tree; rebuild them from the lists
        moves = {f"{s}/{n}.py": f"{s}/libs/{n}.py" for s, ns in ADAPTERS.items() for n in ns}
        moves.update(RENAMED)
        modules = {module_of(o): module_of(n) for o, n in moves.items()}
        modules.update({module_of(o): module_of(n) for o, n in PACKAGES.items()})
        return 1 if report(leftovers(modules, path_moves(moves))) else 0

    moves = plan_moves()
    modules, paths = module_moves(moves), path_moves(moves)
    for old, new in moves.items():
        print(f"src/imgbench/{old} -> src/imgbench/{new}")
    for old in REMOVED:
        print(f"src/imgbench/{old} (removed)")
    for new in NEW_FILES:
        print(f"src/imgbench/{new} (new)")
    if args.dry_run:
        return 0

    check_clean()
    found = leftovers(modules, paths)  # built before the move: the names as they are now
    apply_edits()
    absolute_imports(moves, modules)
    move_files(moves)
    changed = rewrite_references(make_rewriter(modules, paths))
    ruff(changed)
    longer_lines(changed)
    print(f"{len(moves)} files moved, {len(changed)} files rewritten")
    left = report(found)
    if left:
        print(f"move_to_libs: {left} references to old names left (above); fix them by hand")
        return 1
    print("no old name left outside the CHANGELOG")
    return 0


if __name__ == "__main__":
    sys.exit(main())
