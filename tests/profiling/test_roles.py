"""The role table and how a stack inside ``__getitem__`` gets its part: by what the function
does (Pillow filters transform, Pillow's deferred load decodes), by the call on the user's line
when a C function leaves no frame, and "unattributed" when nothing tells."""

from __future__ import annotations

from pathlib import Path

import PIL
import pytest
import torch

from imgbench.profiling.attribution import classify
from imgbench.profiling.roles import rule_for
from imgbench.profiling.stacks import Frame

PIL_DIR = Path(PIL.__file__).parent
FETCH = Frame(
    "_MapDatasetFetcher.fetch.<locals>.<listcomp>",
    str(Path(torch.__file__).parent / "utils/data/_utils/fetch.py"),
    54,
)


@pytest.mark.parametrize(
    ("module", "function", "role"),
    [
        ("PIL.Image", "open", "decode"),
        ("PIL.Image", "Image.rotate", "augment"),
        ("PIL.Image", "Image.filter", "augment"),
        ("PIL.ImageFile", "ImageFile.load", "decode"),
        ("PIL.JpegImagePlugin", "JpegImageFile.load_read", "decode"),
        ("PIL.ImageOps", "autocontrast", "augment"),
        ("PIL.ImageFilter", "GaussianBlur.filter", "augment"),
        ("torchvision.io.image", "decode_jpeg", "decode"),
        ("torchvision.io.image", "read_file", "read"),
        ("torchvision.transforms.v2._geometry", "RandomRotation.forward", "augment"),
        ("torchvision.datasets.folder", "pil_loader", "decode"),
        ("torchvision.datasets.folder", "DatasetFolder.__getitem__", None),
        ("albumentations.core.composition", "Compose.__call__", "augment"),
        ("kornia.io.io", "load_image", "decode"),
        ("kornia.augmentation._2d.base", "AugmentationBase2D.forward", "augment"),
        ("monai.transforms.io.array", "LoadImage.__call__", "decode"),
        ("pathlib", "Path.read_bytes", "read"),
    ],
)
def test_the_role_of_a_function(module: str, function: str, role: str | None) -> None:
    rule = rule_for(module, function)
    assert rule is not None and rule.role == role, rule


def test_functions_no_rule_knows_have_no_role() -> None:
    assert rule_for("timm.data.dataset", "ImageDataset.__getitem__") is None
    assert rule_for("", "MyDataset.__getitem__") is None


def user_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "my_dataset.py"
    path.write_text("\n".join(["def __getitem__(self, i):", *lines]) + "\n")
    return path


def pil(name: str, file: str) -> Frame:
    return Frame(name, str(PIL_DIR / file), 1)


def test_a_pillow_rotation_of_a_decoded_image_is_augmentation(tmp_path: Path) -> None:
    user = user_file(tmp_path, "    image = self.images[i].rotate(17)")
    stack = (FETCH, Frame("Dataset.__getitem__", str(user), 2), pil("Image.rotate", "Image.py"))
    assert classify((*stack, pil("Image.transform", "Image.py"))) == ("augment", None)


def test_a_rotation_that_loads_a_freshly_opened_image_is_its_decode(tmp_path: Path) -> None:
    user = user_file(tmp_path, "    image = Image.open(self.paths[i]).rotate(17)")
    stack = (FETCH, Frame("Dataset.__getitem__", str(user), 2), pil("Image.rotate", "Image.py"))
    assert classify((*stack, pil("ImageFile.load", "ImageFile.py"))) == ("decode", "PIL")


@pytest.mark.parametrize(
    ("lines", "category"),
    [
        (["    image = Image.open(self.paths[i])", "    return image.convert('RGB')"], "decode"),
        (["    return Image.open(self.paths[i]).convert('RGB')", "    pass"], "decode"),
        (["    image = self.images[i]", "    return image.convert('L')"], "augment"),
    ],
)
def test_convert_right_after_an_open_is_decode(
    tmp_path: Path, lines: list[str], category: str
) -> None:
    user = user_file(tmp_path, *lines)
    line = 3 if "return" in lines[1] else 2
    stack = (FETCH, Frame("Dataset.__getitem__", str(user), line), pil("Image.convert", "Image.py"))
    assert classify(stack)[0] == category


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("    image = cv2.imdecode(self.buffers[i], cv2.IMREAD_COLOR)", ("decode", "cv2")),
        ("    image = cv2.warpAffine(image, m, (w, h))", ("augment", None)),
        ("    image = np.ascontiguousarray(image.transpose(2, 0, 1))", ("augment", None)),
        ("    data = self.handle.read()", ("read", None)),
        ("    pixels = simplejpeg.decode_jpeg(data)", ("decode", "simplejpeg")),
        # two roles on one line, or no known call: not told, never guessed
        ("    image = cv2.cvtColor(cv2.imread(p), cv2.COLOR_BGR2RGB)", ("unattributed", None)),
        ("    label = self.labels[i] * 2 + offset(i)", ("unattributed", None)),
    ],
)
def test_a_c_call_is_told_by_the_users_line(
    tmp_path: Path, line: str, expected: tuple[str, str | None]
) -> None:
    user = user_file(tmp_path, line)
    assert classify((FETCH, Frame("Dataset.__getitem__", str(user), 2))) == expected
