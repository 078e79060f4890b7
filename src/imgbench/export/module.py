"""The exported module's text: a header citing the rows, the row's settings as constants, the
decoder, the recipe and the loader (``decoders``, ``recipes``, ``loaders``), the allocator's
environment, and a ``__main__`` that times the loader over a folder.

The module imports no imgbench; its only inputs are the libraries the row ran.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from imgbench.export.choose import Choice, params_of, pipeline_of
from imgbench.export.decoders import decoder_code, policy_code
from imgbench.export.loaders import loader_code
from imgbench.export.recipes import TO_INPUT, dali_recipe, recipe_code
from imgbench.results.schema import json_object

# the file suffixes of each codec the readers registry names (the folder walk keeps the images
# the decoder reads, as imgbench's pool does)
SUFFIXES = {
    "jpeg": (".jpg", ".jpeg"),
    "png": (".png",),
    "webp": (".webp",),
    "bmp": (".bmp",),
    "tiff": (".tif", ".tiff"),
}

_STDLIB = (
    "import argparse",
    "import ctypes",
    "import os",
    "import statistics",
    "import sys",
    "import time",
    "from pathlib import Path",
)
_THIRD_PARTY = (
    "import numpy as np",
    "import torch",
    "from torch.utils.data import default_collate",
)

_FOLDER = '''
def list_images(root: str | Path) -> tuple[list[str], list[int], list[str]]:
    """(paths, labels, classes): an ImageFolder-style walk, class = first-level folder (sorted),
    every file below it with one of IMAGE_SUFFIXES, in sorted order."""
    root = Path(root)
    classes = sorted(d.name for d in root.iterdir() if d.is_dir())
    paths: list[str] = []
    labels: list[int] = []
    for label, name in enumerate(classes):
        for folder, _, files in sorted(os.walk(root / name, followlinks=True)):
            for file in sorted(files):
                if file.lower().endswith(IMAGE_SUFFIXES):
                    paths.append(os.path.join(folder, file))
                    labels.append(label)
    if not paths:
        raise FileNotFoundError(f"no {'/'.join(IMAGE_SUFFIXES)} images in class folders of {root}")
    return paths, labels, classes
'''

_DATASET = '''
class ImageFolderDataset:
    """A map-style dataset: read -> decode -> recipe, one sample per index. The paths are a
    NumPy array, not a list: forked workers that read them do not copy the index."""

    def __init__(self, root: str | Path) -> None:
        paths, labels, self.classes = list_images(root)
        self.paths = np.asarray([os.fsencode(p) for p in paths])
        self.labels = np.asarray(labels, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[object, int]:
        with open(self.paths[index], "rb") as handle:
            data = handle.read()
        return augment(to_input(decode(data))), int(self.labels[index])


def collate(samples: list[tuple[object, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """One contiguous batch tensor (in shared memory inside a DataLoader worker), int64 labels."""
    images = [torch.from_numpy(s[0]) if isinstance(s[0], np.ndarray) else s[0] for s in samples]
    return default_collate(images), torch.tensor([s[1] for s in samples], dtype=torch.int64)
'''

_PINS = '''
def pin_opencv(worker_id: int = 0) -> None:
    """OpenCV sequential in this process (a DataLoader worker_init_fn): the parallelism is the
    loader's workers, not OpenCV's own pool. 0, not 1: in a forked worker, 1 can block for ever
    when the parent's OpenCV pool had gone idle (it reconfigures a pool the fork left behind)."""
    cv2 = sys.modules.get("cv2")
    if cv2 is not None:
        cv2.setNumThreads(0)


def pin_threads() -> None:
    """Every process of imgbench's row computed on one thread (threads=1): OpenCV and torch
    pinned. Call it where the training loop's own torch threads do not matter (the timing)."""
    pin_opencv()
    torch.set_num_threads(1)
'''

_STOP = '''
# -- the workers stopped before Python exits
# the loaders' iterators still alive -> the function that stops their workers; held weakly: a
# dropped iterator leaves, and its own cleanup (a generator's finally, a __del__) stops them
RUNNING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def close_iterator(iterator) -> None:
    iterator.close()  # a generator: its finally stops the workers


def stop_at_exit(iterator, stop=close_iterator):
    """``iterator``, whose workers ``stop(iterator)`` stops if it is still alive when the script
    ends (held unfinished, or its loop left by an exception, Ctrl-C's KeyboardInterrupt too)."""
    RUNNING[iterator] = stop
    return iterator


