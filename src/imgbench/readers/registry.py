"""Every reader imgbench knows. A new library: one adapter file in ``libs/`` + one entry here.

Codec support is declared here, so an unsupported (reader, codec) pair is a skipped row with
the reason rather than an error. pillow-simd is the Pillow entries again, in their own venv.
"""

from __future__ import annotations

import dataclasses
import inspect

from imgbench.attrs import load_attr
from imgbench.library import catalog, find
from imgbench.readers.base import CODECS, JPEG_ONLY, Reader, ReaderSpec

_PILLOW: tuple[ReaderSpec, ...] = (
    ReaderSpec(
        library="pillow",
        variant="open-convert",
        adapter="imgbench.readers.libs.pillow:PillowReader",
        requires=("PIL",),
        dist="pillow",
        disk_call="Image.open(path)",
        quick=True,
    ),
    ReaderSpec(
        library="pillow",
        variant="draft",
        adapter="imgbench.readers.libs.pillow:PillowDraft",
        requires=("PIL",),
        dist="pillow",
        codecs=JPEG_ONLY,
        output="reduced",
        disk_call="Image.open(path)",
        note="Image.draft: libjpeg DCT scaling",
    ),
    ReaderSpec(
        library="pillow",
        variant="resize-bilinear",
        adapter="imgbench.readers.libs.pillow:PillowResize",
        requires=("PIL",),
        dist="pillow",
        codecs=JPEG_ONLY,
        output="resize",
        disk_call="Image.open(path)",
        note="full decode + Image.resize(BILINEAR), antialiased (filter support scales)",
    ),
)


def pillow_simd_problem_here() -> str | None:
    """pillow-simd is silently replaced by any install that depends on Pillow: check the build
    this process imports (the readers, Pillow's augmentations and the Pillow loader pipelines)."""
    from imgbench.envs import pillow_simd_facts, pillow_simd_problem

    problem = pillow_simd_problem(pillow_simd_facts())
    return f"pillow-simd: {problem}" if problem else None


def _ffmpeg_problem() -> str | None:
    """spdl.io decodes through the system's FFmpeg libraries, which pip does not install."""
    from imgbench.readers.libs.spdl import ffmpeg_problem

    return ffmpeg_problem()


def _simd(spec: ReaderSpec) -> ReaderSpec:
    return dataclasses.replace(
        spec,
        library="pillow-simd",
        dist="pillow-simd",
        environment="pillow-simd",
        quick=False,
        check=pillow_simd_problem_here,
    )


