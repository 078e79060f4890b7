"""THE cross-library table: what each transform means, and how every library is asked for it.

Read it as a table: ``TRANSFORMS`` defines each transform once (canonical parameters below,
whether it is deterministic with them, and the tolerance its libraries must agree within);
``ROWS`` has one row per (transform, library): the call, the parameters in that library's
spelling, and notes on any difference. ``markdown_table()`` renders it for docs/augment.md.
The adapters read the constants below, so a value is changed in one place.

Tolerances are in grey levels (0..255) of the output, after bringing every output to HxWx3 on
that scale: float [0, 1] outputs are multiplied by 255 and normalised outputs de-normalised.
``max_abs`` bounds every pixel; ``mean_abs`` the mean over the image, for interpolating
transforms whose libraries use different filters or pixel-centre conventions.

Equivalent algorithms are compared: OpenCV's INTER_LINEAR does not antialias on downscale
(FIELD_NOTES: 0.11 ms for 2000->224 against 9.5 ms for INTER_AREA), while torchvision
(``antialias=True``), Pillow (BILINEAR widens its filter on downscale) and Kornia
(``antialias=True``) do. So resizes that shrink use INTER_AREA in OpenCV and albumentations
(``area_for_downscale="image"``). Kornia's RandomResizedCrop and SmallestMaxSize have no
antialias switch: they do less work on downscale, noted in their rows.
"""

from __future__ import annotations

from dataclasses import dataclass

SIZE = 224  # output side of crops and resizes
RESIZE_SHORT = 256  # the light pipeline's shorter-side resize
PAD = 16  # pixels on every side, constant 0
ROTATE_DEG = 30.0  # counter-clockwise, about the image centre, same canvas, bilinear, fill 0
AFFINE_DEG = 15.0
AFFINE_SCALE = 1.1
AFFINE_SHEAR_DEG = 10.0  # along x
PERSPECTIVE_DISTORTION = 0.3  # torchvision's distortion_scale: corners move up to 30% of half-size
RRC_SCALE = (0.08, 1.0)
RRC_RATIO = (3 / 4, 4 / 3)
BRIGHTNESS = 1.3  # multiplicative factors, torchvision/PIL ImageEnhance semantics
CONTRAST = 1.3
SATURATION = 1.3
HUE = 0.1  # fraction of a full turn of hue (36 degrees)
JITTER = (0.4, 0.4, 0.4, 0.1)  # ColorJitter brightness, contrast, saturation, hue ranges
LUMA = (0.299, 0.587, 0.114)  # ITU-R 601-2, as PIL convert("L") and torchvision
BLUR_KERNEL = 5
BLUR_SIGMA = 1.0
MEDIAN_KERNEL = 5
SHARPNESS = 2.0  # PIL ImageEnhance.Sharpness factor
POSTERIZE_BITS = 4
SOLARIZE_THRESHOLD = 128  # values >= threshold are inverted
ERASE_SCALE = (0.02, 0.33)
ERASE_RATIO = (0.3, 3.3)
ELASTIC_ALPHA = 50.0  # torchvision semantics: displacement magnitude in pixels
ELASTIC_SIGMA = 5.0  # smoothness of the displacement field, pixels
JPEG_QUALITY = 50

# Pipelines (pipelines.py): train-classification = RandomResizedCrop(SIZE) + flip(FLIP_P) +
# ColorJitter(JITTER) + Normalize; heavy adds rotation, blur and erasing.
FLIP_P = 0.5
HEAVY_ROTATE_DEG = 15.0  # uniform in [-15, 15]
HEAVY_BLUR_SIGMA = (0.1, 2.0)  # kernel BLUR_KERNEL
HEAVY_ERASE_P = 0.5  # after Normalize, value 0 (the mean)


@dataclass(frozen=True)
class Tolerance:
    """How far a library may be from the reference, in grey levels; None = not bounded."""

    max_abs: float | None = None
    mean_abs: float | None = None

    def __str__(self) -> str:
        parts = []
        if self.max_abs is not None:
            parts.append(f"max {self.max_abs:g}")
        if self.mean_abs is not None:
            parts.append(f"mean {self.mean_abs:g}")
        return ", ".join(parts) or "-"


