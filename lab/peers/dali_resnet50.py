"""DALI as its ResNet-50 training example builds it (NVIDIA/DALI
docs/examples/use_cases/pytorch/resnet50/main.py, ``create_dali_pipeline``), on the CPU:
``fn.readers.file(random_shuffle=True)`` -> ``fn.decoders.image_random_crop`` (only the crop's
window is decoded) -> ``fn.resize(resize_x, resize_y, INTERP_TRIANGULAR)`` -> the recipe's
colour twist -> ``fn.crop_mirror_normalize(mirror=coin_flip)``, read with
``DALIGenericIterator`` as the example reads it.

    .venv/bin/python lab/peers/dali_resnet50.py ROOT --threads 2 --batch 32
"""

from __future__ import annotations

from common import AREA, ASPECT, JITTER, MEAN, SIZE, STD, arguments, image_folder, time_batches
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy


@pipeline_def
def create_dali_pipeline(files: list[str], labels: list[int]):  # type: ignore[no-untyped-def]
    images, labels = fn.readers.file(files=files, labels=labels, random_shuffle=True, name="Reader")
    images = fn.decoders.image_random_crop(
        images,
        device="cpu",
        output_type=types.RGB,
        random_aspect_ratio=list(ASPECT),
        random_area=list(AREA),
        num_attempts=100,
    )
    images = fn.resize(images, resize_x=SIZE, resize_y=SIZE, interp_type=types.INTERP_TRIANGULAR)
    b, c, s, h = JITTER
    images = fn.color_twist(
        images,
        brightness=fn.random.uniform(range=(1 - b, 1 + b)),
        contrast=fn.random.uniform(range=(1 - c, 1 + c)),
        saturation=fn.random.uniform(range=(1 - s, 1 + s)),
        hue=fn.random.uniform(range=(-360 * h, 360 * h)),
    )
    images = fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT,
        output_layout="CHW",
        mean=[255 * m for m in MEAN],
        std=[255 * v for v in STD],
        mirror=fn.random.coin_flip(probability=0.5),
    )
    return images, labels


def endless(loader):  # type: ignore[no-untyped-def]
    while True:
        yield from loader
        loader.reset()


def main() -> None:
    args = arguments()
    files, labels = image_folder(args.root)
    pipe = create_dali_pipeline(
        files=files,
        labels=labels,
        batch_size=args.batch,
        num_threads=args.threads,
        device_id=None,
        seed=0,
    )
    pipe.build()
    loader = DALIGenericIterator(
        [pipe], ["data", "label"], reader_name="Reader", last_batch_policy=LastBatchPolicy.DROP
    )
    time_batches(endless(loader), args, lambda b: int(b[0]["data"].shape[0]))


if __name__ == "__main__":
    main()