READERS: tuple[ReaderSpec, ...] = (
    *_PILLOW,
    *(_simd(s) for s in _PILLOW),
    ReaderSpec(
        library="opencv",
        variant="imdecode-rgb",
        adapter="imgbench.readers.libs.opencv:ImdecodeRGB",
        requires=("cv2",),
        dist="opencv-python-headless",
        disk_call="cv2.imread(path, IMREAD_COLOR_RGB)",
        quick=True,
    ),
    ReaderSpec(
        library="opencv",
        variant="imdecode-cvtcolor",
        adapter="imgbench.readers.libs.opencv:ImdecodeCvtColor",
        requires=("cv2",),
        dist="opencv-python-headless",
        disk_call="cv2.imread(path) + cvtColor",
        quick=True,
    ),
    ReaderSpec(
        library="opencv",
        variant="reduced",
        adapter="imgbench.readers.libs.opencv:ImdecodeReduced",
        requires=("cv2",),
        dist="opencv-python-headless",
        codecs=JPEG_ONLY,
        output="reduced",
        disk_call="cv2.imread(path, IMREAD_REDUCED_COLOR_N)",
        note="IMREAD_REDUCED_COLOR_2/4/8 (RGB flag): libjpeg DCT scaling",
    ),
    ReaderSpec(
        library="opencv",
        variant="resize-area",
        adapter="imgbench.readers.libs.opencv:ImdecodeResizeArea",
        requires=("cv2",),
        dist="opencv-python-headless",
        codecs=JPEG_ONLY,
        output="resize",
        disk_call="cv2.imread(path, IMREAD_COLOR_RGB) + resize",
        note="full decode + cv2.resize(INTER_AREA), antialiased",
    ),
    ReaderSpec(
        library="imageio",
        variant="v3-imread",
        adapter="imgbench.readers.libs.imageio:ImageioReader",
        requires=("imageio.v3",),
        dist="imageio",
        disk_call="imageio.v3.imread(path)",
    ),
    ReaderSpec(
        library="skimage",
        variant="io-imread",
        adapter="imgbench.readers.libs.skimage:SkimageReader",
        requires=("skimage.io",),
        dist="scikit-image",
        disk_call="skimage.io.imread(path)",
    ),
    ReaderSpec(
        library="simplejpeg",
        variant="decode-jpeg",
        adapter="imgbench.readers.libs.simplejpeg:SimplejpegReader",
        requires=("simplejpeg",),
        dist="simplejpeg",
        codecs=JPEG_ONLY,
        quick=True,
    ),
    ReaderSpec(
        library="simplejpeg",
        variant="reduced",
        adapter="imgbench.readers.libs.simplejpeg:SimplejpegReduced",
        requires=("simplejpeg",),
        dist="simplejpeg",
        codecs=JPEG_ONLY,
        output="reduced",
        note="decode_jpeg_header + decode_jpeg(min_factor=N, min_width/height)",
    ),
    ReaderSpec(
        library="pyturbojpeg",
        variant="decode-rgb",
        adapter="imgbench.readers.libs.turbojpeg:TurboJPEGReader",
        requires=("turbojpeg",),
        dist="PyTurboJPEG",
        codecs=JPEG_ONLY,
    ),
    ReaderSpec(
        library="pyturbojpeg",
        variant="reduced",
        adapter="imgbench.readers.libs.turbojpeg:TurboJPEGReduced",
        requires=("turbojpeg",),
        dist="PyTurboJPEG",
        codecs=JPEG_ONLY,
        output="reduced",
        note="decode(scaling_factor=(1, N))",
    ),
    ReaderSpec(
        library="jpeg4py",
        variant="decode",
        adapter="imgbench.readers.libs.jpeg4py:Jpeg4pyReader",
        requires=("jpeg4py",),
        dist="jpeg4py",
        codecs=JPEG_ONLY,
        disk_call="jpeg4py.JPEG(path).decode()",
    ),
    ReaderSpec(
        library="pyvips",
        variant="new-from-buffer",
        adapter="imgbench.readers.libs.pyvips:PyvipsReader",
        requires=("pyvips",),
        dist="pyvips",
        codecs=frozenset({"jpeg", "png", "webp", "tiff"}),
        disk_call="pyvips.Image.new_from_file(path)",
        note="the pyvips-binary libvips has no BMP loader",
    ),
    ReaderSpec(
        library="pyvips",
        variant="shrink-on-load",
        adapter="imgbench.readers.libs.pyvips:PyvipsShrink",
        requires=("pyvips",),
        dist="pyvips",
        codecs=JPEG_ONLY,
        output="reduced",
        disk_call="pyvips.Image.new_from_file(path, shrink=N)",
        note="jpegload shrink=N: libjpeg DCT scaling",
    ),
    ReaderSpec(
        library="kornia-rs",
        variant="jpegturbo",
        adapter="imgbench.readers.libs.kornia_rs:KorniaRsReader",
        requires=("kornia_rs",),
        dist="kornia-rs",
        codecs=JPEG_ONLY,
        disk_call="kornia_rs.io.read_image_jpegturbo(path)",
    ),
    ReaderSpec(
        library="imagecodecs",
        variant="codec-decode",
        adapter="imgbench.readers.libs.imagecodecs:ImagecodecsReader",
        requires=("imagecodecs",),
        dist="imagecodecs",
        note="jpeg8_decode, png_decode, webp_decode, bmp_decode, tiff_decode",
    ),
    ReaderSpec(
        library="torchvision",
        variant="decode-image",
        adapter="imgbench.readers.libs.torchvision:DecodeImage",
        requires=("torch", "torchvision"),
        dist="torchvision",
        codecs=frozenset({"jpeg", "png", "webp"}),
        disk_call="torchvision.io.read_file(path) + decode_image",
    ),
    ReaderSpec(
        library="torchvision",
        variant="decode-jpeg",
        adapter="imgbench.readers.libs.torchvision:DecodeJpeg",
        requires=("torch", "torchvision"),
        dist="torchvision",
        codecs=JPEG_ONLY,
        disk_call="torchvision.io.read_file(path) + decode_jpeg",
    ),
    ReaderSpec(
        library="torchvision",
        variant="decode-jpeg-cuda",
        adapter="imgbench.readers.libs.torchvision:DecodeJpegCuda",
        requires=("torch", "torchvision"),
        dist="torchvision",
        codecs=JPEG_ONLY,
        note="nvjpeg on the GPU, copy back to host included",
    ),
    ReaderSpec(
        library="dali",
        variant="decoders-image",
        adapter="imgbench.readers.libs.dali:DaliDecoder",
        requires=("nvidia.dali",),
        dist="nvidia-dali-cuda120",
        note="fn.decoders.image(device='cpu') in a batch-1 pipeline fed by fn.external_source",
    ),
    ReaderSpec(
        library="spdl",
        variant="load-image",
        adapter="imgbench.readers.libs.spdl:SpdlLoadImage",
        requires=("spdl.io",),
        dist="spdl-io",
        check=_ffmpeg_problem,
        disk_call="spdl.io.load_image(path)",
        note="FFmpeg's decoders (mjpeg for JPEG, not libjpeg-turbo) + rgb24 filter, one thread",
    ),
    ReaderSpec(
        library="tensorflow",
        variant="decode-image",
        adapter="imgbench.readers.libs.tensorflow:TfDecodeImage",
        requires=("tensorflow",),
        dist="tensorflow-cpu",
        codecs=frozenset({"jpeg", "png", "webp", "bmp"}),
        environment="tensorflow",
        disk_call="tf.io.read_file(path) + decode_image",
    ),
    ReaderSpec(
        library="tensorflow",
        variant="decode-jpeg",
        adapter="imgbench.readers.libs.tensorflow:TfDecodeJpeg",
        requires=("tensorflow",),
        dist="tensorflow-cpu",
        codecs=JPEG_ONLY,
        environment="tensorflow",
        disk_call="tf.io.read_file(path) + decode_jpeg",
    ),
    ReaderSpec(
        library="torchcodec",
        variant="decode-image",
        adapter="imgbench.readers.libs.torchcodec:DecodeImage",
        requires=("torch", "torchcodec.decoders"),
        dist="torchcodec",
        codecs=frozenset({"jpeg", "png", "webp"}),
        note="torchcodec.decoders.decode_image(mode=RGB) + HWC copy",
    ),
    ReaderSpec(
        library="torchcodec",
        variant="decode-jpeg",
        adapter="imgbench.readers.libs.torchcodec:DecodeJpeg",
        requires=("torch", "torchcodec.decoders"),
        dist="torchcodec",
        codecs=JPEG_ONLY,
        note="torchcodec.decoders.decode_jpeg(mode=RGB) + HWC copy",
    ),
    ReaderSpec(
        library="nvimgcodec",
        variant="cpu",
        adapter="imgbench.readers.libs.nvimgcodec:NvimgcodecReader",
        requires=("nvidia.nvimgcodec",),
        dist="nvidia-nvimgcodec-cu12",
        note="Decoder(CPU_ONLY backend).decode(bytes), one image per call",
    ),
    ReaderSpec(
        library="nvimgcodec",
        variant="cpu-batched",
        adapter="imgbench.readers.libs.nvimgcodec:NvimgcodecBatched",
        requires=("nvidia.nvimgcodec",),
        dist="nvidia-nvimgcodec-cu12",
        batched=True,
        note="Decoder(CPU_ONLY backend).decode(list of bytes), its own thread pool",
    ),
    ReaderSpec(
        library="ajpegli",
        variant="imdecode",
        adapter="imgbench.readers.libs.ajpegli:AjpegliReader",
        requires=("ajpegli",),
        dist="ajpegli",
        codecs=JPEG_ONLY,
        disk_call="ajpegli.imread(path)",
        note="jpegli: ajpegli.imdecode(data, mode=RGB)",
    ),
    ReaderSpec(
        library="mxnet",
        variant="imdecode",
        adapter="imgbench.readers.libs.mxnet:Imdecode",
        requires=("mxnet",),
        dist="mxnet",
        codecs=frozenset({"jpeg", "png", "bmp", "tiff"}),  # its OpenCV has no WebP
        environment="mxnet",
        disk_call="mx.image.imread(path)",
        note="MXNet 1.9.1's bundled OpenCV decoders, an engine operator; asnumpy() copies out",
    ),
)

