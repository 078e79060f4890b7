"""The recipe of an exported module, in the row's augmentation library: ``prepare()`` builds it
once per process, ``augment(image)`` runs it on the decoder's output (after ``to_input``).

Each library's code is its adapter's own definitions (``imgbench.augment.libs.<library>``, and the
torchvision-style sampling of ``imgbench.augment.handmade`` for the hand-written Pillow and
OpenCV baselines), copied with ``imgbench.export.copied``, so the steps and the constants are
those the rows ran; only the few lines that call them are written here. Recipes: the two the
loader stage runs (``train-classification``, ``train-uint8``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from imgbench.export.copied import copy_all, spec_constants

RECIPES = ("train-classification", "train-uint8")
Input = Literal["hwc-uint8", "pil", "chw-uint8-tensor"]

_BASE = "imgbench.augment.base"
_HANDMADE = "imgbench.augment.handmade"
_IMAGENET = [(_BASE, "IMAGENET_MEAN"), (_BASE, "IMAGENET_STD")]
_CHW = [(_BASE, "chw_float"), (_BASE, "chw_uint8")]


@dataclass(frozen=True)
class RecipeCode:
    imports: tuple[str, ...]
    code: str  # spec constants, copied definitions, ``prepare`` and ``augment``
    input: Input  # what ``augment`` takes
    uint8: bool  # 3xHxW uint8 out (train-uint8), else normalised float32


class NoRecipeError(KeyError):
    """The augmentation library or recipe has no export template; the message says which."""

    def __str__(self) -> str:
        return str(self.args[0])


def _join(parts: list[tuple[str, str]], glue: str) -> str:
    used, code = copy_all(parts)
    constants = spec_constants(used)
    header = "# the recipe's constants, as imgbench.augment.spec defines them\n" + constants
    return f"{header}\n\n\n{code}\n\n\n{glue.strip()}\n"


def _handmade(module: str, names: list[str], uint8: bool) -> str:
    """Pillow or OpenCV by hand: the adapter's pipeline function is the recipe."""
    entry = "_train_uint8_pipeline" if uint8 else "_train_pipeline"
    parts = [
        *_IMAGENET,
        *_CHW,
        (_HANDMADE, "rrc_box"),
        (_HANDMADE, "jitter_plan"),
        *[(module, n) for n in names],
        (module, "_train"),
        (module, entry),
    ]
    glue = f'''
def prepare() -> None:
    """Nothing to build: the recipe is plain functions."""


def augment(image):
    return {entry}(image)
'''
    return _join(parts, glue)


def _albumentations(uint8: bool) -> str:
    module = "imgbench.augment.libs.albumentations"
    names = ["X", "_RENAMED", "_ranges", "SEED", "AREA", "_random_jitter", "_train"]
    parts = [*_IMAGENET, *_CHW, *[(module, n) for n in names]]
    steps = "_train()[:-1]" if uint8 else "_train()"  # train-uint8: no Normalize
    out = "chw_uint8" if uint8 else "chw_float"
    glue = f'''
_COMPOSE = None


def prepare() -> None:
    """Build the Compose once per process, seeded as imgbench seeds it."""
    global _COMPOSE
    if _COMPOSE is None:
        _COMPOSE = A.Compose({steps}, seed=SEED)


def augment(image: np.ndarray) -> np.ndarray:
    prepare()
    return {out}(_COMPOSE(image=image)["image"])
'''
    return _join(parts, glue)


def _torchvision(pil: bool, uint8: bool) -> str:
    module = "imgbench.augment.libs.torchvision"
    parts = [*_IMAGENET, *[(module, n) for n in ("_to_float", "_normalize", "_train_steps")]]
    to_tensor = "v2.ToImage(), " if pil else ""
    to_float = "" if uint8 else "_to_float(), _normalize()"
    glue = f'''
_COMPOSE = None


def prepare() -> None:
    """Build the v2 Compose once per process."""
    global _COMPOSE
    if _COMPOSE is None:
        _COMPOSE = v2.Compose([*_train_steps(), {to_tensor}{to_float}])


def augment(image) -> torch.Tensor:
    prepare()
    return _COMPOSE(image).contiguous()
'''
    return _join(parts, glue)


