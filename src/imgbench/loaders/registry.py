"""Every loader imgbench measures. Adding one is a module in ``libs/`` with
``build(pipeline, params)`` that returns a :class:`~imgbench.loaders.base.Loader`, plus an entry here."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

from imgbench.library import LibrarySpec, catalog, find
from imgbench.loaders.gpu.device import cuda_missing
from imgbench.loaders.pipeline import NO_AUGMENT, PipelineConfig

# The pipelines plans and specs name: reader -> decoder -> augmentation, as PipelineConfig.
NAMED_PIPELINES: dict[str, PipelineConfig] = {
    "default": PipelineConfig(),
    # what most training scripts start from: Pillow + image folder + torchvision transforms; the
    # Overview's speed-ups are over it (imgbench.answer)
    "common-default": PipelineConfig(decoder="pillow/open-convert", augment="torchvision/v2-pil"),
    # the same work shipped as uint8, normalised on the accelerator: a quarter of the bytes
    # cross processes (docs/loaders.md, "why workers scale less than the cores")
    "uint8": PipelineConfig(recipe="train-uint8"),
    "torchvision": PipelineConfig(augment="torchvision/v2-tensor"),
    "decode-only": PipelineConfig(augment=NO_AUGMENT),  # big arrays cross processes
    "lmdb": PipelineConfig(format="lmdb"),
    # the DataLoader over imgbench's tar shards and RecordIO (read by offset, one file handle per
    # worker): with lmdb, the packed stores of the disk profile's loader rows (docs/disks.md)
    "tar": PipelineConfig(format="tar"),
    "recordio": PipelineConfig(format="recordio"),
    "pillow": PipelineConfig(decoder="pillow/open-convert"),
    "pillow-pil": PipelineConfig(decoder="pillow/open-convert", augment="pillow/pil"),
    # the same pipelines over another build of their library, run in its env (the parts' env
    # takes the case there): pillow-simd's decode and augmentations, AlbumentationsX's recipe
    "pillow-simd-common-default": PipelineConfig(
        decoder="pillow-simd/open-convert", augment="torchvision/v2-pil"
    ),
    "pillow-simd-pil": PipelineConfig(
        decoder="pillow-simd/open-convert", augment="pillow-simd/pil"
    ),
    "albumentationsx": PipelineConfig(augment="albumentationsx/numpy"),
    # spdl.io's FFmpeg decode as the decoder (the spdl loaders run it beside the default)
    "spdl-io": PipelineConfig(decoder="spdl/load-image"),
    # tf.data: decode_jpeg on a pool of JPEGs, decode_image on PNG (imgbench.loaders.libs.tfdata)
    "tensorflow": PipelineConfig(decoder="tensorflow/decode-image", augment="tensorflow"),
    "tensorflow-tfrecord": PipelineConfig(
        format="tfrecord", decoder="tensorflow/decode-image", augment="tensorflow"
    ),
    # the segmentation recipe in TensorFlow ops, from the pairs' files and from TFRecord
    "tensorflow-segmentation": PipelineConfig(
        decoder="tensorflow/decode-image",
        augment="tensorflow",
        recipe="segmentation",
        task="segmentation",
    ),
    "tensorflow-segmentation-tfrecord": PipelineConfig(
        format="tfrecord",
        decoder="tensorflow/decode-image",
        augment="tensorflow",
        recipe="segmentation",
        task="segmentation",
    ),
    # MXNet's ImageRecordIter over the .rec it packs (its own format): MXNet's decode and recipe
    "mxnet-recordio": PipelineConfig(format="recordio", decoder="mxnet/imdecode", augment="mxnet"),
    # from the session's S3 bucket (the local build uploaded; LoaderPlan.s3_pipelines): tar
    # shards, one ranged GET per sample at its index offset (as wids reads shards over HTTP),
    # and one object per image, one GET per sample
    "s3-tar": PipelineConfig(format="tar", storage="s3"),
    "s3-objects": PipelineConfig(format="folder", storage="s3"),
    # tasks beyond classification (imgbench.augment.tasks): image + mask pairs through the
    # segmentation recipe, and seed 000's fixed crop with four one-hot label heads
    "segmentation": PipelineConfig(recipe="segmentation", task="segmentation"),
    "segmentation-torchvision": PipelineConfig(
        augment="torchvision/v2-tensor", recipe="segmentation", task="segmentation"
    ),
    "crop-ocr": PipelineConfig(recipe="crop-ocr", task="crop-ocr"),
    # the in-RAM ceilings (imgbench.loaders.in_ram): the default pipeline with its pool's
    # encoded bytes in RAM (nothing left to read), and decoded (nothing left to read or decode)
    "ram-bytes": PipelineConfig(preload="bytes"),
    "ram-decoded": PipelineConfig(preload="decoded"),
    # segmentation and crop-ocr in Pillow, as a Keras DataGenerator and seed 000's Sequence do
    # them (the Keras loader's: the tensorflow env has Pillow, not OpenCV or torch)
    "pillow-segmentation": PipelineConfig(
        decoder="pillow/open-convert",
        augment="pillow/pil",
        recipe="segmentation",
        task="segmentation",
    ),
    "pillow-crop-ocr": PipelineConfig(
        decoder="pillow/open-convert", augment="pillow/pil", recipe="crop-ocr", task="crop-ocr"
    ),
    # crop-aware decode (imgbench.loaders.crop_decode, docs/loaders.md "Crop-aware decode"): the
    # recipe's crop window drawn from the header, then only the window decoded (roi), the image
    # at libjpeg's 1/2, 1/4 or 1/8 where the window keeps 224 px (reduced), or both; the rest of
    # the recipe in albumentations. In no profile's plan; their full-decode counterparts are
    # "turbojpeg", "pillow", "default" (OpenCV) and "nvimgcodec"
    "turbojpeg": PipelineConfig(decoder="pyturbojpeg/decode-rgb"),
    "turbojpeg-roi": PipelineConfig(decoder="pyturbojpeg/decode-rgb", crop_decode="roi"),
    "turbojpeg-reduced": PipelineConfig(decoder="pyturbojpeg/decode-rgb", crop_decode="reduced"),
    "turbojpeg-roi-reduced": PipelineConfig(
        decoder="pyturbojpeg/decode-rgb", crop_decode="roi-reduced"
    ),
    "pillow-reduced": PipelineConfig(decoder="pillow/open-convert", crop_decode="reduced"),
    "opencv-reduced": PipelineConfig(decoder="opencv/imdecode-rgb", crop_decode="reduced"),
    "nvimgcodec": PipelineConfig(decoder="nvimgcodec/cpu"),
    "nvimgcodec-roi": PipelineConfig(decoder="nvimgcodec/cpu", crop_decode="roi"),
}


@dataclass(frozen=True, kw_only=True)
class LoaderSpec(LibrarySpec):
    """A loader registry entry: its module, its kind of workers, and the rows it runs.

    ``sweep``: "workers" runs the plan's worker sweep over its sweep pipelines (and, being the
    reference loader, the plan's knobs, extra pipelines and AU rows); "threads" runs the plan's
    thread sweep over each of ``pipelines``; None runs one row per count in ``workers`` and
    pipeline in ``pipelines``.
    ``experiment`` ("module:function(plan) -> list[Case]") replaces all of that for loaders
    that measure something else (the copy-on-access memory experiment).
    """

    module: str  # module with ``build(pipeline, params)``
    processes: bool  # workers are processes (memory per worker is sampled) or threads
    # formats the loader writes and reads with its own library (it gets the dataset's files):
    # tf.data writes TFRecord with tf.io, whose protos clash with the tfrecord package's
    own_formats: tuple[str, ...] = ()
    # batches per worker in one timed round: 2 covers the bursts of N workers finishing together;
    # a loader that hands over many batches at once (Ray Data) needs longer rounds
    round_batches_per_worker: int = 2
    # seconds a timed round lasts at least (rounds repeat their batches until it does): a loader
    # whose gaps between bursts last a large part of a round needs rounds spanning several gaps
    min_round_s: float = 0.0
    sweep: Literal["workers", "threads"] | None = None
    workers: tuple[int, ...] = (2,)
    pipelines: tuple[str, ...] = ("default",)
    torch_workers: bool = False  # takes the DataLoader's start_method, persistent_workers, ...
    # ways of running the one loader, each a curve of its own: (method, "workers" | "threads"),
    # each over the plan's worker or thread sweep with ``method`` in its parameters (replaces
    # ``workers``); e.g. torchdata's ParallelMapper on threads and on processes
    methods: tuple[tuple[str, Literal["workers", "threads"]], ...] = ()
    # its task pipelines' rows (cases.own_rows): 0 workers, then each method at each of the
    # plan's other task worker counts (a task of ``task_pipelines_at_cores``: one per core);
    # e.g. Keras's use_multiprocessing False and True
    task_methods: tuple[str, ...] = ()
    experiment: str | None = None
    # the system a user picks (the row's ``system`` column; the final and the answer compare
    # the best row of each): several entries can be one system (spdl and spdl-subprocess)
    system: str = ""
    # "module:function(plan) -> list[Case]": the rows built as the system's own authors'
    # example or guide builds it (``configured_as`` = as-documented), beside the same-recipe rows
    as_documented: str | None = None

    @property
    def system_name(self) -> str:
        return self.system or self.library

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


_M = "imgbench.loaders.libs."

LOADERS: tuple[LoaderSpec, ...] = (
    LoaderSpec(
        library="torch-dataloader",
        system="DataLoader",
        module=_M + "torch_dataloader",
        requires=("torch",),
        dist="torch",
        processes=True,
        sweep="workers",
        torch_workers=True,
        quick=True,
        as_documented=_M + "torch_dataloader:documented_cases",
    ),
    LoaderSpec(
        library="threadpool",
        system="thread pool",
        module=_M + "threads",
        requires=("torch",),
        processes=False,
        sweep="threads",
        note="multiprocessing.pool.ThreadPool, one batch per task",
        quick=True,
    ),
    LoaderSpec(
        library="queue-feeder",
        system="queue feeder",
        module=_M + "queue_feeder",
        requires=("torch",),
        processes=False,
        note="threads put samples on a bounded queue.Queue; the main thread collates",
    ),
    LoaderSpec(
        library="prefetch-generator",
        system="DataLoaderX",
        module=_M + "prefetch",
        requires=("torch", "prefetch_generator"),
        dist="prefetch_generator",
        processes=True,
        torch_workers=True,
        methods=(("dataloaderx", "workers"),),
        note="DataLoaderX: BackgroundGenerator(DataLoader.__iter__()), one thread over the workers",
    ),
    LoaderSpec(
        library="torchdata-nodes",
        system="torchdata.nodes",
        module=_M + "torchdata_nodes",
        requires=("torch", "torchdata.nodes"),
        dist="torchdata",
        processes=False,  # its process rows report their worker pids all the same
        methods=(("thread", "threads"), ("process", "workers")),
        note="torchdata.nodes: ParallelMapper > Batcher > collate > Prefetcher > Loader",
        as_documented=_M + "torchdata_nodes:documented_cases",
    ),
    LoaderSpec(
        library="sharded-iterable",
        system="DataLoader",
        module=_M + "sharded_iterable",
        requires=("torch",),
        dist="torch",
        processes=True,
        workers=(0, 2),
        torch_workers=True,
        note="IterableDataset: worker k streams samples k, k+n, ... of each pass",
    ),
    LoaderSpec(
        library="spdl",
        system="SPDL",
        module=_M + "spdl",
        requires=("spdl.pipeline", "torch"),
        dist="spdl-core",
        processes=False,
        sweep="threads",
        pipelines=("default", "spdl-io"),
        note="spdl.pipeline.PipelineBuilder: pipe(sample, concurrency=N), build(num_threads=N)",
        as_documented=_M + "spdl:documented_cases",
    ),
    LoaderSpec(
        library="spdl-subprocess",
        system="SPDL",
        module=_M + "spdl_subprocess",
        requires=("spdl.pipeline", "torch"),
        dist="spdl-core",
        processes=False,
        workers=(2,),
        pipelines=("default", "spdl-io"),
        note="the same pipeline through spdl's run_pipeline_in_subprocess: one process, N threads",
    ),
    LoaderSpec(
        library="ray-data",
        system="Ray Data",
        module=_M + "ray_data",
        requires=("ray.data", "torch"),
        dist="ray",
        processes=True,
        note="ray.data on a local cluster (num_cpus = cores); the row that scales past one machine",
        default=False,  # ray.init and its batches take a minute a case: in `full`, or by name
        round_batches_per_worker=8,  # it delivers 4-8 batches at once, then waits
        # 0.4-0.6 s gaps between its bursts here: rounds of 16 batches took 0.16-1.73 s in one
        # case, and their median read 2.9x the rate it sustained (a CI run)
        min_round_s=3.0,
    ),
    LoaderSpec(
        library="tf-data",
        system="tf.data",
        module=_M + "tfdata",
        requires=("tensorflow",),
        dist="tensorflow-cpu",
        processes=False,
        environment="tensorflow",
        workers=(0,),
        # the task pipelines run where the plan runs their task (cases.own_rows)
        pipelines=(
            "tensorflow",
            "tensorflow-tfrecord",
            "tensorflow-segmentation",
            "tensorflow-segmentation-tfrecord",
        ),
        note="tf.data: map(num_parallel_calls=AUTOTUNE) + prefetch(AUTOTUNE)",
        as_documented=_M + "tfdata:documented_cases",
        own_formats=("tfrecord",),
    ),
    LoaderSpec(
        library="keras-pydataset",
        system="Keras PyDataset",
        module=_M + "keras",
        requires=("tensorflow", "keras"),
        dist="keras",
        processes=True,
        environment="tensorflow",
        pipelines=("pillow-pil", "pillow-segmentation", "pillow-crop-ocr"),
        task_methods=("threads", "processes"),  # use_multiprocessing False, True
        note="keras.utils.PyDataset(workers=N, use_multiprocessing=True)",
    ),
    LoaderSpec(
        library="dali",
        system="DALI",
        module=_M + "dali",
        requires=("nvidia.dali", "torch"),
        dist="nvidia-dali-cuda120",
        processes=False,
        experiment=_M + "dali:plan_cases",
        as_documented=_M + "dali:documented_cases",
        note="NVIDIA DALI pipeline: the train recipe in DALI ops, num_threads swept; CPU here",
    ),
    LoaderSpec(
        library="mxnet-recordio",
        system="MXNet ImageRecordIter",
        module=_M + "mxnet_recordio",
        requires=("mxnet",),
        dist="mxnet",
        processes=False,
        environment="mxnet",
        sweep="threads",  # preprocess_threads
        pipelines=("mxnet-recordio",),
        note="mx.io.ImageRecordIter over a .rec/.idx packed with mx.recordio; preprocess_threads",
        own_formats=("recordio",),
    ),
    LoaderSpec(
        library="gpu",
        module="imgbench.loaders.gpu.cases",
        requires=("torch", "torchvision"),
        dist="torch",
        processes=True,
        experiment="imgbench.loaders.gpu.cases:plan_cases",
        check=cuda_missing,  # `imgbench env`: "no CUDA device" where there is none
        note="after the batch leaves the CPU: H2D copies, nvJPEG, GPU augmentation, a real "
        "training step (docs/gpu.md); skipped rows without CUDA",
    ),
    LoaderSpec(
        library="cow-experiment",
        module="imgbench.loaders.cow",
        requires=("torch", "pyarrow"),
        dist="torch",
        processes=True,
        experiment="imgbench.loaders.cow:plan_cases",
        note="pytorch issue 13246: the dataset index as list / numpy / pyarrow, forked workers",
    ),
)


def loaders() -> tuple[LoaderSpec, ...]:
    """The built-in loaders, then those other packages register (``imgbench.loader``)."""
    return catalog("loader", LOADERS, LoaderSpec)


def get_loader(library: str) -> LoaderSpec:
    return find(loaders(), library, "loader")


def pipeline_config(name: str) -> PipelineConfig:
    try:
        return NAMED_PIPELINES[name]
    except KeyError:
        raise KeyError(f"unknown pipeline {name!r}; known: {sorted(NAMED_PIPELINES)}") from None


# Loaders from the posts that cannot run on this stack: listed by `imgbench env`.
UNAVAILABLE: tuple[tuple[str, str], ...] = (
    (
        "keras.utils.Sequence + fit_generator(workers=N)",
        "fit_generator and Sequence workers were removed in Keras 3; measured as "
        "`keras-pydataset` (PyDataset with workers), their replacement",
    ),
)
