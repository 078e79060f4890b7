"""The decoder of an exported module: ``decode(data: bytes)`` as the row's reader calls it.

One entry per readers-registry key (``library/variant``) of a full-size decode: the same call,
flags and colour handling as imgbench's adapter (``imgbench.readers.libs.<library>``), returning a
C-contiguous HxWx3 uint8 RGB array. The pixel policy's ``to_rgb8`` (16-bit, gray, alpha) is
copied from ``imgbench.readers.pixels`` where the adapter uses it. Pillow is the exception
when the recipe takes PIL images: it hands the PIL image on (``Image.open(...).convert("RGB")``,
as ``torchvision.datasets.ImageFolder`` does), with no NumPy round trip.
tests/export/test_parts.py checks every entry decodes as its adapter does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from imgbench.export.copied import definition


@dataclass(frozen=True)
class DecoderCode:
    imports: tuple[str, ...]
    code: str  # defines ``decode(data: bytes)``
    policy: bool = False  # uses ``to_rgb8`` (copied from imgbench.readers.pixels)
    torch_hwc: bool = False  # uses ``_tensor``/``_hwc`` (from imgbench.readers.libs.torchvision)


_PILLOW = DecoderCode(
    ("import io", "from PIL import Image"),
    '''
def decode(data: bytes) -> np.ndarray:
    """Pillow: Image.open, then RGB (an RGB JPEG as it is, other modes converted)."""
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image if image.mode == "RGB" else image.convert("RGB"))
''',
)
PILLOW_NATIVE = DecoderCode(
    ("import io", "from PIL import Image"),
    '''
def decode(data: bytes) -> Image.Image:
    """Pillow: Image.open(...).convert("RGB"), the PIL image handed to the recipe as it is
    (what torchvision.datasets.ImageFolder's loader does)."""
    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB")
''',
)
# the torch family's bytes -> tensor and CHW -> HWC, copied from imgbench's adapter when the
# module is written (decoder_code); the warning filter is the adapter's module-level call
_TORCH_WARNINGS = """
# bytes are read-only: torch warns that it cannot write to them, and it never does
warnings.filterwarnings("ignore", message="The given buffer is not writable", category=UserWarning)
"""


def _torch_family(import_line: str, doc: str, call: str) -> DecoderCode:
    """A torchvision/torchcodec decode: ``call`` on ``_tensor(data)``, through ``_hwc``."""
    code = f'''

def decode(data: bytes) -> np.ndarray:
    """{doc}, CHW to a contiguous HWC array."""
    return _hwc({call})
'''
    return DecoderCode(("import warnings", import_line), code, policy=True, torch_hwc=True)


DECODERS: dict[str, DecoderCode] = {
    "pillow/open-convert": _PILLOW,
    "pillow-simd/open-convert": _PILLOW,
    "opencv/imdecode-rgb": DecoderCode(
        ("import cv2",),
        '''
_FLAGS = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION  # OpenCV >= 4.10


def decode(data: bytes) -> np.ndarray:
    """OpenCV: imdecode straight to RGB (EXIF orientation not applied, as imgbench)."""
    image = cv2.imdecode(np.frombuffer(data, np.uint8), _FLAGS)
    if image is None:
        raise ValueError("cv2.imdecode could not decode the data")
    return image
''',
    ),
    "opencv/imdecode-cvtcolor": DecoderCode(
        ("import cv2",),
        '''
_FLAGS = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION


def decode(data: bytes) -> np.ndarray:
    """OpenCV: imdecode to BGR, then cvtColor to RGB."""
    image = cv2.imdecode(np.frombuffer(data, np.uint8), _FLAGS)
    if image is None:
        raise ValueError("cv2.imdecode could not decode the data")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
''',
    ),
    "simplejpeg/decode-jpeg": DecoderCode(
        ("import simplejpeg",),
        '''
def decode(data: bytes) -> np.ndarray:
    """simplejpeg (libjpeg-turbo): decode_jpeg to RGB."""
    return simplejpeg.decode_jpeg(data, colorspace="RGB")
''',
    ),
    "pyturbojpeg/decode-rgb": DecoderCode(
        ("from turbojpeg import TJPF_RGB, TurboJPEG",),
        '''
_TURBO = None


def decode(data: bytes) -> np.ndarray:
    """PyTurboJPEG: decode(pixel_format=TJPF_RGB) (its default is BGR)."""
    global _TURBO
    if _TURBO is None:
        _TURBO = TurboJPEG()  # needs the system's libturbojpeg
    return _TURBO.decode(data, pixel_format=TJPF_RGB)
''',
    ),
    "jpeg4py/decode": DecoderCode(
        ("import jpeg4py",),
        '''
def decode(data: bytes) -> np.ndarray:
    """jpeg4py (libturbojpeg through ctypes): RGB."""
    return jpeg4py.JPEG(np.frombuffer(data, np.uint8)).decode()
''',
    ),
    "kornia-rs/jpegturbo": DecoderCode(
        ("import kornia_rs",),
        '''
def decode(data: bytes) -> np.ndarray:
    """kornia-rs: decode_image_jpegturbo(data, "rgb")."""
    return kornia_rs.io.decode_image_jpegturbo(data, "rgb")
''',
    ),
    "imageio/v3-imread": DecoderCode(
        ("import imageio.v3 as iio",),
        '''
def decode(data: bytes) -> np.ndarray:
    """imageio v3: imread of the bytes, first frame, then the pixel policy."""
    return to_rgb8(iio.imread(data, index=0))
''',
        policy=True,
    ),
    "imagecodecs/codec-decode": DecoderCode(
        ("import imagecodecs",),
        '''
def decode(data: bytes) -> np.ndarray:
    """imagecodecs: the codec's own *_decode (JPEG asks libjpeg-turbo for RGB)."""
    if data[:3] == b"\\xff\\xd8\\xff":
        return to_rgb8(imagecodecs.jpeg8_decode(data, outcolorspace="RGB"))
    return to_rgb8(imagecodecs.imread(data))
''',
        policy=True,
    ),
    "pyvips/new-from-buffer": DecoderCode(
        ("import pyvips",),
        '''
pyvips.cache_set_max(0)


def decode(data: bytes) -> np.ndarray:
    """pyvips: new_from_buffer (sequential access, a truncated file is an error)."""
    image = pyvips.Image.new_from_buffer(data, "", access="sequential", fail_on="truncated")
    if image.interpretation == "cmyk":
        image = image.colourspace("srgb")
    return to_rgb8(image.numpy())
''',
        policy=True,
    ),
    "torchvision/decode-image": _torch_family(
        "from torchvision.io import ImageReadMode, decode_image",
        "torchvision.io.decode_image(mode=RGB)",
        "decode_image(_tensor(data), mode=ImageReadMode.RGB)",
    ),
    "torchvision/decode-jpeg": _torch_family(
        "from torchvision.io import ImageReadMode, decode_jpeg",
        "torchvision.io.decode_jpeg(mode=RGB)",
        "decode_jpeg(_tensor(data), mode=ImageReadMode.RGB)",
    ),
    "torchcodec/decode-image": _torch_family(
        "from torchcodec.decoders import decode_image",
        "torchcodec.decoders.decode_image(mode=RGB)",
        'decode_image(_tensor(data), mode="RGB", output_dtype="auto")',
    ),
    "torchcodec/decode-jpeg": _torch_family(
        "from torchcodec.decoders import decode_jpeg",
        "torchcodec.decoders.decode_jpeg(mode=RGB)",
        'decode_jpeg(_tensor(data), mode="RGB")',
    ),
    "ajpegli/imdecode": DecoderCode(
        ("import ajpegli",),
        '''
def decode(data: bytes) -> np.ndarray:
    """ajpegli (jpegli): imdecode(data, mode="RGB")."""
    return ajpegli.imdecode(data, mode="RGB")
''',
    ),
    "spdl/load-image": DecoderCode(
        ("import spdl.io",),
        '''
_SPDL = None


def decode(data: bytes) -> np.ndarray:
    """spdl.io (FFmpeg): load_image with the rgb24 filter; a damaged stream is an error."""
    global _SPDL
    if _SPDL is None:
        _SPDL = (
            spdl.io.get_video_filter_desc(pix_fmt="rgb24"),
            spdl.io.decode_config(decoder_options={"err_detect": "explode"}),
        )
    filter_desc, config = _SPDL
    buffer = spdl.io.load_image(data, decode_config=config, filter_desc=filter_desc)
    return np.ascontiguousarray(spdl.io.to_numpy(buffer))
''',
    ),
}


def decoder_code(key: str, pil_recipe: bool) -> DecoderCode:
    """The code of the reader ``key``; KeyError when it has no export template."""
    if pil_recipe and key.split("/")[0] in ("pillow", "pillow-simd"):
        return PILLOW_NATIVE
    code = DECODERS[key]
    if not code.torch_hwc:
        return code
    copied = "\n\n\n".join(
        definition("imgbench.readers.libs.torchvision", name) for name in ("_tensor", "_hwc")
    )
    return replace(code, code=f"{_TORCH_WARNINGS}\n\n{copied}\n{code.code}", torch_hwc=False)


def policy_code() -> str:
    """imgbench's pixel policy, copied from its one definition."""
    return definition("imgbench.readers.pixels", "to_rgb8")
