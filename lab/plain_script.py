"""imgbench's loader rows beside the same configurations written as a plain PyTorch script.

    .venv/bin/python lab/plain_script.py --pairs 3 [--dataset synthetic-imagenet-like] [CASE_ID ...]

For each configuration (the default profile's common default, Pillow + torchvision v2 in the
DataLoader, and its OpenCV + albumentations sweep, each at 0 workers and at one per core, plus
every loader case id given), alternately, ``--pairs`` times (A B A B ..., one at a time): the
row as imgbench measures it (``imgbench.measure.manager.Manager``, the profile's settings, on
imgbench's pool of images, ``ctx.entries()``), then the same configuration as a standalone
training-script loader (``PLAIN``, no imgbench import, run in a fresh process of the project's
venv) over the WHOLE folder: an ``ImageFolder``-style walk of the dataset's root, the decoder as
users call it on a path, the train recipe written out (the parameters of imgbench's adapters,
filled in as literals), ``torch.utils.data.DataLoader`` with the row's workers, batch size,
prefetch, persistence, start method, and long epochs (``--epoch-passes`` reshuffled passes
over the folder through ``RandomSampler(num_samples=...)``: a small folder's own epochs would
drain the workers every few batches, which a large dataset does not; ``--also-short-epochs``
measures that too). Both sides run one thread per
process (the rows' ``threads=1``; DataLoader workers pin OpenCV to one), under the same
allocator environment and address layout (``setarch -R`` where the settings fix the layout).

Prints per configuration: imgbench's images/s (median of its runs), the plain script's (median
of its runs, each the median of its rounds), the ratio of the medians and the median of the
paired ratios (each plain run right after its imgbench run: the host's drift cancels), and the
pool against the folder (images, mean megapixels). The manager's worker server stays up, idle,
while a plain run runs. Noisy on a shared machine: log runs with the load in lab/journal.md on
the results branch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imgbench.augment import spec
from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD
from imgbench.controls import resolve
from imgbench.measure.allocator import allocator, environment_for
from imgbench.measure.case import Case
from imgbench.measure.manager import Manager
from imgbench.measure.rounds import Measurement
from imgbench.measure.settings import Settings, parse_assignments
from imgbench.measure.threads import THREAD_ENV_VARS
from imgbench.profiles import ProfileChoice
from imgbench.stages import planner, session_cases

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = "torch-dataloader"
# the rows compared unless case ids are given too: (name, variant) of the reference loader
CONFIGS = (
    ("common default", "files-pillow-torchvision"),
    ("OpenCV + albumentations", "files-opencv-albumentations"),
)
DECODERS = ("pillow/open-convert", "opencv/imdecode-rgb", "opencv/imdecode-cvtcolor")
AUGMENTS = ("torchvision/v2-pil", "torchvision/v2-tensor", "albumentations/numpy")
RECIPES = ("train-classification", "train-uint8")

# A training script's input pipeline, standalone: argv[1] is its configuration as JSON. The
# recipe's numbers are imgbench's adapters' (augment/spec.py), filled in when the text is made.
PLAIN = r'''
import json
import os
import sys
import time
from pathlib import Path

C = json.loads(sys.argv[1])
for name in C["thread_env"]:  # one thread per process, as the row
    os.environ[name] = "1"

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler

EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff")
MEAN, STD = @MEAN@, @STD@
SIZE, SCALE, RATIO, FLIP_P, JITTER = @SIZE@, @SCALE@, @RATIO@, @FLIP_P@, @JITTER@


def image_folder(root):
    """(path, class) of every image under root, as torchvision's ImageFolder lists them."""
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    if not classes:
        return [(str(p), 0) for p in sorted(root.iterdir()) if p.suffix.lower() in EXTENSIONS]
    return [
        (str(p), i)
        for i, c in enumerate(classes)
        for p in sorted((root / c).rglob("*"))
        if p.suffix.lower() in EXTENSIONS
    ]