@atexit.register
def stop_running_loaders() -> None:
    """Stop the workers of the iterators still alive when the script ends. atexit hooks run
    before the interpreter finalises, which must not find a worker thread inside C++ code
    (OpenCV's decode, a torch kernel): a daemon thread coming back from it then is ended in a
    way C++ cannot unwind, and the process aborts (status 134, "terminate called without an
    active exception" or "FATAL: exception not rethrown"). Registered after the imports above,
    this hook runs before theirs (the last registered runs first): before torch's, which turns
    the DataLoader's own shutdown off."""
    for iterator, stop in list(RUNNING.items()):
        stop(iterator)
'''

_MAIN = '''
def use_allocator() -> None:
    """Run this script again under the row's allocator when it is not in force: LD_PRELOAD and
    MALLOC_* are read when a process starts, so they cannot be set from inside it."""
    if all(os.environ.get(k) == v for k, v in ALLOCATOR_ENV.items()):
        return
    preload = ALLOCATOR_ENV.get("LD_PRELOAD")
    if preload and os.path.isabs(preload) and not os.path.exists(preload):
        print(f"warning: {preload} is not installed: timing with the default allocator",
              file=sys.stderr)
        return
    os.execve(sys.executable, sys.orig_argv, {**os.environ, **ALLOCATOR_ENV})


