"""The exported parts do what imgbench's adapters do: each decoder gives the reader's pixels,
each recipe gives the adapter's output for the same seeds (the code is the adapter's own,
copied), so an exported module runs the work its row measured."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from imgbench.augment.base import make_input
from imgbench.augment.registry import get_library
from imgbench.export.copied import CopyError, copy_all, definition, unqualified
from imgbench.export.decoders import DECODERS, decoder_code, policy_code
from imgbench.export.recipes import TO_INPUT, NoRecipeError, recipe_code
from imgbench.library import missing_module
from imgbench.readers.registry import build_reader, find_spec
from tests.conftest import write_photo_like

PREAMBLE = "import os\nimport sys\nimport numpy as np\nimport torch\n"


def namespace(imports: tuple[str, ...], *code: str) -> dict[str, Any]:
    """The names an exported module's part defines, executed on its own."""
    scope: dict[str, Any] = {}
    exec(PREAMBLE + "\n".join(imports) + "\n" + "\n\n".join(code), scope)
    return scope


@pytest.fixture(scope="module")
def jpeg(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("parts") / "photo.jpg"
    write_photo_like(path, (200, 150), seed=3)
    return path.read_bytes()


@pytest.mark.parametrize("key", sorted(DECODERS))
def test_each_decoder_decodes_as_its_reader(key: str, jpeg: bytes) -> None:
    spec = find_spec(*key.split("/", 1))
    reason = missing_module(spec.library, spec.requires) or (spec.check and spec.check())
    if reason:
        pytest.skip(str(reason))
    if spec.environment != "main":
        pytest.skip(f"{key} runs in the {spec.environment} environment")
    code = decoder_code(key, pil_recipe=False)
    scope = namespace(code.imports, policy_code() if code.policy else "", code.code)
    ours = scope["decode"](jpeg)
    theirs = build_reader(spec).decode(jpeg)
    assert ours.dtype == np.uint8 and ours.flags.c_contiguous
    np.testing.assert_array_equal(ours, theirs)


def test_pillow_hands_its_pil_image_to_a_pil_recipe(jpeg: bytes) -> None:
    from PIL import Image

    code = decoder_code("pillow/open-convert", pil_recipe=True)
    image = namespace(code.imports, code.code)["decode"](jpeg)
    assert isinstance(image, Image.Image) and image.mode == "RGB"
    np.testing.assert_array_equal(
        np.asarray(image), build_reader(find_spec("pillow", "open-convert")).decode(jpeg)
    )


RECIPES = [
    (augment, recipe)
    for augment in (
        "albumentations/numpy",
        "torchvision/v2-tensor",
        "torchvision/v2-pil",
        "pillow/pil",
        "opencv/numpy",
    )
    for recipe in ("train-classification", "train-uint8")
]


def _seed() -> None:
    import torch

    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)


@pytest.mark.parametrize(("augment", "recipe"), RECIPES)
def test_each_recipe_is_the_adapters_for_the_same_seeds(
    augment: str, recipe: str, jpeg: bytes
) -> None:
    image = build_reader(find_spec("opencv", "imdecode-rgb")).decode(jpeg)
    code = recipe_code(augment, recipe)
    scope = namespace(code.imports, code.code, TO_INPUT[code.input])
    _seed()
    ours = [np.asarray(scope["augment"](scope["to_input"](image))) for _ in range(3)]
    library = get_library(augment)
    op = library.pipelines()[recipe]()  # the adapter's recipe, as the loader stage builds it
    _seed()
    theirs = [np.asarray(op.fn(make_input(image, library.pipeline_input))) for _ in range(3)]
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == (3, 224, 224)
        assert a.dtype == (np.uint8 if recipe == "train-uint8" else np.float32)
        np.testing.assert_array_equal(a, b)


def test_what_has_no_template_says_so() -> None:
    with pytest.raises(NoRecipeError, match="kornia/tensor"):
        recipe_code("kornia/tensor", "train-classification")
    with pytest.raises(NoRecipeError, match="recipe 'heavy'"):
        recipe_code("albumentations/numpy", "heavy")
    with pytest.raises(CopyError, match="no 'gone'"):
        definition("imgbench.augment.handmade", "gone")


def test_copied_code_names_the_spec_constants_it_uses() -> None:
    used, code = copy_all([("imgbench.augment.handmade", "rrc_box")])
    assert used == ["RRC_RATIO", "RRC_SCALE"]
    assert "spec." not in code
    assert unqualified("handmade.rrc_box(spec.SIZE)") == "rrc_box(SIZE)"


def test_a_definition_is_found_in_its_module_source(tmp_path: Path) -> None:
    assert definition("imgbench.augment.base", "IMAGENET_MEAN").startswith("IMAGENET_MEAN = ")