EXACT = Tolerance(max_abs=0.001)  # identical; float outputs up to float32 rounding
FLOAT = Tolerance(max_abs=0.01)  # float32 rounding only
# integer outputs round or truncate (up to 1 level); float outputs are not rounded at all
ROUNDING = Tolerance(max_abs=1.5)


@dataclass(frozen=True)
class TransformSpec:
    name: str
    meaning: str  # the canonical definition every library is asked for
    deterministic: bool  # with the parameters below; False = checked for shape/dtype/range
    tolerance: Tolerance | None = None  # None for random transforms


@dataclass(frozen=True)
class Row:
    """One transform in one library."""

    transform: str
    library: str  # torchvision rows cover both the v2-tensor and v2-pil variants
    call: str
    parameters: str = ""
    notes: str = ""
    deterministic: bool = True  # False: the library draws something we cannot fix

    @property
    def tolerance(self) -> Tolerance | None:
        spec = TRANSFORM_BY_NAME[self.transform]
        return spec.tolerance if spec.deterministic and self.deterministic else None


TRANSFORMS: tuple[TransformSpec, ...] = (
    TransformSpec("hflip", "mirror left-right", True, EXACT),
    TransformSpec("vflip", "mirror top-bottom", True, EXACT),
    TransformSpec("rotate90", "rotate 90 deg counter-clockwise, HxW becomes WxH", True, EXACT),
    TransformSpec(
        "rotate",
        f"rotate {ROTATE_DEG:g} deg counter-clockwise about the centre, same canvas, bilinear, fill 0",
        True,
        Tolerance(mean_abs=3.0),
    ),
    TransformSpec(
        "affine",
        f"torchvision F.affine: angle {AFFINE_DEG:g}, scale {AFFINE_SCALE:g}, "
        f"x-shear {AFFINE_SHEAR_DEG:g} deg, no translation, bilinear, fill 0",
        True,
        Tolerance(mean_abs=3.0),
    ),
    TransformSpec(
        "perspective", f"random corner displacement up to {PERSPECTIVE_DISTORTION:g}", False
    ),
    TransformSpec(
        "resize",
        f"to {SIZE}x{SIZE} (aspect not kept), antialiased bilinear",
        True,
        Tolerance(mean_abs=2.0),
    ),
    TransformSpec(
        "random_resized_crop",
        f"area {RRC_SCALE}, ratio 3/4..4/3, resized to {SIZE}x{SIZE}",
        False,
    ),
    TransformSpec("center_crop", f"{SIZE}x{SIZE} from the centre (offsets rounded)", True, EXACT),
    TransformSpec("random_crop", f"{SIZE}x{SIZE} at a random place", False),
    TransformSpec("pad", f"{PAD} px of 0 on every side", True, EXACT),
    TransformSpec("brightness", f"multiply by {BRIGHTNESS:g}", True, ROUNDING),
    TransformSpec("contrast", f"blend with the grey mean, factor {CONTRAST:g}", True, ROUNDING),
    TransformSpec(
        "saturation",
        f"blend with the greyscale image, factor {SATURATION:g}",
        True,
        ROUNDING,
    ),
    TransformSpec("hue", f"shift hue by {HUE:g} of a turn", True, Tolerance(mean_abs=2.0)),
    TransformSpec("color_jitter", f"ColorJitter{JITTER}, random order", False),
    TransformSpec("grayscale", "ITU-R 601-2 luma, 3 channels", True, ROUNDING),
    TransformSpec(
        "gaussian_blur",
        f"kernel {BLUR_KERNEL}, sigma {BLUR_SIGMA:g}",
        True,
        Tolerance(mean_abs=1.5),
    ),
    TransformSpec("median_blur", f"kernel {MEDIAN_KERNEL}", True, Tolerance(mean_abs=1.0)),
    TransformSpec(
        "sharpen",
        f"PIL ImageEnhance.Sharpness({SHARPNESS:g}): blend with a 3x3 smoothed copy",
        True,
        Tolerance(mean_abs=1.0),
    ),
    TransformSpec("equalize", "per-channel histogram equalisation", True, Tolerance(mean_abs=2.0)),
    TransformSpec("posterize", f"keep the top {POSTERIZE_BITS} bits", True, EXACT),
    TransformSpec("solarize", f"invert values >= {SOLARIZE_THRESHOLD}", True, EXACT),
    TransformSpec("invert", "255 - x", True, EXACT),
    TransformSpec("normalize", "x / 255, ImageNet mean and std, float32", True, FLOAT),
    TransformSpec("to_tensor", "HxWx3 uint8 to 3xHxW float32 in [0, 1]", True, FLOAT),
    TransformSpec(
        "random_erasing", f"one box of 0, area {ERASE_SCALE}, ratio {ERASE_RATIO}", False
    ),
    TransformSpec(
        "elastic",
        f"smoothed random displacement, alpha {ELASTIC_ALPHA:g} px, sigma {ELASTIC_SIGMA:g}",
        False,
    ),
    TransformSpec(
        "jpeg", f"encode and decode at quality {JPEG_QUALITY}", True, Tolerance(mean_abs=2.0)
    ),
)
TRANSFORM_BY_NAME = {t.name: t for t in TRANSFORMS}