assert all(s.codecs <= frozenset(CODECS) for s in READERS)


def build_reader(
    spec: ReaderSpec, *, reduce: int | None = None, threads: int | None = None
) -> Reader:
    """Import the adapter module and instantiate it (the library is imported here, not before).

    ``reduce`` goes to reduced and resize variants; ``threads`` to adapters that take it (their
    library keeps its own pool the harness cannot pin, e.g. libvips).
    """
    cls = load_attr(spec.adapter)
    accepted = inspect.signature(cls).parameters
    kwargs: dict[str, int | None] = {}
    if "reduce" in accepted:
        if reduce is None:
            raise ValueError(f"{spec.library}/{spec.variant} needs a reduce factor")
        kwargs["reduce"] = reduce
    if "threads" in accepted:
        kwargs["threads"] = threads
    return cls(**kwargs)


def readers() -> tuple[ReaderSpec, ...]:
    """The built-in readers, then those other packages register (entry points ``imgbench.read``)."""
    return catalog("read", READERS, ReaderSpec)


def find_spec(library: str, variant: str) -> ReaderSpec:
    return find(readers(), f"{library}/{variant}", "reader")


# Readers that posts use but that cannot run on a current stack: listed by `imgbench env`.
UNAVAILABLE: tuple[tuple[str, str], ...] = (
    (
        "scipy.misc.imread",
        "removed in SciPy 1.2 (2019); its replacement is imageio, measured as `imageio`",
    ),
)