def images_per_s(loader, rounds: int, batches_per_round: int, warmup: int) -> list[float]:
    """images/s of each timed round of ``batches_per_round`` batches, after ``warmup`` batches
    (the workers' prefetched batches drained): the steady state, as imgbench times it."""
    iterator = iter(loader)
    rates = []
    try:
        for _ in range(warmup):
            next(iterator)
        for _ in range(rounds):
            start, images = time.perf_counter(), 0
            for _ in range(batches_per_round):
                batch, labels = next(iterator)
                batch.contiguous()
                images += len(labels)
            rates.append(images / (time.perf_counter() - start))
    finally:
        close = getattr(iterator, "close", None)  # a generator: stop its threads now
        if close is not None:
            close()
    return rates


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", help="an image folder: one sub-folder per class")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches-per-round", type=int, default=BATCHES_PER_ROUND)
    parser.add_argument("--warmup", type=int, default=WARMUP_BATCHES)
    args = parser.parse_args(argv)
    use_allocator()
    settle_glibc()
    pin_threads()
    images = len(list_images(args.root)[0])
    needed = (args.warmup + args.rounds * args.batches_per_round + 1) * args.batch_size
    loader = make_loader(args.root, args.batch_size, epochs=-(-needed // images))
    rates = images_per_s(loader, args.rounds, args.batches_per_round, args.warmup)
    shown = ", ".join(f"{r:.1f}" for r in rates)
    print(f"{images} images in {args.root}; rounds: {shown}")
    print(f"images/s: {statistics.median(rates):.2f}")


if __name__ == "__main__":
    main()
'''


def _settle() -> str:
    """imgbench's glibc settling (``imgbench.measure.allocator``), copied: its rows are timed in
    processes whose malloc thresholds are where a long-running process ends up, which changes
    how often a decode's buffers are mapped and faulted in again."""
    from imgbench.export.copied import definition

    module = "imgbench.measure.allocator"
    names: tuple[str, ...] = (
        "GLIBC_TUNED",
        "_PRELOADS",
        "GLIBC_MMAP_THRESHOLD_MAX",
        "_SETTLE_BYTES",
    )
    names += ("current", "settle_glibc")
    return "# -- the process state imgbench times in\n" + "\n\n\n".join(
        definition(module, name) for name in names
    )


def _imports(lines: list[str], code: str) -> str:
    """The fixed and the parts' import lines, once each, ``from`` imports of one module merged:
    the standard library's, then lines that must run before a library is imported (its
    environment variables), then the rest; what ``code`` does not use of the fixed ones is left
    out (DALI's module collates nothing)."""
    import sys

    def top(line: str) -> str:
        return line.split()[1].split(".")[0]

    used = [line for line in _THIRD_PARTY if re.search(rf"\b{line.split()[-1]}\b", code)]
    fixed = [*_STDLIB, *used]
    if re.search(r"\bAny\b", code):  # in the copied definitions' annotations
        fixed.append("from typing import Any")
    unique = list(dict.fromkeys([*fixed, *lines]))
    merged: dict[str, list[str]] = {}
    imports: list[str] = []
    for line in unique:
        found = re.fullmatch(r"from (\S+) import ([\w, ]+)", line)
        if found is None:
            if line.startswith(("import ", "from ")):
                imports.append(line)
            continue
        if found.group(1) not in merged:
            merged[found.group(1)] = []
            imports.append(f"from {found.group(1)} import")
        merged[found.group(1)] += [n.strip() for n in found.group(2).split(",")]
    imports = [
        f"{line} {', '.join(sorted(set(merged[line.split()[1]])))}"
        if line.endswith(" import")
        else line
        for line in imports
    ]
    stdlib = sorted(
        (line for line in imports if top(line) in sys.stdlib_module_names),
        key=lambda line: (line.split()[1], line),
    )
    third = [line for line in imports if line not in stdlib]
    setup = [line for line in unique if not line.startswith(("import ", "from "))]
    blocks = [["from __future__ import annotations"], stdlib, setup, third]
    return "\n\n".join("\n".join(b) for b in blocks if b)


def allocator_env(name: str | None) -> tuple[dict[str, str], str]:
    """(variables, a note) of the row's allocator setting, resolved on this machine."""
    from imgbench.measure import allocator as alloc

    if not name or name == "glibc":
        return {}, "glibc's malloc as it comes (no variable set)"
    try:
        return dict(alloc.allocator(name).environment), f"{name}"
    except alloc.AllocatorUnavailableError as exc:
        preload = getattr(alloc, "_PRELOADS", {}).get(name)
        env = {"LD_PRELOAD": preload[0]} if preload else {}
        return env, f"{name} (not installed on the machine that exported this: {exc})"
    except ValueError:
        return {}, f"{name}: not an allocator imgbench knows; left unset"


def _header(choice: Choice, env: Mapping[str, str], env_note: str) -> str:
    row = choice.row
    extra = json_object(row.get("extra_json"))
    params = params_of(row)
    augment, recipe = pipeline_of(params)
    rate = row.get("images_per_s_median")
    lines = [
        f"{row.get('library')} · {params.get('decoder')} · {augment} ({recipe}) · "
        f"{params.get('workers')} workers",
        "",
        "Exported by `imgbench export` from imgbench's result rows and its own adapters.",
        "Standalone: imports no imgbench, only the libraries the row ran. Use it as",
        "    from this_module import make_loader",
        "    for images, labels in make_loader('path/to/train', batch_size=32): ...",
        "or time it: python this_module.py path/to/train",
        "",
        "The row it reproduces:",
        f"    case_id: {row.get('case_id')}",
        f"    run_id: {row.get('run_id')} ({row.get('created_utc')})",
        f"    images/s: {float(rate):,.1f} (median of its rounds)" if rate is not None else "",
        f"    machine: {row.get('hostname')} · {row.get('machine_id')}, "
        f"{row.get('cpu_cores_logical')} logical cores, {row.get('cpu_model')}",
        f"    dataset: {row.get('dataset_name')} · {row.get('dataset_fingerprint')} "
        f"({row.get('dataset_codec')}, {row.get('dataset_images')} images)",
    ]
    if extra.get("matrix_case_id"):
        lines.append(
            f"    re-measures the matrix row {extra['matrix_case_id']} (head-to-head final)"
        )
    if choice.title:
        lines.append(f"    answer: {choice.title}")
    if choice.asked is not None:
        lines += [
            "",
            f"NOT {choice.asked_for}: {choice.asked.get('case_id')} "
            f"({float(choice.asked.get('images_per_s_median') or 0):,.1f} images/s) cannot be",
            f"exported: {choice.why_not}.",
            "This is the best exportable candidate of the answer's list instead.",
        ]
        for case_id, reason in choice.skipped[1:]:
            lines.append(f"    also passed over: {case_id}: {reason}")
    versions = extra.get("pipeline_versions") or {}
    if versions:
        lines += ["", "Versions the row ran: " + ", ".join(f"{k} {v}" for k, v in versions.items())]
    lines += ["", f"Allocator: {env_note}."]
    if env:
        shell = " ".join(f"{k}={v}" for k, v in env.items())
        lines += [
            "Set it before Python starts (ALLOCATOR_ENV below; `python this_module.py` re-runs",
            f"itself under it):  {shell} python train.py",
        ]
    text = "\n".join(line for line in lines)
    return '"""' + text.replace('"""', "'''") + '\n"""'


def _settings(row: Mapping[str, Any], params: Mapping[str, Any], env: Mapping[str, str]) -> str:
    library = str(row.get("library"))
    workers = int(params.get("workers") or 0)
    prefetch = int(params.get("prefetch_factor") or 2)
    warmup_rounds = row.get("warmup_rounds")
    rounds = int(warmup_rounds) if isinstance(warmup_rounds, int | float) and warmup_rounds else 1
    per_round = int(params.get("batches_per_round") or 4)
    values: dict[str, Any] = {
        "BATCH_SIZE": int(params.get("batch_size") or 32),
        "WORKERS": workers,
        "PREFETCH_FACTOR": prefetch,
        "BATCHES_PER_ROUND": per_round,
        # imgbench drains what the workers prefetched, then runs its warm-up rounds
        "WARMUP_BATCHES": workers * prefetch + rounds * per_round,
    }
    if library == "torch-dataloader":
        values["PIN_MEMORY"] = bool(params.get("pin_memory"))
    if library == "torchdata-nodes":
        values["METHOD"] = str(params.get("method") or "thread")
        # "batch-map": its ImageNet example's shape (Batcher > ParallelMapper(map and collate))
        values["SHAPE"] = str(params.get("torchdata_shape") or "per-sample")
    if library.startswith("spdl"):
        values["SUBPROCESS"] = library == "spdl-subprocess"
        # "per-batch": its ImageNet example's shape (aggregate, then one task per batch)
        values["SHAPE"] = str(params.get("spdl_shape") or "per-sample")
    if library == "dali":
        values["DEVICE"] = str(params.get("dali_device") or "cpu")
        from imgbench.loaders.libs.dali import FULL_DECODE

        values["DECODE"] = str(params.get("dali_decode") or FULL_DECODE)
    lines = ["# the row's settings (its params_json)"]
    lines += [f"{k} = {v!r}" for k, v in values.items()]
    lines += [
        "# the allocator the row ran under: set in the environment before Python starts",
        f"ALLOCATOR_ENV = {json.dumps(dict(env), indent=4) if env else '{}'}",
    ]
    return "\n".join(lines)


def _dataloader_kwargs(params: Mapping[str, Any]) -> str:
    if not int(params.get("workers") or 0):
        return "DATALOADER_WORKER_KWARGS: dict = {}  # 0 workers: the main process loads"
    items = [
        f'    "prefetch_factor": {int(params.get("prefetch_factor") or 2)!r},',
        f'    "persistent_workers": {bool(params.get("persistent_workers", True))!r},',
        f'    "multiprocessing_context": {str(params.get("start_method") or "fork")!r},',
        '    "worker_init_fn": pin_opencv,',
    ]
    if "in_order" in params:
        items.append(f'    "in_order": {bool(params["in_order"])!r},  # torch >= 2.6')
    return "DATALOADER_WORKER_KWARGS: dict = {\n" + "\n".join(items) + "\n}"


def render(choice: Choice) -> str:
    """The exported module's source for ``choice.row``."""
    row = choice.row
    params = params_of(row)
    library = str(row.get("library"))
    env, env_note = allocator_env(
        row.get("allocator") if isinstance(row.get("allocator"), str) else None
    )
    loader = loader_code(library)
    sections = [_header(choice, env, env_note)]
    imports = list(loader.imports)
    body: list[str] = [_settings(row, params, env)]
    if library == "dali":
        suffixes: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
        body += [f"IMAGE_SUFFIXES = {suffixes!r}", _FOLDER, dali_recipe()]
    else:
        from imgbench.readers.registry import find_spec

        augment, recipe = pipeline_of(params)
        rec = recipe_code(augment, recipe)
        decoder_key = str(params["decoder"])
        dec = decoder_code(decoder_key, rec.input == "pil")
        codecs = sorted(find_spec(*decoder_key.split("/", 1)).codecs)
        suffixes = tuple(s for c in codecs for s in SUFFIXES.get(c, ()))
        imports = [*dec.imports, *rec.imports, *imports]
        body += [
            f"IMAGE_SUFFIXES = {suffixes!r}  # what {decoder_key} decodes",
            _FOLDER,
            "# -- the recipe: " + f"{augment} {recipe}, imgbench's adapter's own code",
            rec.code,
            "# -- the decoder: " + decoder_key,
            *([policy_code()] if dec.policy else []),
            dec.code,
            TO_INPUT[rec.input],
            _DATASET,
        ]
    body.append(_PINS)
    if library == "torch-dataloader":
        body.append(_dataloader_kwargs(params))
    if "stop_at_exit(" in loader.code:  # not DALI's: its pipeline's threads are C++ threads
        imports += ["import atexit", "import weakref"]
        body.append(_STOP)
    body += ["# -- the loader: " + library, loader.code, _settle(), _MAIN]
    parts = [part.strip("\n") for part in body]
    sections.append(_imports(imports, "\n".join(parts)))
    sections += parts
    return "\n\n\n".join(sections) + "\n"


def expected_batch(row: Mapping[str, Any], batch_size: int) -> tuple[tuple[int, ...], str]:
    """(shape, dtype) of the exported loader's image batches for ``row``."""
    _, recipe = pipeline_of(params_of(row))
    side = 224
    dtype = "uint8" if recipe == "train-uint8" else "float32"
    return (batch_size, 3, side, side), dtype


def epochs_for(images: int, batches: int, batch_size: int) -> int:
    return max(1, math.ceil(batches * batch_size / max(1, images)))