_ALB, _TV, _K, _PIL, _CV = "albumentations", "torchvision", "kornia", "pillow", "opencv"
_AREA = "INTER_AREA on downscale (area_for_downscale='image')"

ROWS: tuple[Row, ...] = (
    Row("hflip", _ALB, "A.HorizontalFlip", "p=1"),
    Row("hflip", _TV, "v2.RandomHorizontalFlip", "p=1"),
    Row("hflip", _K, "K.RandomHorizontalFlip", "p=1"),
    Row("hflip", _PIL, "Image.transpose", "FLIP_LEFT_RIGHT"),
    Row("hflip", _CV, "cv2.flip", "flipCode=1"),
    Row("vflip", _ALB, "A.VerticalFlip", "p=1"),
    Row("vflip", _TV, "v2.RandomVerticalFlip", "p=1"),
    Row("vflip", _K, "K.RandomVerticalFlip", "p=1"),
    Row("vflip", _PIL, "Image.transpose", "FLIP_TOP_BOTTOM"),
    Row("vflip", _CV, "cv2.flip", "flipCode=0"),
    Row(
        "rotate90",
        _ALB,
        "A.RandomRotate90",
        "get_params pinned to factor=1",
        "the stock transform draws k in 0..3 (a quarter of calls are no-ops); pinned to k=1",
    ),
    Row(
        "rotate90",
        _TV,
        "v2.RandomRotation",
        "degrees=(90, 90), expand=True",
        "v2 has no rot90: a general rotation with expand",
    ),
    Row(
        "rotate90",
        _K,
        "K.RandomRotation90",
        "times=(1, 1), p=1",
        "keeps the input HxW: a non-square image is cropped and padded, not transposed",
    ),
    Row("rotate90", _PIL, "Image.transpose", "ROTATE_90"),
    Row("rotate90", _CV, "cv2.rotate", "ROTATE_90_COUNTERCLOCKWISE"),
    Row(
        "rotate",
        _ALB,
        "A.Rotate",
        f"limit=({ROTATE_DEG:g}, {ROTATE_DEG:g}), BORDER_CONSTANT, fill=0",
    ),
    Row(
        "rotate",
        _TV,
        "v2.RandomRotation",
        f"degrees=({ROTATE_DEG:g}, {ROTATE_DEG:g}), BILINEAR, fill=0",
    ),
    Row("rotate", _K, "K.RandomRotation", f"degrees=({ROTATE_DEG:g}, {ROTATE_DEG:g}), p=1"),
    Row("rotate", _PIL, "Image.rotate", f"{ROTATE_DEG:g}, BILINEAR, fillcolor=0"),
    Row(
        "rotate",
        _CV,
        "cv2.getRotationMatrix2D + cv2.warpAffine",
        f"centre ((w-1)/2, (h-1)/2), {ROTATE_DEG:g}, INTER_LINEAR",
    ),
    Row(
        "affine",
        _ALB,
        "A.Affine",
        f"rotate=-{AFFINE_DEG:g}, scale={AFFINE_SCALE:g}, shear x={AFFINE_SHEAR_DEG:g}, fill=0",
        "rotate has the opposite sign to torchvision's F.affine (mapped here); rotation and "
        "shear compose in another order, so the image still differs",
    ),
    Row(
        "affine",
        _TV,
        "v2.RandomAffine",
        f"degrees=({AFFINE_DEG:g},)*2, scale=({AFFINE_SCALE:g},)*2, shear=({AFFINE_SHEAR_DEG:g}, {AFFINE_SHEAR_DEG:g}, 0, 0), BILINEAR",
    ),
    Row(
        "affine",
        _K,
        "K.RandomAffine",
        f"degrees=({AFFINE_DEG:g},)*2, scale=({AFFINE_SCALE:g},)*2, shear=({AFFINE_SHEAR_DEG:g}, {AFFINE_SHEAR_DEG:g}, 0, 0)",
    ),
    Row(
        "affine",
        _PIL,
        "Image.transform(AFFINE)",
        "torchvision's inverse matrix, centre (w/2, h/2), BILINEAR",
    ),
    Row(
        "affine",
        _CV,
        "cv2.warpAffine(WARP_INVERSE_MAP)",
        "torchvision's inverse matrix, centre ((w-1)/2, (h-1)/2)",
    ),
    Row(
        "perspective",
        _ALB,
        "A.Perspective",
        f"scale=(0, {PERSPECTIVE_DISTORTION / 2:g})",
        "albumentations moves corners by a normal draw with this sigma, not a uniform one",
        False,
    ),
    Row(
        "perspective",
        _TV,
        "v2.RandomPerspective",
        f"distortion_scale={PERSPECTIVE_DISTORTION:g}, p=1",
        deterministic=False,
    ),
    Row(
        "perspective",
        _K,
        "K.RandomPerspective",
        f"distortion_scale={PERSPECTIVE_DISTORTION:g}, p=1",
        deterministic=False,
    ),
    Row(
        "perspective",
        _PIL,
        "Image.transform(PERSPECTIVE)",
        "torchvision's corner sampling",
        deterministic=False,
    ),
    Row(
        "perspective",
        _CV,
        "cv2.getPerspectiveTransform + cv2.warpPerspective",
        "torchvision's corner sampling",
        deterministic=False,
    ),
    Row("resize", _ALB, "A.Resize", f"{SIZE}, {SIZE}, {_AREA}"),
    Row(
        "resize",
        _TV,
        "v2.Resize",
        f"({SIZE}, {SIZE}), BILINEAR, antialias=True",
        "tensor: antialiased bilinear written to match PIL; PIL input: Image.resize",
    ),
    Row(
        "resize",
        _K,
        "K.Resize",
        f"({SIZE}, {SIZE}), antialias=True",
        "antialias = Gaussian pre-blur, then bilinear",
    ),
    Row(
        "resize",
        _PIL,
        "Image.resize",
        f"({SIZE}, {SIZE}), BILINEAR",
        "filter support widened on downscale",
    ),
    Row(
        "resize",
        _CV,
        "cv2.resize",
        "INTER_AREA (box average) on downscale, INTER_LINEAR on upscale",
    ),
    Row(
        "random_resized_crop",
        _ALB,
        "A.RandomResizedCrop",
        f"size=({SIZE}, {SIZE}), {_AREA}",
        deterministic=False,
    ),
    Row(
        "random_resized_crop",
        _TV,
        "v2.RandomResizedCrop",
        f"{SIZE}, antialias=True",
        deterministic=False,
    ),
    Row(
        "random_resized_crop",
        _K,
        "K.RandomResizedCrop",
        f"({SIZE}, {SIZE})",
        "no antialias option: bilinear without antialiasing on downscale",
        False,
    ),
    Row(
        "random_resized_crop",
        _PIL,
        "Image.resize(box=...)",
        "torchvision's sampling, BILINEAR",
        deterministic=False,
    ),
    Row(
        "random_resized_crop",
        _CV,
        "slice + cv2.resize",
        "torchvision's sampling, INTER_AREA",
        deterministic=False,
    ),
    Row("center_crop", _ALB, "A.CenterCrop", f"{SIZE}, {SIZE}"),
    Row("center_crop", _TV, "v2.CenterCrop", f"{SIZE}"),
    Row("center_crop", _K, "K.CenterCrop", f"{SIZE}"),
    Row("center_crop", _PIL, "Image.crop", "torchvision's rounding of the offsets"),
    Row("center_crop", _CV, "numpy slice", "torchvision's rounding of the offsets"),
    Row("random_crop", _ALB, "A.RandomCrop", f"{SIZE}, {SIZE}", deterministic=False),
    Row("random_crop", _TV, "v2.RandomCrop", f"{SIZE}", deterministic=False),
    Row("random_crop", _K, "K.RandomCrop", f"({SIZE}, {SIZE})", deterministic=False),
    Row("random_crop", _PIL, "Image.crop", "random offsets", deterministic=False),
    Row("random_crop", _CV, "numpy slice", "random offsets", deterministic=False),
    Row("pad", _ALB, "A.Pad", f"padding={PAD}, fill=0"),
    Row("pad", _TV, "v2.Pad", f"{PAD}, fill=0"),
    Row("pad", _PIL, "ImageOps.expand", f"border={PAD}, fill=0"),
    Row("pad", _CV, "cv2.copyMakeBorder", f"{PAD} x4, BORDER_CONSTANT 0"),
    Row(
        "brightness",
        _ALB,
        "A.ColorJitter",
        f"brightness=({BRIGHTNESS:g}, {BRIGHTNESS:g}), others identity",
        "A.RandomBrightnessContrast is additive, a different transform",
    ),
    Row("brightness", _TV, "v2.ColorJitter", f"brightness=({BRIGHTNESS:g}, {BRIGHTNESS:g})"),
    Row("brightness", _K, "K.ColorJitter", f"brightness=({BRIGHTNESS:g}, {BRIGHTNESS:g})"),
    Row("brightness", _PIL, "ImageEnhance.Brightness", f"{BRIGHTNESS:g}"),
    Row("brightness", _CV, "cv2.convertScaleAbs", f"alpha={BRIGHTNESS:g}"),
    Row("contrast", _ALB, "A.ColorJitter", f"contrast=({CONTRAST:g}, {CONTRAST:g})"),
    Row("contrast", _TV, "v2.ColorJitter", f"contrast=({CONTRAST:g}, {CONTRAST:g})"),
    Row("contrast", _K, "K.ColorJitter", f"contrast=({CONTRAST:g}, {CONTRAST:g})"),
    Row("contrast", _PIL, "ImageEnhance.Contrast", f"{CONTRAST:g}"),
    Row("contrast", _CV, "cv2.addWeighted", "gamma=(1-f)*mean of the RGB2GRAY image"),
    Row("saturation", _ALB, "A.ColorJitter", f"saturation=({SATURATION:g}, {SATURATION:g})"),
    Row("saturation", _TV, "v2.ColorJitter", f"saturation=({SATURATION:g}, {SATURATION:g})"),
    Row("saturation", _K, "K.ColorJitter", f"saturation=({SATURATION:g}, {SATURATION:g})"),
    Row("saturation", _PIL, "ImageEnhance.Color", f"{SATURATION:g}"),
    Row("saturation", _CV, "cv2.addWeighted", "with the RGB2GRAY image"),
    Row("hue", _ALB, "A.ColorJitter", f"hue=({HUE:g}, {HUE:g})", "8-bit OpenCV HSV"),
    Row(
        "hue",
        _TV,
        "v2.ColorJitter",
        f"hue=({HUE:g}, {HUE:g})",
        "tensor: float HSV; PIL: 8-bit PIL HSV",
    ),
    Row("hue", _K, "K.ColorJitter", f"hue=({HUE:g}, {HUE:g})", "float HSV"),
    Row(
        "hue",
        _PIL,
        "convert('HSV') + point",
        f"+int({HUE:g}*255) on H, as torchvision's PIL backend",
    ),
    Row("hue", _CV, "cv2.cvtColor(RGB2HSV_FULL) + add", "8-bit hue wraps"),
    Row("color_jitter", _ALB, "A.ColorJitter", f"{JITTER}, p=1", deterministic=False),
    Row("color_jitter", _TV, "v2.ColorJitter", f"{JITTER}", deterministic=False),
    Row("color_jitter", _K, "K.ColorJitter", f"{JITTER}, p=1", deterministic=False),
    Row(
        "color_jitter",
        _PIL,
        "ImageEnhance x3 + HSV hue",
        "random factors, random order",
        deterministic=False,
    ),
    Row(
        "color_jitter", _CV, "cv2 ops as above", "random factors, random order", deterministic=False
    ),
    Row("grayscale", _ALB, "A.ToGray", "num_output_channels=3, method='weighted_average'"),
    Row("grayscale", _TV, "v2.Grayscale", "num_output_channels=3"),
    Row("grayscale", _K, "K.RandomGrayscale", "p=1"),
    Row("grayscale", _PIL, "convert('L').convert('RGB')"),
    Row("grayscale", _CV, "cv2.cvtColor RGB2GRAY, GRAY2RGB"),
    Row(
        "gaussian_blur",
        _ALB,
        "A.GaussianBlur",
        f"blur_limit=({BLUR_KERNEL},)*2, sigma_limit=({BLUR_SIGMA:g},)*2",
    ),
    Row("gaussian_blur", _TV, "v2.GaussianBlur", f"{BLUR_KERNEL}, sigma=({BLUR_SIGMA:g},)*2"),
    Row(
        "gaussian_blur", _K, "K.RandomGaussianBlur", f"({BLUR_KERNEL},)*2, ({BLUR_SIGMA:g},)*2, p=1"
    ),
    Row(
        "gaussian_blur",
        _PIL,
        "ImageFilter.GaussianBlur",
        f"radius={BLUR_SIGMA:g}",
        "approximated by box blurs; no kernel size",
    ),
    Row("gaussian_blur", _CV, "cv2.GaussianBlur", f"({BLUR_KERNEL},)*2, {BLUR_SIGMA:g}"),
    Row("median_blur", _ALB, "A.MedianBlur", f"blur_limit=({MEDIAN_KERNEL},)*2"),
    Row(
        "median_blur",
        _K,
        "K.RandomMedianBlur",
        f"({MEDIAN_KERNEL},)*2, p=1",
        "zero padding at the border",
    ),
    Row("median_blur", _PIL, "ImageFilter.MedianFilter", f"{MEDIAN_KERNEL}"),
    Row("median_blur", _CV, "cv2.medianBlur", f"{MEDIAN_KERNEL}"),
    Row(
        "sharpen",
        _ALB,
        "A.Sharpen",
        "alpha=(0.5, 0.5), lightness=(1, 1)",
        "a different definition (Laplacian-style kernel): closest setting, not the same transform",
    ),
    Row("sharpen", _TV, "v2.RandomAdjustSharpness", f"{SHARPNESS:g}, p=1"),
    Row("sharpen", _K, "K.RandomSharpness", f"sharpness=({SHARPNESS:g},)*2, p=1"),
    Row("sharpen", _PIL, "ImageEnhance.Sharpness", f"{SHARPNESS:g}"),
    Row("sharpen", _CV, "cv2.filter2D + cv2.addWeighted", "PIL's SMOOTH kernel, border unchanged"),
    Row("equalize", _ALB, "A.Equalize", "mode='pil', by_channels=True"),
    Row("equalize", _TV, "v2.RandomEqualize", "p=1"),
    Row("equalize", _K, "K.RandomEqualize", "p=1"),
    Row("equalize", _PIL, "ImageOps.equalize"),
    Row("equalize", _CV, "cv2.equalizeHist per channel", notes="OpenCV's own CDF mapping"),
    Row("posterize", _ALB, "A.Posterize", f"num_bits={POSTERIZE_BITS}"),
    Row("posterize", _TV, "v2.RandomPosterize", f"{POSTERIZE_BITS}, p=1"),
    Row("posterize", _K, "K.RandomPosterize", f"bits=({POSTERIZE_BITS},)*2, p=1"),
    Row("posterize", _PIL, "ImageOps.posterize", f"{POSTERIZE_BITS}"),
    Row("posterize", _CV, "cv2.LUT", "x & 0xF0"),
    Row("solarize", _ALB, "A.Solarize", f"threshold_range=({SOLARIZE_THRESHOLD}/255,)*2"),
    Row("solarize", _TV, "v2.RandomSolarize", f"{SOLARIZE_THRESHOLD}, p=1"),
    Row("solarize", _K, "K.RandomSolarize", "thresholds=0.0 (= 0.5), additions=0.0, p=1"),
    Row("solarize", _PIL, "ImageOps.solarize", f"{SOLARIZE_THRESHOLD}"),
    Row("solarize", _CV, "cv2.LUT"),
    Row("invert", _ALB, "A.InvertImg", "p=1"),
    Row("invert", _TV, "v2.RandomInvert", "p=1"),
    Row("invert", _K, "K.RandomInvert", "p=1"),
    Row("invert", _PIL, "ImageOps.invert"),
    Row("invert", _CV, "cv2.bitwise_not"),
    Row(
        "normalize",
        _ALB,
        "A.Normalize",
        "ImageNet mean/std, max_pixel_value=255",
        "HxWx3 float32 out",
    ),
    Row(
        "normalize",
        _TV,
        "v2.ToDtype(float32, scale=True) + v2.Normalize",
        "ImageNet mean/std",
        "PIL input: v2.PILToTensor first",
    ),
    Row("normalize", _K, "K.Normalize", "ImageNet mean/std", "input already float in [0, 1]"),
    Row(
        "normalize",
        _PIL,
        "np.asarray(float32) + numpy",
        "ImageNet mean/std",
        "Pillow has no normalise",
    ),
    Row("normalize", _CV, "numpy", "ImageNet mean/std"),
    Row("to_tensor", _ALB, "numpy transpose + astype", "", "what A.ToTensorV2 does, without torch"),
    Row(
        "to_tensor",
        _TV,
        "v2.ToImage + v2.ToDtype(float32, scale=True)",
        "from the decoded array or PIL image",
    ),
    Row("to_tensor", _K, "kornia.image_to_tensor + float / 255"),
    Row("to_tensor", _PIL, "np.asarray(float32) / 255 + transpose"),
    Row("to_tensor", _CV, "numpy transpose + astype"),
    Row(
        "random_erasing",
        _ALB,
        "A.Erasing",
        f"scale={ERASE_SCALE}, ratio={ERASE_RATIO}, fill=0, p=1",
        deterministic=False,
    ),
    Row(
        "random_erasing",
        _TV,
        "v2.RandomErasing",
        f"p=1, scale={ERASE_SCALE}, ratio={ERASE_RATIO}, value=0",
        "no PIL kernel: PIL input goes through PILToTensor",
        False,
    ),
    Row(
        "random_erasing",
        _K,
        "K.RandomErasing",
        f"scale={ERASE_SCALE}, ratio={ERASE_RATIO}, value=0, p=1",
        deterministic=False,
    ),
    Row("random_erasing", _PIL, "Image.paste", "torchvision's box sampling", deterministic=False),
    Row(
        "random_erasing",
        _CV,
        "numpy slice assignment",
        "torchvision's box sampling",
        deterministic=False,
    ),
    Row(
        "elastic",
        _ALB,
        "A.ElasticTransform",
        f"alpha={ELASTIC_ALPHA:g}, sigma={ELASTIC_SIGMA:g}",
        "albumentations' alpha/sigma have their own scale",
        False,
    ),
    Row(
        "elastic",
        _TV,
        "v2.ElasticTransform",
        f"alpha={ELASTIC_ALPHA:g}, sigma={ELASTIC_SIGMA:g}",
        deterministic=False,
    ),
    Row(
        "elastic",
        _K,
        "K.RandomElasticTransform",
        f"kernel_size=(41, 41), sigma=({ELASTIC_SIGMA:g},)*2, alpha=(1, 1)",
        "alpha in normalised grid units",
        False,
    ),
    Row(
        "elastic",
        _CV,
        "cv2.GaussianBlur of noise + cv2.remap",
        "torchvision's definition",
        deterministic=False,
    ),
    Row("jpeg", _ALB, "A.ImageCompression", f"quality_range=({JPEG_QUALITY},)*2"),
    Row(
        "jpeg",
        _TV,
        "v2.JPEG",
        f"quality={JPEG_QUALITY}",
        "libjpeg via torchvision.io; PIL input: Pillow",
    ),
    Row(
        "jpeg",
        _K,
        "K.RandomJPEG",
        f"jpeg_quality=({JPEG_QUALITY},)*2",
        "a differentiable JPEG approximation in torch, not libjpeg",
    ),
    Row("jpeg", _PIL, "Image.save(JPEG) + Image.open", f"quality={JPEG_QUALITY}"),
    Row(
        "jpeg", _CV, "cv2.imencode + cv2.imdecode", f"IMWRITE_JPEG_QUALITY={JPEG_QUALITY}, via BGR"
    ),
)