def decoder(name):
    """path -> image, and what it returns ("pil" or "array")."""
    if name == "pillow/open-convert":
        from PIL import Image

        def pil_loader(path):  # torchvision.datasets.folder.pil_loader
            with open(path, "rb") as f:
                return Image.open(f).convert("RGB")

        return pil_loader, "pil"
    import cv2

    if name == "opencv/imdecode-rgb":
        flags = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION
        return (lambda path: cv2.imread(path, flags)), "array"
    flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION
    return (lambda path: cv2.cvtColor(cv2.imread(path, flags), cv2.COLOR_BGR2RGB)), "array"


def recipe(augment, name, given):
    """The train recipe on what the decoder gives: a function image -> CHW tensor."""
    as_float = name == "train-classification"
    if augment.startswith("torchvision/"):
        from torchvision.transforms import v2

        steps = [
            v2.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO, antialias=True),
            v2.RandomHorizontalFlip(p=FLIP_P),
            v2.ColorJitter(*JITTER),
        ]
        if augment == "torchvision/v2-tensor":  # on uint8 CHW tensors
            first = [v2.PILToTensor()] if given == "pil" else [v2.ToImage()]
            steps = first + steps
        else:  # on PIL images
            first = [v2.ToPILImage()] if given == "array" else []
            steps = first + steps + [v2.ToImage()]
        if as_float:
            steps += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]
        return v2.Compose(steps)
    import albumentations as A
    import cv2
    from albumentations.pytorch import ToTensorV2

    steps = [
        A.RandomResizedCrop(
            size=(SIZE, SIZE),
            scale=SCALE,
            ratio=RATIO,
            interpolation=cv2.INTER_LINEAR,
            area_for_downscale="image",
        ),
        A.HorizontalFlip(p=FLIP_P),
        A.ColorJitter(*JITTER, p=1),
    ]
    if as_float:
        steps.append(A.Normalize(mean=MEAN, std=STD))
    pipeline = A.Compose([*steps, ToTensorV2()])
    if given == "pil":
        return lambda image: pipeline(image=np.asarray(image))["image"]
    return lambda image: pipeline(image=image)["image"]


class Folder(Dataset):
    def __init__(self, samples, load, transform):
        self.samples, self.load, self.transform = samples, load, transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        return self.transform(self.load(path)), label


def one_thread(worker_id):
    cv2 = sys.modules.get("cv2")
    if cv2 is not None:
        cv2.setNumThreads(1)


def main():
    torch.set_num_threads(1)
    one_thread(0)
    samples = image_folder(Path(C["root"]))
    for path, _ in samples:  # read once, untimed: the page cache warm
        Path(path).read_bytes()
    load, given = decoder(C["decoder"])
    dataset = Folder(samples, load, recipe(C["augment"], C["recipe"], given))
    workers = C["workers"]
    kwargs = {}
    if workers:
        kwargs = dict(
            prefetch_factor=C["prefetch_factor"],
            persistent_workers=C["persistent_workers"],
            multiprocessing_context=C["start_method"],
            worker_init_fn=one_thread,
        )
        if "in_order" in C:
            kwargs["in_order"] = C["in_order"]
    if C["epoch_passes"] > 1:  # a long epoch, as on a large dataset: reshuffled passes, one iterator
        kwargs["sampler"] = RandomSampler(dataset, num_samples=C["epoch_passes"] * len(dataset))
    else:  # an epoch is the folder: the DataLoader drains and restarts at every boundary
        kwargs["shuffle"] = True
    loader = DataLoader(
        dataset,
        batch_size=C["batch_size"],
        num_workers=workers,
        drop_last=True,
        **kwargs,
    )

    def endless():
        while True:  # epochs, as a training loop runs them
            yield from loader

    batches = endless()
    for _ in range(C["warmup_batches"]):
        next(batches)
    rates = []
    for _ in range(C["rounds"]):
        start = time.perf_counter()
        for _ in range(C["batches_per_round"]):
            images, labels = next(batches)
            images.contiguous()
        rates.append(C["batches_per_round"] * C["batch_size"] / (time.perf_counter() - start))
    print(json.dumps({"images": len(samples), "images_per_s": rates}))


