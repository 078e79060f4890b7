"""What a function does in an image pipeline, by (module, function): the one table
``imgbench profile`` attributes samples inside ``__getitem__`` by (docs/profile.md).

A library does more than one thing (Pillow opens and decodes files, and filters and rotates
decoded images), so the role is the function's, not the library's:

- ``decode``: opening, loading or converting an encoded file or buffer (``PIL.Image.open``,
  Pillow's ``ImageFile.load``, ``cv2.imdecode``/``imread``, ``torchvision.io.decode_jpeg``, ...);
- ``augment``: transforming decoded pixels (``Image.filter/rotate/resize/...``, ``ImageOps``,
  ``ImageEnhance``, ``ImageFilter``, OpenCV's geometric and colour functions, every
  albumentations, torchvision.transforms and kornia call, ...);
- ``read``: file and object-store reads;
- ``None``: known, but says nothing about the role (a dataset wrapper): look further in.

``RULES`` holds functions that leave a Python frame; ``CALLS`` the C functions that leave none
(OpenCV, simplejpeg, builtins), recognised by name on the user's own source line. A module
ending in ``*`` matches by prefix (``PIL.*ImagePlugin``); a function ``*`` is every function of
the module; the most specific rule wins (longest module, then a named function over ``*``).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cache

DECODE, AUGMENT, READ = "decode", "augment", "read"
CONVERT = "convert"  # Image.convert: decode right after an open/load, else a colour transform


@dataclass(frozen=True)
class Rule:
    module: str  # dotted, as imported; a trailing or inner ``*`` is a glob
    function: str  # qualname (``Image.rotate``), bare name (``rotate``) or ``*``
    role: str | None
    library: str | None = None  # the decoding library (for the advice), if not the module's
    anywhere: bool = False  # decides wherever it sits in the stack (Pillow's deferred decode)


def _rules(
    module: str, role: str | None, *functions: str, library: str | None = None
) -> list[Rule]:
    return [Rule(module, f, role, library) for f in functions or ("*",)]


RULES: tuple[Rule, ...] = (
    # Pillow: an opened image is decoded on its first pixel access (ImageFile.load), whatever
    # asked for it: a rotate() of a freshly opened image spends its time decoding.
    Rule("PIL.ImageFile", "*", DECODE, "PIL", anywhere=True),
    Rule("PIL.*ImagePlugin", "*", DECODE, "PIL", anywhere=True),
    *_rules("PIL.Image", DECODE, "open", "Image.draft", "Image.verify", library="PIL"),
    Rule("PIL.Image", "Image.convert", CONVERT, "PIL"),
    *_rules("PIL.Image", None, "Image.load", "Image.save", "Image.close", "Image.__exit__"),
    Rule("PIL.Image", "*", AUGMENT),  # every other Image function works on decoded pixels
    *_rules("PIL.ImageOps", AUGMENT),
    *_rules("PIL.ImageEnhance", AUGMENT),
    *_rules("PIL.ImageFilter", AUGMENT),
    *_rules("PIL.ImageChops", AUGMENT),
    *_rules("PIL.ImageMath", AUGMENT),
    *_rules("PIL.ImageDraw", AUGMENT),
    *_rules("pillow_heif", DECODE),
    *_rules("pillow_avif", DECODE),
    # torchvision
    *_rules("torchvision.io", DECODE),
    *_rules("torchvision.io.image", READ, "read_file"),
    *_rules("torchvision.io.image", None, "encode_jpeg", "encode_png", "write_jpeg", "write_png"),
    *_rules("torchvision.transforms", AUGMENT),
    *_rules(
        "torchvision.datasets.folder",
        DECODE,
        "pil_loader",
        "accimage_loader",
        "default_loader",
        library="PIL",
    ),
    *_rules("torchvision.datasets", None),  # DatasetFolder.__getitem__ and friends: look in
    *_rules("torchcodec", DECODE),
    # other decoders
    *_rules("simplejpeg", DECODE),
    *_rules("turbojpeg", DECODE),
    *_rules("turbojpeg", None, "TurboJPEG.encode", "TurboJPEG.__init__"),
    *_rules("jpeg4py", DECODE),
    *_rules("imageio", DECODE),
    *_rules("imageio", None, "imwrite", "imsave", "mimwrite", "volwrite"),
    *_rules("skimage.io", DECODE),
    *_rules("imagecodecs", DECODE),
    *_rules("kornia_rs", DECODE),
    *_rules("tifffile", DECODE),
    *_rules("pyvips.vimage", DECODE, "Image.new_from_file", "Image.new_from_buffer"),
    *_rules("kornia.io", DECODE),
    *_rules("monai.transforms.io", DECODE),
    # augmentation and image-processing libraries: every call transforms
    *_rules("albumentations", AUGMENT),
    *_rules("albucore", AUGMENT),
    *_rules("kornia.augmentation", AUGMENT),
    *_rules("kornia.geometry", AUGMENT),
    *_rules("kornia.enhance", AUGMENT),
    *_rules("kornia.color", AUGMENT),
    *_rules("kornia.filters", AUGMENT),
    *_rules("imgaug", AUGMENT),
    *_rules("augly", AUGMENT),
    *_rules("timm.data.transforms", AUGMENT),
    *_rules("timm.data.transforms_factory", AUGMENT),
    *_rules("timm.data.auto_augment", AUGMENT),
    *_rules("timm.data.random_erasing", AUGMENT),
    *_rules("timm.data.mixup", AUGMENT),
    *_rules("monai.transforms", AUGMENT),
    *_rules("skimage.transform", AUGMENT),
    *_rules("skimage.filters", AUGMENT),
    *_rules("skimage.exposure", AUGMENT),
    *_rules("skimage.color", AUGMENT),
    *_rules("scipy.ndimage", AUGMENT),
    *_rules("torch.nn.functional", AUGMENT, "interpolate", "grid_sample", "affine_grid", "pad"),
    # reads: files and object stores
    *_rules("io", READ),
    *_rules("_pyio", READ),
    *_rules("pathlib", READ, "Path.read_bytes", "Path.read_text", "Path.open", "Path.stat"),
    *_rules("genericpath", READ, "exists", "isfile", "isdir", "getsize"),
    *_rules("shutil", READ),
    *_rules("numpy.lib._npyio_impl", READ, "load", "fromfile"),
    *(
        r
        for module in (
            "fsspec",
            "s3fs",
            "gcsfs",
            "boto3",
            "botocore",
            "s3transfer",
            "urllib3",
            "requests",
            "obstore",
            "lmdb",
            "h5py",
            "tarfile",
            "zipfile",
            "webdataset",
        )
        for r in _rules(module, READ)
    ),
)

# C functions (no Python frame), by the name called on the user's line: (qualifiers, name, role).
# Qualifiers are the usual import names of the module; "" is a builtin or a method of any object.
CALLS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    *(
        (("cv2", "cv"), name, DECODE)
        for name in ("imdecode", "imread", "imreadmulti", "imdecodemulti")
    ),
    *(
        (("cv2", "cv"), name, AUGMENT)
        for name in (
            "resize",
            "warpAffine",
            "warpPerspective",
            "remap",
            "flip",
            "rotate",
            "transpose",
            "cvtColor",
            "GaussianBlur",
            "blur",
            "medianBlur",
            "bilateralFilter",
            "boxFilter",
            "filter2D",
            "sepFilter2D",
            "Sobel",
            "Laplacian",
            "Canny",
            "erode",
            "dilate",
            "morphologyEx",
            "pyrDown",
            "pyrUp",
            "copyMakeBorder",
            "normalize",
            "convertScaleAbs",
            "LUT",
            "equalizeHist",
            "addWeighted",
            "add",
            "subtract",
            "multiply",
            "divide",
            "threshold",
            "split",
            "merge",
            "getRectSubPix",
        )
    ),
    *((("simplejpeg",), name, DECODE) for name in ("decode_jpeg", "decode_jpeg_header")),
    *(
        (("np", "numpy"), name, AUGMENT)
        for name in ("flip", "fliplr", "flipud", "rot90", "transpose", "ascontiguousarray", "clip")
    ),
    *((("np", "numpy"), name, READ) for name in ("fromfile", "load")),
    *((("",), name, AUGMENT) for name in ("transpose", "permute", "astype")),
    *((("",), name, READ) for name in ("open", "read", "readinto", "read_bytes", "get_object")),
    (("os",), "read", READ),
)
CALL = re.compile(r"(?:\b([A-Za-z_]\w*)\s*\.\s*)?\b([A-Za-z_]\w*)\s*\(")
# the libraries a line's decode call names, for the advice
CALL_LIBRARY = {"cv2": "cv2", "cv": "cv2", "simplejpeg": "simplejpeg"}
# module names whose functions are never the builtin or method calls of CALLS' "" entries
MODULE_NAMES = frozenset({"cv2", "cv", "np", "numpy", "Image", "PIL", "torch", "simplejpeg", "os"})
OPENED = re.compile(r"\bImage\.open\(|\.load\(\s*\)|\.draft\(")


def _matches_module(pattern: str, module: str) -> bool:
    if "*" in pattern:
        return fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, pattern + ".*")
    return module == pattern or module.startswith(pattern + ".")


def _matches_function(pattern: str, qualname: str) -> bool:
    if pattern == "*":
        return True
    name = qualname.split(".<locals>")[0]
    return pattern in (name, name.rsplit(".", 1)[-1])


@cache
def rule_for(module: str, qualname: str) -> Rule | None:
    """The most specific rule for a frame of ``module`` running ``qualname`` (py-spy's name)."""
    if not module:
        return None
    found = [
        r
        for r in RULES
        if _matches_module(r.module, module) and _matches_function(r.function, qualname)
    ]
    if not found:
        return None
    return max(found, key=lambda r: (len(r.module.replace("*", "")), r.function != "*"))


def line_calls(text: str) -> list[tuple[str, str]]:
    """(role, library) of each call on a source line that ``CALLS`` knows: ``cv2.imread(`` by
    its module's name, ``f.read(`` or ``open(`` on any object but a known module's."""
    known = []
    for qualifier, name in CALL.findall(text):
        for qualifiers, call, role in CALLS:
            if call != name:
                continue
            if qualifier in qualifiers or ("" in qualifiers and qualifier not in MODULE_NAMES):
                known.append((role, CALL_LIBRARY.get(qualifier, "")))
                break
    return known
