"""Example pipeline 1: torchvision ImageFolder, decoded by Pillow, torchvision transforms.

``decode_repeats`` decodes each image that many times (a decoder made N times slower);
``heavy_augment`` repeats the augmentation's costly part (a heavy augmentation)."""

from __future__ import annotations

from typing import Any

from PIL import Image


def make_dataset(
    root: str, size: int = 96, decode_repeats: int = 1, heavy_augment: bool = False
) -> Any:
    from torchvision import datasets, transforms

    def load(path: str) -> Image.Image:
        for _ in range(decode_repeats - 1):
            with Image.open(path) as extra:
                extra.convert("RGB")
        with open(path, "rb") as handle:
            image = Image.open(handle)
            return image.convert("RGB")

    steps: list[Any] = [transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip()]
    if heavy_augment:
        steps += [transforms.GaussianBlur(9, sigma=(2.0, 3.0))] * 4
        steps += [transforms.ColorJitter(0.4, 0.4, 0.4, 0.1)] * 2
    steps += [transforms.ToTensor()]
    return datasets.ImageFolder(root, transform=transforms.Compose(steps), loader=load)
