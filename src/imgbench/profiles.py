"""Benchmark profiles: how much of each stage runs, on which dataset, with how many rounds.

``quick`` is this project's CI (every stage thinned, about a minute on 2 cores), ``default`` is
``make bench`` (23-27 minutes on 2 Zen 4 cores, about 40 on 2 Zen 3 ones), ``full`` is
everything. A profile owns one plan per stage (``imgbench.plan``) and its measuring controls
(``settings``: ``imgbench.measure.settings.Settings``' names); nothing else looks at a profile's
name, so a profile declared only in ``pyproject.toml`` runs with no code change::

    [tool.imgbench.profiles.jpeg-smoke]
    base = "quick"                 # any profile above, or another declared one
    [tool.imgbench.profiles.jpeg-smoke.settings]
    rounds = 3                     # any Settings control (at the top level above, the same)
    [tool.imgbench.profiles.jpeg-smoke.read]
    codecs = ["jpeg"]
    libraries = ["pillow", "opencv/imdecode-rgb"]
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from imgbench.augment.plan import AugmentPlan
from imgbench.final.plan import FinalPlan
from imgbench.formats.plan import FormatPlan
from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.settings import FIELDS, Settings
from imgbench.plan import PLANS, StagePlan, override
from imgbench.readers.plan import ReadPlan

P = TypeVar("P", bound=StagePlan)

PYPROJECT_ENV = "IMGBENCH_PYPROJECT"  # a pyproject.toml to read profiles from, instead of ./


@dataclass(frozen=True, kw_only=True)
class Profile:
    name: str
    description: str
    dataset: str  # recipe used when no --dataset is given
    thread_modes: tuple[int | None, ...]  # 1 = pinned single thread, None = library default
    # isolated environments `imgbench run` also runs (their own cases only)
    environments: tuple[str, ...] = ()
    # more datasets the stages marked ``extra_datasets`` (readers, loaders) run on, so every codec
    # and the whole pipeline meet real photos; on those, ``extra_dataset_plans`` override plans
    extra_datasets: tuple[str, ...] = ()
    extra_dataset_plans: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    plans: Mapping[str, StagePlan] = field(default_factory=dict)  # stage name -> its plan
    # more sessions `imgbench run` adds, one per allocator (imgbench.measure.allocator), that run
    # the stages named in allocator_plans with those plans: the allocator as a dimension
    allocators: tuple[str, ...] = ()
    allocator_plans: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # the measuring controls by their Settings names (imgbench.measure.settings: rounds,
    # max_images, min_round_s, ...), the one record of them; the rest keep Settings' defaults.
    # Checked when a session resolves its settings (imgbench.controls). In pyproject.toml:
    # [tool.imgbench.profiles.NAME.settings], or a control's name at the profile's top level
    settings: Mapping[str, Any] = field(default_factory=dict)
    # emulated disks (imgbench.disks.catalog) `imgbench run` adds a session on each, plus one
    # on the real disk, running the stages named in disk_plans with those plans: each format's
    # cold reads on both disks in one run (docs/disks.md). Skipped with one line where emulated
    # disks cannot be set up. real_disk_plans: the real-disk session's further overrides
    disks: tuple[str, ...] = ()
    disk_plans: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    real_disk_plans: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def plan(self, kind: type[P]) -> P:
        """This profile's plan for a stage; the stage's defaults when the profile has none."""
        found = self.plans.get(kind.stage)
        return found if isinstance(found, kind) else kind()

    def on_extra_dataset(self) -> Profile:
        """The profile as it runs on one of ``extra_datasets``: thinner plans where it says so."""
        return self._with_plans(self.extra_dataset_plans, "extra_dataset_plans")

    def in_allocator_session(self) -> Profile:
        """The profile as its allocator sessions run it: ``allocator_plans``."""
        return self._with_plans(self.allocator_plans, "allocator_plans")

    def in_disk_session(self, disk: str) -> Profile:
        """The profile as its session on ``disk`` runs it (``none``: the real disk's pass):
        ``disk_plans``, then on the real disk ``real_disk_plans``."""
        profile = self._with_plans(self.disk_plans, "disk_plans")
        if disk == "none":
            profile = profile._with_plans(self.real_disk_plans, "real_disk_plans")
        return profile

    def _with_plans(self, overrides: Mapping[str, Mapping[str, Any]], where: str) -> Profile:
        plans = dict(self.plans)
        for stage, values in overrides.items():
            base = plans.get(stage) or _plan_class(stage)()
            plans[stage] = override(base, values, f"{self.name}.{where}.{stage}")
        return dataclasses.replace(self, plans=plans)


def _plan_class(stage: str) -> type[StagePlan]:
    if stage not in PLANS:
        raise ValueError(f"unknown stage {stage!r}; known: {sorted(PLANS)}")
    return PLANS[stage]


# the transforms of make bench's matrix: geometry, colour, blur, the tensor steps, JPEG artefacts
DEFAULT_TRANSFORMS = (
    "hflip",
    "rotate",
    "affine",
    "resize",
    "random_resized_crop",
    "contrast",
    "color_jitter",
    "gaussian_blur",
    "normalize",
    "jpeg",
)

# make bench's disk sessions (docs/disks.md, "In make bench"): the `disk` profile's selection,
# sized small: folder, tar, LMDB and RecordIO read cold (shuffled stored bytes) and the DataLoader
# at 2 workers over the folder, tar and RecordIO (an LMDB loader cannot read cold: the workers
# map it), on the main session's 32-image sample; a round of 4 batches of 8 reads that pool once.
# On the real disk the format reads are the main session's own cold rows (same sample): not
# read again; its loader rounds read cold too (cold_rounds)
_DISK_PLANS: dict[str, dict[str, Any]] = {
    "read": {
        "libraries": [],
        "memory_threads": [],
        "disk_threads": [],
        "reduces": [],
        "native": False,
        "batch_sizes": [],
    },
    "augment": {"libraries": [], "transforms": [], "pipelines": [], "batch_sizes": []},
    "format": {
        "libraries": ["folder", "tar", "lmdb", "recordio"],
        "caches": ["cold"],
        "orders": ["shuffled"],
        "payloads": ["bytes"],
        "storages": ["local"],
        "raw_ceiling": False,
    },
    "loader": {
        "libraries": ["torch-dataloader"],
        "batch_size": 8,
        "worker_sweep": [2],
        "sweep_pipelines": ["default", "tar", "recordio"],
        "extra_pipelines": [],
        "crop_pipelines": [],
        "as_documented": False,
        "baseline_pipeline": None,
        "start_methods": [],
        "knobs": False,
        "au_accelerators": [],
        "in_order_workers": [],
        "cow_workers": [],
        "s3_pipelines": [],
        "supply_decoders": [],
        "task_pipelines": [],
        "task_pipelines_at_cores": [],
        "ceiling_pipelines": [],
        "ranks": [],
        "cold_rounds": True,
    },
    "final": {"blocks": 0},
}

_DEFAULT = Profile(
    name="default",
    description="make bench: the default matrix, 23-27 minutes on 2 Zen 4 cores",
    dataset="synthetic-imagenet-like",
    thread_modes=(1, None),
    # pillow-simd: its readers, Pillow's augmentations and the Pillow loader pipelines;
    # albumentationsx: the albumentations transforms and pipelines, and the default loader pipeline;
    # mxnet: mx.image.imdecode and ImageRecordIter over a .rec it writes (numpy 1.23.5 there)
    environments=("pillow-simd", "tensorflow", "albumentationsx", "mxnet"),
    extra_datasets=("real-sample",),
    # on real photos: every decoder from memory, and the DataLoader at 0 and 2 workers (the whole
    # pipeline meets real photos); the disk modes and the loader sweep are the synthetic set's
    # (measured 2026-11-23: 7.0 min with them, 91 read + 20 loader rows)
    extra_dataset_plans={
        "read": {"disk_threads": []},
        "loader": {
            "libraries": ["torch-dataloader", "tf-data", "keras-pydataset"],
            "worker_sweep": [0, 2],
            "sweep_pipelines": ["default"],
            "extra_pipelines": [],
            "crop_pipelines": [],
            "as_documented": False,
            "baseline_pipeline": None,
            "start_methods": [],
            "knobs": False,
            "au_accelerators": [],
            "cow_workers": [],
            "s3_pipelines": [],
            "in_order_workers": [],
            "supply_decoders": [],
            "task_pipelines": [],
            "task_pipelines_at_cores": [],
            "ceiling_pipelines": [],
            "ranks": [],
        },
    },
    # what keeps make bench at 23-27 minutes on 2 Zen 4 cores (about 40 on Zen 3): JPEG read every way, PNG and WebP from memory; the transforms people use most;
    # format reads of stored bytes (decoding them is the readers' figure); the DataLoader's
    # worker sweep without the start-method and knob variants. `full` has the rest.
    plans={
        "read": ReadPlan(
            codecs=("jpeg", "png", "webp"), disk_codecs=("jpeg",), memory_threads=(1,)
        ),
        "augment": AugmentPlan(
            transforms=DEFAULT_TRANSFORMS,
            pipelines=("train-classification",),
        ),
        "format": FormatPlan(payloads=("bytes",)),
        # rounds of two batches (4 elsewhere; a worker still gets two): the loader rows were 360 s
        # of the 14.5 min main session (30 rows, 12 s each). The S3 sweep (tar shards from the
        # bucket, emulated 100 images/s accelerator) at 0 and 2 workers: an S3 AU case took 31-36 s
        # with rounds of 4 batches (2026-11-23, loaded machine; the first also uploads), so the
        # whole sweep (5 counts on 2 cores) would add ~3 minutes; `full` has it
        # the uint8 pipeline at 0 and 2 workers, not swept (its 1, 3 and 4 worker rows were 33 s
        # and repeat the default pipeline's answer; measured 2026-11-23, eighth session)
        "loader": LoaderPlan(
            batches_per_round=2,
            sweep_pipelines=("default",),
            start_methods=(),
            knobs=False,
            # 200 images/s: between the slowest loaders (MXNet, 158) and the DataLoader's 0
            # workers (245), so AU tells them apart; at 100 every loader read 100% and each AU
            # row took 18.7 s (13 rows, 2026-11-27)
            au_accelerators=(200,),
            # the last three run in the pillow-simd and albumentationsx envs (their parts' env);
            # pillow-pil is their twin in main (common-default's is the baseline)
            extra_pipelines=(
                "torchvision",
                "lmdb",
                "uint8",
                "pillow-pil",
                "pillow-simd-common-default",
                "pillow-simd-pil",
                "albumentationsx",
            ),
            cow_workers=(0, 2),
            s3_workers=(0, 2),
            # each decoder that can decode only the crop's window or at a reduced scale, and the
            # full decode of the two whose full pipeline is not already a row (docs/loaders.md)
            crop_pipelines=(
                "turbojpeg",
                "turbojpeg-roi",
                "turbojpeg-roi-reduced",
                "pillow-reduced",
                "opencv-reduced",
                "nvimgcodec",
                "nvimgcodec-roi",
            ),
            # the tasks' loaders: segmentation at 0 and one worker per core, crop-ocr at one per
            # core (~15 s estimated from the DataLoader rows' wall_s of a default run, 2026-11-27);
            # the loaders' own task rows follow them in the tensorflow session: tf.data's
            # segmentation from the pairs' PNG files and from TFRecord, Keras's segmentation at 0
            # (inline) and at cores on threads and on processes, Keras's crop-ocr at cores on
            # both (7 rows, ~50 s estimated, docs/loaders.md "Tasks in make bench")
            task_pipelines=("segmentation",),
            task_workers=(0, os.cpu_count() or 2),
            task_pipelines_at_cores=("crop-ocr",),
            # every full-size JPEG decoder inside the DataLoader at 0 workers and one per core
            # (the synthetic set only: extra_dataset_plans turns it off). Not at 1 worker: those
            # 19 rows (65 s of /work/fresh's run) repeat the 0-worker column at 0.81-0.93x, never
            # a decoder's best; they paid for the tasks' rows above (`full` keeps 0..cores)
            supply_decoders="all",
            supply_workers=(0, os.cpu_count() or 2),
            # how far every answer is from a pipeline with nothing left to read, or to read and
            # decode (the pool in RAM), and two training ranks' loaders sharing the cores
            ceiling_pipelines=("ram-bytes", "ram-decoded"),
            ranks=(2,),
        ),
        # the matrix's best loader configurations and the common default, head to head: 5 blocks
        # of 3 rounds each (docs/final.md)
        "final": FinalPlan(),
    },
    settings={
        # the fewest that let a single-file compare name one slowed case of ~450 (regression.md)
        "rounds": 10,
        # one warm-up round (pyperf's default) and half the host gate's per-case budget: 75-80 s
        # of a make bench that measured 26.1 min in a slow hour with two (full keeps both)
        "warmup_rounds": 1,
        "host_budget_s": 0.5,
        "max_images": 32,
        # loader rows screen (5 rounds) and the head-to-head final decides (imgbench.final): 10
        # rounds made the loader rows 710 s of timing in a 40-minute make bench
        "loader_rounds": 5,
    },
    # the allocator's effect where it was measured to matter: decoders that allocate through
    # malloc (Pillow) or numpy, augmentation pipelines, and the DataLoader's workers
    allocators=("glibc-tuned", "jemalloc", "tcmalloc"),
    allocator_plans={
        "read": {
            "libraries": ["pillow/open-convert", "opencv/imdecode-rgb", "simplejpeg"],
            "codecs": ["jpeg"],
            "memory_threads": [1],
            "disk_threads": [],
            "reduces": [],
            "native": False,
        },
        "augment": {
            "libraries": ["albumentations/numpy", "torchvision/v2-tensor"],
            "transforms": [],
            "pipelines": ["train-classification"],
            "pipeline_threads_default": False,
            "batch_sizes": [],
        },
        "loader": {
            "libraries": ["torch-dataloader"],
            "worker_sweep": [2],
            "sweep_pipelines": ["default"],
            "extra_pipelines": [],
            "crop_pipelines": [],
            "as_documented": False,
            "start_methods": [],
            "knobs": False,
            "au_accelerators": [],
            "cow_workers": [],
            "baseline_pipeline": None,
            "s3_pipelines": [],
            "in_order_workers": [],
            "supply_decoders": [],
            "task_pipelines": [],
            "task_pipelines_at_cores": [],
            "ceiling_pipelines": [],
            "ranks": [],
        },
    },
    disks=("hdd",),
    disk_plans=_DISK_PLANS,
    real_disk_plans={"format": {"libraries": []}},
)

# The accelerator half (docs/gpu.md; scripts/device_check.sh runs it on one GPU machine): the
# gpu loader rows, the DataLoader it is compared with at one worker per core, and the CPU JPEG
# decoders on one thread; sized for under 8 minutes on one H100 with 16 cores
_GPU = Profile(
    name="gpu",
    description="the accelerator half: H2D copies, nvJPEG, GPU augmentation, ResNet-50 fed",
    dataset="synthetic-imagenet-like",
    settings={"rounds": 3, "warmup_rounds": 1, "host_budget_s": 0.5, "max_images": 32},
    thread_modes=(1,),
    plans={
        "read": ReadPlan(
            libraries=(
                "pillow/open-convert",
                "opencv/imdecode-rgb",
                "simplejpeg/decode-jpeg",
                "torchvision/decode-jpeg",
            ),
            codecs=("jpeg",),
            memory_threads=(1,),
            disk_threads=(),
            reduces=(),
            native=False,
            batch_sizes=(),
        ),
        "augment": AugmentPlan(libraries=(), transforms=(), pipelines=(), batch_sizes=()),
        "format": FormatPlan(libraries=()),
        "loader": LoaderPlan(
            libraries=("torch-dataloader", "gpu"),
            batches_per_round=4,
            worker_sweep=(os.cpu_count() or 2,),
            sweep_pipelines=("default", "uint8"),
            extra_pipelines=(),
            baseline_pipeline=None,
            start_methods=(),
            knobs=False,
            au_accelerators=(),
            in_order_workers=(),
            cow_workers=(),
            s3_pipelines=(),
        ),
        "final": FinalPlan(blocks=0),
    },
)
# The cheap HDD pass (docs/disks.md, "Does packing pay off on an HDD?"): folder, tar, LMDB and
# RecordIO read cold (shuffled stored bytes), and the DataLoader at one worker per core over each
# of them; nothing else. `imgbench run --profile disk --disk hdd`, then
# `imgbench run --profile disk` for the real disk's rows of the same sample (the report's HDD/real
# ratio). In no other profile and not in make bench: the lead decides after timing it.
_DISK = Profile(
    name="disk",
    description="does packing pay off on an HDD: 4 formats cold + the DataLoader; with --disk hdd",
    dataset="synthetic-imagenet-like",
    thread_modes=(1,),
    plans={
        "read": ReadPlan(
            libraries=(),
            memory_threads=(),
            disk_threads=(),
            reduces=(),
            native=False,
            batch_sizes=(),
        ),
        "augment": AugmentPlan(libraries=(), transforms=(), pipelines=(), batch_sizes=()),
        "format": FormatPlan(
            libraries=("folder", "tar", "lmdb", "recordio"),
            caches=("cold",),
            orders=("shuffled",),
            payloads=("bytes",),
            storages=("local",),
            raw_ceiling=False,
        ),
        "loader": LoaderPlan(
            libraries=("torch-dataloader",),
            worker_sweep=(os.cpu_count() or 2,),
            sweep_pipelines=("default", "tar", "lmdb", "recordio"),
            extra_pipelines=(),
            baseline_pipeline=None,
            start_methods=(),
            knobs=False,
            au_accelerators=(),
            in_order_workers=(),
            cow_workers=(),
            s3_pipelines=(),
        ),
        "final": FinalPlan(blocks=0),
    },
    settings={
        "rounds": 10,
        "loader_rounds": 5,
        "warmup_rounds": 1,
        "host_budget_s": 0.5,
        # a loader round at 2 workers (4 batches of 32) reads the pool once: every read is cold
        "max_images": 128,
    },
)

BUILTIN: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="quick",
            description="CI smoke profile: every stage thinned; a few minutes on 2 cores",
            dataset="synthetic-small",
            settings={"rounds": 5, "warmup_rounds": 1, "max_images": 16},
            thread_modes=(1,),
            plans={
                "read": ReadPlan(
                    libraries="quick",
                    codecs=("jpeg", "png"),
                    disk_threads=(),
                    reduces=(),
                    native=False,
                ),
                "augment": AugmentPlan(
                    libraries="quick",
                    transforms=("hflip", "resize", "rotate", "color_jitter", "normalize"),
                    pipelines=("train-classification",),
                    pipeline_threads_default=False,
                    batch_sizes=(),
                    max_images=8,
                    budget_s=1.0,
                ),
                "format": FormatPlan(
                    libraries="quick",
                    caches=("warm",),
                    orders=("sequential",),
                    payloads=("bytes",),
                    storages=("local",),
                ),
                "loader": LoaderPlan(
                    libraries="quick",
                    batch_size=8,
                    batches_per_round=2,
                    worker_sweep=(0, 2),
                    sweep_pipelines=("default",),
                    thread_sweep=(2,),
                    extra_pipelines=(),
                    start_methods=(),
                    knobs=False,
                    au_accelerators=(),
                    in_order_workers=(),
                    cow_workers=(),
                    s3_pipelines=(),  # no S3 server in quick (formats: local storage only)
                ),
                # the final's machinery on a few candidates (docs/final.md)
                "final": FinalPlan(blocks=2, rounds=2, next_few=1, max_candidates=4),
            },
        ),
        _DEFAULT,
        dataclasses.replace(
            _DEFAULT,
            name="full",
            description="everything, with more rounds",
            # loader rows at the full 20 rounds (no loader_rounds)
            settings={"rounds": 20, "warmup_rounds": 3, "host_budget_s": 1.0, "max_images": 256},
            # + Mosaic Streaming (MDS), whose format cases are in `full` only
            environments=("pillow-simd", "tensorflow", "albumentationsx", "mxnet", "mosaic"),
            extra_datasets=("real-sample", "synthetic-grid"),
            extra_dataset_plans={
                "loader": {
                    "extra_pipelines": [],
                    "crop_pipelines": [],
                    "as_documented": False,
                    "start_methods": [],
                    "knobs": False,
                    "in_order_workers": [],
                    "s3_pipelines": [],
                    "ceiling_pipelines": [],
                    "ranks": [],
                }
            },
            plans={
                "read": ReadPlan(libraries="all", disk_threads=None, reduces=(2, 4)),
                "augment": AugmentPlan(
                    libraries="all",
                    pipelines="all",
                    transform_threads_default=True,
                    batch_sizes=(32, 128),
                    max_images=256,
                    budget_s=20.0,
                    tasks=("segmentation", "crop-ocr"),  # 13 cases: over default's ~20 s
                ),
                # the S3 rows at 0, 5 and 50 ms and at 50 ms capped to 100 Mbit/s: the round trips
                # that change S3 reads, and one cap (the full 3x3 table would triple the S3 rows
                # for caps that a 2-core host with its server on the loopback barely tells apart)
                "format": FormatPlan(
                    libraries="all",
                    network_shapes=(
                        "rtt0ms-unlimited",
                        "rtt5ms-unlimited",
                        "rtt50ms-unlimited",
                        "rtt50ms-100mbit",
                    ),
                ),
                # S3: tar shards at every worker count, unshaped and through a 50 ms path (where
                # workers must hide the round trips; at 50 images/s ~17 minutes for the ten cases)
                "loader": LoaderPlan(
                    libraries="all",
                    thread_sweep=(1, 2, 4, 2 * (os.cpu_count() or 2)),
                    au_accelerators=(50, 100, 200, 400),
                    cow_workers=(0, 1, 2, 3, 4),
                    # seed 001's scale: ten million paths (a list of them is ~1.1 GB per copy)
                    cow_entries=10_000_000,
                    ceiling_pipelines=("ram-bytes", "ram-decoded"),
                    ranks=(2, 4),
                    s3_network_shapes=("rtt0ms-unlimited", "rtt50ms-unlimited"),
                    supply_decoders="all",
                    # the tasks' loaders (docs/loaders.md, "Tasks"): 0..cores workers each
                    task_pipelines=("segmentation", "segmentation-torchvision", "crop-ocr"),
                    # the plan's own, and the Pillow and albumentations pipelines in their
                    # other builds' envs (pillow-simd, albumentationsx) beside their twins
                    extra_pipelines=(
                        *LoaderPlan().extra_pipelines,
                        "pillow-pil",
                        "pillow-simd-common-default",
                        "pillow-simd-pil",
                        "albumentationsx",
                    ),
                ),
            },
        ),
        _GPU,
        _DISK,
    )
}

# profile settings a pyproject.toml table may override (besides ``base`` and stage tables)
_TOP_LEVEL = {"description", "dataset", "thread_modes", "environments", "extra_datasets", "disks"}


@dataclass(frozen=True)
class ProfileChoice:
    """A profile as one session runs it: its name, and which of its variants (the plans it runs
    on an extra dataset, or in an allocator session). Small and picklable, so the runner and
    its worker processes resolve the same plans from it, in one place."""

    name: str
    extra_dataset: bool = False
    allocator_session: bool = False
    disk_session: str = ""  # a disk session's disk (``none``: the real disk's pass); "" none

    def resolve(self) -> Profile:
        profile = get_profile(self.name)
        if self.extra_dataset:
            profile = profile.on_extra_dataset()
        if self.allocator_session:
            profile = profile.in_allocator_session()
        if self.disk_session:
            profile = profile.in_disk_session(self.disk_session)
        return profile


class ProfileError(ValueError):
    """An unknown profile, or a malformed ``[tool.imgbench.profiles]`` table: one line."""


def pyproject_path() -> Path | None:
    """Where declared profiles are read from: $IMGBENCH_PYPROJECT, ./pyproject.toml, the checkout."""
    if os.environ.get(PYPROJECT_ENV):
        return Path(os.environ[PYPROJECT_ENV])
    here = Path.cwd() / "pyproject.toml"
    if here.is_file():
        return here
    from imgbench.paths import repo_root

    root = repo_root()
    return root / "pyproject.toml" if root is not None else None


def declared_tables(pyproject: Path | None = None) -> dict[str, dict[str, Any]]:
    """The ``[tool.imgbench.profiles.*]`` tables of a pyproject.toml (none when it has none)."""
    path = pyproject if pyproject is not None else pyproject_path()
    if path is None or not path.is_file():
        return {}
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"{path}: not readable TOML ({exc})") from None
    tables = doc.get("tool", {}).get("imgbench", {}).get("profiles", {})
    if not isinstance(tables, dict):
        raise ProfileError(f"{path}: [tool.imgbench.profiles] must be a table of profiles")
    return tables


def profile_names(pyproject: Path | None = None) -> list[str]:
    return [*BUILTIN, *(n for n in declared_tables(pyproject) if n not in BUILTIN)]


def get_profile(name: str, pyproject: Path | None = None) -> Profile:
    """A built-in profile, or one declared in pyproject.toml as a base plus overrides."""
    tables = declared_tables(pyproject)
    return _resolve(name, tables, seen=())


def _resolve(name: str, tables: dict[str, dict[str, Any]], seen: tuple[str, ...]) -> Profile:
    if name in seen:
        raise ProfileError(f"profile {name!r}: its bases loop ({' -> '.join((*seen, name))})")
    table = tables.get(name)
    if table is None:
        if name in BUILTIN:
            return BUILTIN[name]
        known = ", ".join([*BUILTIN, *(n for n in tables if n not in BUILTIN)])
        raise ProfileError(f"unknown profile {name!r}; choose one of {known}")
    if not isinstance(table, dict):
        raise ProfileError(f"[tool.imgbench.profiles.{name}] must be a table")
    base_name = table.get("base", name if name in BUILTIN else "default")
    if base_name == name and name in BUILTIN:
        base = BUILTIN[name]  # a table named like a built-in profile amends it
    else:
        base = _resolve(str(base_name), tables, (*seen, name))
    return _apply(base, name, table)


def _apply(base: Profile, name: str, table: dict[str, Any]) -> Profile:
    where = f"[tool.imgbench.profiles.{name}]"
    top = {k: v for k, v in table.items() if k in _TOP_LEVEL}
    stage_names = set(PLANS)
    unknown = sorted(set(table) - _TOP_LEVEL - set(FIELDS) - stage_names - {"base", "settings"})
    if unknown:
        raise ProfileError(
            f"{where}: unknown keys {unknown}; profile keys: {sorted(_TOP_LEVEL)}, "
            f"controls: {sorted(FIELDS)}, stage tables: {sorted(stage_names)}"
        )
    try:
        profile = override(base, top, where) if top else base
        plans = dict(profile.plans)
        for stage, plan_class in PLANS.items():
            if stage in table:
                current = plans.get(stage) or plan_class()
                plans[stage] = override(current, table[stage], f"{where}.{stage}")
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    controls = table.get("settings", {})
    if not isinstance(controls, dict):
        raise ProfileError(f"{where}.settings must be a table of NAME = VALUE")
    # a control at the table's top level is the same as in its settings table: one record
    named_here = {k: v for k, v in table.items() if k in FIELDS}
    settings = {**profile.settings, **named_here, **controls}
    try:  # each known control's type now (unknown names: imgbench.controls.resolve says which)
        override(Settings(), {k: v for k, v in settings.items() if k in FIELDS}, where)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    return dataclasses.replace(profile, name=name, plans=plans, settings=settings)