def rows_for(transform: str) -> list[Row]:
    return [r for r in ROWS if r.transform == transform]


def row(transform: str, library: str) -> Row | None:
    return next((r for r in ROWS if r.transform == transform and r.library == library), None)


def markdown_table() -> str:
    """The table as Markdown, one line per (transform, library), for docs/augment.md."""
    lines = [
        "| transform | library | call | parameters | deterministic | tolerance | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in ROWS:
        tol = r.tolerance
        cells = [
            r.transform,
            r.library,
            f"`{r.call}`",
            r.parameters.replace("|", "\\|"),
            "yes" if r.tolerance is not None else "no",
            str(tol) if tol is not None else "shape/dtype/range",
            r.notes.replace("|", "\\|"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Disagreements found on the verification photos with the versions in FIELD_NOTES (albumentations
# 2.0.8, torchvision 0.29.1, kornia 0.9.0, Pillow 13, OpenCV 5.0). Rows are flagged by measurement,
# not by this list; tests/augment checks the list still matches what is measured, so a library
# release that fixes or breaks something shows up.
KNOWN_DISAGREEMENTS: dict[tuple[str, str], str] = {
    ("rotate90", "kornia/tensor"): "RandomRotation90 keeps HxW: non-square images are cropped",
    ("affine", "albumentations/numpy"): "rotation and shear compose in another order",
    ("resize", "kornia/tensor"): "antialias is a Gaussian pre-blur: softer than PIL's filter",
    ("center_crop", "albumentations/numpy"): "floors an odd margin; torchvision rounds: 1 px shift",
    ("center_crop", "kornia/tensor"): "floors an odd margin; torchvision rounds: 1 px shift",
    ("sharpen", "albumentations/numpy"): "A.Sharpen is another definition (kernel, not PIL blend)",
    ("equalize", "albumentations/numpy"): "mode='pil' still maps the histogram differently",
    ("equalize", "opencv/numpy"): "cv2.equalizeHist's CDF mapping differs from PIL's",
    ("jpeg", "albumentations/numpy"): "encodes RGB arrays as if BGR (same as cv2.imencode on RGB)",
    ("light", "albumentations/numpy"): "INTER_AREA resize plus the floored centre crop",
    ("light", "kornia/tensor"): "SmallestMaxSize without antialias plus the floored centre crop",
    # AlbumentationsX 2.5.1 (its own env): the same findings as albumentations 2.0.8, except
    # equalize, whose mode='pil' now maps the histogram as PIL does
    ("affine", "albumentationsx/numpy"): "rotation and shear compose in another order",
    ("center_crop", "albumentationsx/numpy"): "floors an odd margin; torchvision rounds: 1 px",
    ("sharpen", "albumentationsx/numpy"): "A.Sharpen is another definition (kernel, not PIL blend)",
    ("jpeg", "albumentationsx/numpy"): "encodes RGB arrays as if BGR (same as cv2.imencode on RGB)",
    ("light", "albumentationsx/numpy"): "INTER_AREA resize plus the floored centre crop",
}