main()
'''


def plain_text() -> str:
    """``PLAIN`` with the recipe's numbers filled in (the same as imgbench's adapters')."""
    values = {
        "MEAN": list(IMAGENET_MEAN),
        "STD": list(IMAGENET_STD),
        "SIZE": spec.SIZE,
        "SCALE": tuple(spec.RRC_SCALE),
        "RATIO": tuple(spec.RRC_RATIO),
        "FLIP_P": spec.FLIP_P,
        "JITTER": tuple(spec.JITTER),
    }
    text = PLAIN
    for name, value in values.items():
        text = text.replace(f"@{name}@", repr(value))
    return text


@dataclass(frozen=True)
class Config:
    """One row's configuration: its case, and why a plain version cannot be written (or None)."""

    name: str
    case: Case
    unsupported: str | None = None


def plain_problem(case: Case) -> str | None:
    """Why ``case`` has no plain-script twin here, or None."""
    params = case.params
    augment, _, recipe = str(params.get("pipeline", "")).partition(":")
    if case.library != REFERENCE:
        return f"loader {case.library}: only the DataLoader is written as a plain script"
    if case.environment != "main":
        return f"runs in the {case.environment} environment"
    if params.get("format") != "files" or params.get("storage", "local") != "local":
        return f"format {params.get('format')}: the plain script reads the folder's files"
    if params.get("decoder") not in DECODERS:
        return f"decoder {params.get('decoder')}: no plain version here ({', '.join(DECODERS)})"
    if augment not in AUGMENTS or recipe not in RECIPES:
        return f"pipeline {params.get('pipeline')}: no plain version here"
    if params.get("accelerator_images_per_s") or params.get("pin_memory"):
        return "an emulated accelerator or pinned memory: not a plain loader"
    return None


def plain_config(
    case: Case, root: Path, settings: Settings, rounds: int, epoch_passes: int
) -> dict[str, Any]:
    """What the plain script needs of ``case``: the row's loader settings over ``root``, with
    epochs of ``epoch_passes`` reshuffled passes over the folder (1: the folder's length)."""
    params = case.params
    augment, _, recipe = str(params["pipeline"]).partition(":")
    workers = int(params.get("workers") or 0)
    batches = int(params["batches_per_round"])
    config: dict[str, Any] = {
        "root": str(root),
        "decoder": params["decoder"],
        "augment": augment,
        "recipe": recipe,
        "workers": workers,
        "batch_size": int(params["batch_size"]),
        "prefetch_factor": int(params.get("prefetch_factor") or 2),
        "persistent_workers": bool(params.get("persistent_workers", True)),
        "start_method": params.get("start_method") or "fork",
        "batches_per_round": batches,
        # imgbench's warm-up: its warm-up rounds, plus the batches its workers prefetched
        "warmup_batches": settings.warmup_rounds * batches
        + workers * int(params.get("prefetch_factor") or 0),
        "rounds": rounds,
        "epoch_passes": epoch_passes,
        "thread_env": list(THREAD_ENV_VARS),
    }
    if "in_order" in params:
        config["in_order"] = bool(params["in_order"])
    return config


def python() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_plain(script: Path, config: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """One plain run in a fresh process: the row's allocator environment and address layout."""
    env = environment_for(dict(os.environ), allocator(settings.allocator))
    command = [python(), str(script), json.dumps(config)]
    if settings.address_layout == "fixed" and shutil.which("setarch"):
        command = ["setarch", platform.machine(), "-R", *command]
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"plain script failed ({out.returncode}): {out.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def chosen(cases: list[Case], ids: list[str], cores: int) -> list[Config]:
    """The compared rows: the common default and OpenCV + albumentations at 0 and ``cores``
    workers (no knob set), then the cases named by id."""
    picked: list[Config] = []
    for name, variant in CONFIGS:
        for workers in (0, cores):
            found = [
                c
                for c in cases
                if c.library == REFERENCE
                and c.variant == variant
                and c.params.get("workers") == workers
                and c.params.get("format") == "files"
            ]
            if not found:
                raise SystemExit(f"the profile has no {name} row ({variant}) at {workers} workers")
            picked.append(Config(f"{name}, {workers} workers", found[0]))
    by_id = {c.case_id: c for c in cases}
    for case_id in ids:
        if case_id not in by_id:
            raise SystemExit(f"{case_id}: not a loader case of this profile")
        case = by_id[case_id]
        picked.append(Config(case_id, case, plain_problem(case)))
    return picked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case_ids", nargs="*", help="more loader case ids of the profile")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--dataset", default=None, help="a folder or recipe (the profile's)")
    parser.add_argument("--pairs", type=int, default=3, help="imgbench then plain, this often")
    parser.add_argument("--plain-rounds", type=int, default=10, help="timed rounds per plain run")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--epoch-passes",
        type=int,
        default=64,
        help="the plain script's epoch: this many reshuffled passes over the folder in one "
        "iterator (RandomSampler(num_samples=...)), as a large dataset's epoch; 1: the folder",
    )
    parser.add_argument(
        "--also-short-epochs",
        action="store_true",
        help="after each plain run, one more with --epoch-passes 1 (what the epoch boundary costs)",
    )
    args = parser.parse_args()
    choice = ProfileChoice(args.profile)
    profile = choice.resolve()
    settings = resolve(profile, parse_assignments(args.set))
    cores = os.cpu_count() or 2
    configs = chosen(session_cases("loader", choice, settings, profile), args.case_ids, cores)
    manager = Manager(settings, planner(choice, profile), args.dataset or profile.dataset)
    try:
        ctx = manager.context()
        entries = ctx.entries()
        pool_mp = statistics.fmean(e.width * e.height for e in entries) / 1e6
        print(
            f"dataset {ctx.dataset.name} at {ctx.dataset.root}: {ctx.dataset.n_images} images, "
            f"{ctx.dataset.mean_megapixels:.3f} MP mean; imgbench's pool: {len(entries)} "
            f"images, {pool_mp:.3f} MP mean"
        )
        with tempfile.TemporaryDirectory(prefix="imgbench-plain-") as folder:
            script = Path(folder) / "plain_loader.py"
            script.write_text(plain_text())
            rows = [compare(c, manager, script, ctx.dataset.root, settings, args) for c in configs]
    finally:
        manager.close()
    print()
    print(
        f"{'configuration':40} {'imgbench img/s':>16} {'plain img/s':>14} {'ratio':>7} {'paired':>7}"
    )
    for name, line in rows:
        print(f"{name:40} {line}")


def compare(
    config: Config,
    manager: Manager,
    script: Path,
    root: Path,
    settings: Settings,
    args: argparse.Namespace,
) -> tuple[str, str]:
    """``args.pairs`` imgbench runs, each followed by a plain run; the table's line."""
    if config.unsupported:
        return config.name, f"n/a: {config.unsupported}"
    plain = plain_config(config.case, root, settings, args.plain_rounds, args.epoch_passes)
    short = plain_config(config.case, root, settings, args.plain_rounds, 1)
    ours: list[float] = []
    theirs: list[float] = []
    shorts: list[float] = []
    for pair in range(args.pairs):
        outcome = manager.measure(config.case)
        if not isinstance(outcome, Measurement):
            return config.name, f"imgbench: {outcome}"
        ours.append(float(outcome.metrics()["images_per_s_median"]))
        result = run_plain(script, plain, settings)
        theirs.append(statistics.median(result["images_per_s"]))
        also = ""
        if args.also_short_epochs:
            shorts.append(statistics.median(run_plain(script, short, settings)["images_per_s"]))
            also = f", plain with folder-length epochs {shorts[-1]:.1f}"
        print(
            f"{config.name}, pair {pair + 1}: imgbench {ours[-1]:.1f} images/s "
            f"({outcome.extra.get('images_in_pool')} images), plain {theirs[-1]:.1f} "
            f"({result['images']} images, epochs of {args.epoch_passes} passes){also}",
            flush=True,
        )
    ratio = statistics.median(ours) / statistics.median(theirs)
    paired = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
    runs = ", ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(ours, theirs, strict=True))
    line = (
        f"{statistics.median(ours):16.1f} {statistics.median(theirs):14.1f} "
        f"{ratio:7.3f} {paired:7.3f}   ({runs})"
    )
    if shorts:
        short_ratio = statistics.median(ours) / statistics.median(shorts)
        line += f"; folder-length epochs {statistics.median(shorts):.1f}, ratio {short_ratio:.3f}"
    return config.name, line


if __name__ == "__main__":
    main()