_PILLOW_NAMES = ["BILINEAR", "_MEAN", "_STD", "hue", "_ADJUST", "color_jitter"]
_PILLOW_NAMES += ["random_resized_crop", "normalize"]
_OPENCV_NAMES = ["_MEAN", "_STD", "resize", "_gray3", "brightness", "contrast", "saturation"]
_OPENCV_NAMES += ["hue", "_ADJUST", "color_jitter", "random_resized_crop", "normalize"]
_TYPING = "from collections.abc import Callable"


def recipe_code(augment: str, recipe: str) -> RecipeCode:
    """The code of ``augment`` (a registry key, ``library/variant``) running ``recipe``."""
    if recipe not in RECIPES:
        raise NoRecipeError(f"recipe {recipe!r}: the export writes {', '.join(RECIPES)}")
    uint8 = recipe == "train-uint8"
    library = augment.split("/")[0]
    if augment in ("albumentations/numpy", "albumentationsx/numpy"):
        imports: tuple[str, ...] = (
            'os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")',
            'os.environ.setdefault("ALBUMENTATIONS_NO_TELEMETRY", "1")',
            "import inspect",
            "import albumentations as A",
            "import cv2",
        )
        return RecipeCode(imports, _albumentations(uint8), "hwc-uint8", uint8)
    if augment in ("torchvision/v2-tensor", "torchvision/v2-pil"):
        pil = augment.endswith("pil")
        imports = ("from torchvision.transforms import v2",) + (
            ("from PIL import Image",) if pil else ()
        )
        code = _torchvision(pil, uint8)
        return RecipeCode(imports, code, "pil" if pil else "chw-uint8-tensor", uint8)
    if library in ("pillow", "pillow-simd") and augment.endswith("/pil"):
        imports = ("import math", "import random", _TYPING, "from PIL import Image, ImageEnhance")
        code = _handmade("imgbench.augment.libs.pillow", _PILLOW_NAMES, uint8)
        return RecipeCode(imports, code, "pil", uint8)
    if augment == "opencv/numpy":
        imports = ("import math", "import random", _TYPING, "import cv2")
        code = _handmade("imgbench.augment.libs.opencv", _OPENCV_NAMES, uint8)
        return RecipeCode(imports, code, "hwc-uint8", uint8)
    raise NoRecipeError(
        f"augmentation {augment!r}: no export template (the export writes albumentations, "
        "AlbumentationsX, torchvision v2, Pillow and OpenCV recipes)"
    )


def dali_recipe() -> str:
    """DALI's graph of the train recipe, the DALI loader's own (``imgbench.loaders.libs.dali``): the
    full decode and random_resized_crop, or the as-documented ROI decode and resize (``DECODE``,
    the row's ``dali_decode``)."""
    dali = "imgbench.loaders.libs.dali"
    names = ["FULL_DECODE", "ROI_DECODE", "_recipe", "_roi_crop", "roi_decode"]
    return _join([*_IMAGENET, *[(dali, n) for n in names]], "")


TO_INPUT: dict[Input, str] = {
    "hwc-uint8": '''
def to_input(image) -> np.ndarray:
    """The decoded HxWx3 uint8 RGB array, as the recipe takes it."""
    return np.ascontiguousarray(image)
''',
    "pil": '''
def to_input(image) -> Image.Image:
    """A PIL image, as the recipe takes it (a Pillow decode already is one)."""
    return image if isinstance(image, Image.Image) else Image.fromarray(image)
''',
    "chw-uint8-tensor": '''
def to_input(image) -> torch.Tensor:
    """The decoded HxWx3 uint8 array as a contiguous 3xHxW uint8 tensor."""
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).contiguous()
''',
}
