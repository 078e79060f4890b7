"""A Keras ``PyDataset`` with ``workers`` processes, the successor of the posts' ``Sequence`` +
``fit_generator(workers=N, use_multiprocessing=True)`` (both removed in Keras 3).

Runs in the ``tensorflow`` environment. Each ``__getitem__`` loads one batch with imgbench's
pipeline (Pillow decode and Pillow's train recipe: that environment has no OpenCV or torch) and
stacks it with NumPy. Batches come from Keras's own enqueuer, the one ``model.fit`` uses,
through its data adapter (``get_numpy_iterator``), so workers, queue and pickling are Keras's.

``method`` (the task rows): ``threads`` or ``processes`` is ``use_multiprocessing`` False or True
at ``workers``; without one, as the classification row always ran, 2+ workers are processes and
0 or 1 runs ``__getitem__`` inline. crop-ocr's batch is (B x 32 x 128 x 3 float32, B x 4 x classes
one-hot), the heads encoded in ``__getitem__`` with ``keras.utils.to_categorical`` as seed 000's
``Sequence`` does (Keras 3 returns float64; cast to float32, what the DataLoader row ships),
timed apart as the row's ``onehot_ms_per_batch`` (the cast included).
segmentation's is (B x 3 x 224 x 224 float32, B x 224 x 224 int64): Pillow's recipe per sample.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from imgbench.loaders.base import Batch, clock
from imgbench.loaders.pipeline import CROP_OCR, SEGMENTATION, CollateSeconds, SamplePipeline

EPOCH_BATCHES = 64  # long epochs: Keras restarts its workers' queue every epoch


def collate_numpy(
    samples: list[tuple[Any, Any, tuple[float, float, float]]], heads: int = 0, pairs: bool = False
) -> Batch:
    """Stack the samples; ``heads`` classes (crop-ocr): the label heads one-hot, per batch;
    ``pairs`` (segmentation): the samples are (image, mask) and the masks are the labels."""
    start = clock()
    if pairs:
        images = np.stack([np.asarray(s[0][0]) for s in samples])
        labels = np.stack([np.asarray(s[0][1], dtype=np.int64) for s in samples])
    else:
        images = np.stack([np.asarray(s[0]) for s in samples])
        labels = np.asarray([s[1] for s in samples], dtype=np.int64)
    onehot_s = None
    if heads:
        import keras

        begin = clock()
        onehot = [keras.utils.to_categorical(labels[:, k], heads) for k in range(labels.shape[1])]
        labels = np.stack(onehot, axis=1).astype(np.float32)
        onehot_s = clock() - begin
    stage_s = np.asarray([s[2] for s in samples], dtype=np.float64)
    seconds = clock() - start
    return (
        images,
        labels,
        stage_s,
        seconds if onehot_s is None else CollateSeconds.of(seconds, onehot_s),
    )


def _dataset_class() -> type:
    import keras

    class PipelineBatches(keras.utils.PyDataset):
        def __init__(self, pipeline: SamplePipeline, batch_size: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.pipeline = pipeline
            self.batch_size = batch_size
            crop_ocr = pipeline.config.task == CROP_OCR
            self.heads = int(getattr(pipeline.source, "classes", 0)) if crop_ocr else 0
            self.pairs = pipeline.config.task == SEGMENTATION
            self.rng = np.random.default_rng(0)

        def __len__(self) -> int:
            return EPOCH_BATCHES

        def __getitem__(self, index: int) -> dict[str, Any]:  # Keras takes a tuple of 1-3 or a dict
            n = len(self.pipeline)
            rng = np.random.default_rng(index)
            images, labels, stage_s, collate_s = collate_numpy(
                [self.pipeline[int(i)] for i in rng.integers(0, n, self.batch_size)],
                self.heads,
                self.pairs,
            )
            onehot_s = getattr(collate_s, "onehot_s", None)
            return {
                "images": images,
                "labels": labels,
                "stage_s": stage_s,
                "collate_s": float(collate_s or 0.0),
                "onehot_s": -1.0 if onehot_s is None else onehot_s,  # -1: no heads to encode
            }

    return PipelineBatches


class KerasLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        workers = int(params.get("workers") or 0)
        method = params.get("method")
        if method not in (None, "threads", "processes"):
            raise ValueError(f"keras-pydataset runs threads or processes, not {method!r}")
        multiprocessing = workers > 1 if method is None else method == "processes"
        workers = max(1, workers)
        self.dataset = _dataset_class()(
            pipeline,
            int(params["batch_size"]),
            workers=workers,
            use_multiprocessing=multiprocessing,
            max_queue_size=int(params.get("prefetch_factor") or 2) * workers,
        )
        self.pipeline = pipeline
        self._adapter: Any = None

    def batches(self) -> Iterator[Batch]:
        from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

        def endless() -> Iterator[Batch]:
            while True:
                self._adapter = PyDatasetAdapter(self.dataset, shuffle=False)
                for batch in self._adapter.get_numpy_iterator():
                    collate_s, onehot_s = float(batch["collate_s"]), float(batch["onehot_s"])
                    yield (
                        batch["images"],
                        batch["labels"],
                        batch["stage_s"],
                        collate_s if onehot_s < 0 else CollateSeconds.of(collate_s, onehot_s),
                    )
                self._adapter.on_epoch_end()

        return endless()

    def worker_pids(self) -> list[int]:
        return pool_worker_pids()

    def close(self) -> None:
        if self._adapter is not None:
            self._adapter.on_epoch_end()  # stops the enqueuer and its worker pool
            self._adapter = None


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> KerasLoader:
    return KerasLoader(pipeline, params)


def pool_worker_pids() -> list[int]:
    """Keras's multiprocessing pool workers: this process's children running its own command
    line (forked), which tells them from the memory sampler and other helpers."""
    import psutil

    me = psutil.Process().cmdline()
    pids = []
    for child in psutil.Process().children():
        try:  # a pool worker that just ended is a zombie until reaped: not a worker
            if child.cmdline() == me:
                pids.append(child.pid)
        except psutil.NoSuchProcess:  # ZombieProcess included
            continue
    return pids
