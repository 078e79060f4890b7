"""Real photos (skimage.data, offline) in every codec, and every kind of odd file."""

from __future__ import annotations

import functools
import io
import struct
import zlib

import numpy as np
from PIL import Image

PHOTOS = ("astronaut", "coffee", "chelsea")  # chelsea is 451 px wide: odd sizes for reductions
_FORMATS = {
    "jpeg": ("JPEG", {"quality": 90}),
    "png": ("PNG", {}),
    "webp": ("WEBP", {"quality": 90}),
    "bmp": ("BMP", {}),
    "tiff": ("TIFF", {}),
}


@functools.cache
def photo(name: str) -> np.ndarray:
    from skimage import data

    return getattr(data, name)()


def encode(pixels: np.ndarray | Image.Image, codec: str, **kw) -> bytes:
    fmt, defaults = _FORMATS[codec]
    image = pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **{**defaults, **kw})
    return buffer.getvalue()


@functools.cache
def photo_bytes(name: str, codec: str) -> bytes:
    return encode(photo(name), codec)


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload)
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bomb(width: int = 50_000, height: int = 50_000) -> bytes:
    """A 100-byte PNG whose header claims width x height RGB pixels."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", zlib.compress(b"\0" * 1000))
        + _png_chunk(b"IEND", b"")
    )


def jpeg_bomb(width: int = 60_000, height: int = 60_000) -> bytes:
    """A small JPEG with its frame header patched to claim width x height."""
    data = bytearray(encode(photo("coffee")[:16, :16], "jpeg"))
    sof = data.index(b"\xff\xc0")
    data[sof + 5 : sof + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def exif_rotated_jpeg() -> bytes:
    """Stored landscape, EXIF orientation 6 (display rotated 90°): readers keep it landscape."""
    image = Image.fromarray(photo("chelsea"))
    exif = image.getexif()
    exif[0x0112] = 6
    return encode(image, "jpeg", exif=exif)


def sixteen_bit_png(gray: bool) -> tuple[bytes, np.ndarray]:
    """A 16-bit PNG and the policy's expected 8-bit RGB result (the high byte)."""
    import cv2

    base = photo("coffee").astype(np.uint16) * 257 + 100  # low byte is not just a copy
    pixels = base[..., 0] if gray else base[..., ::-1]  # OpenCV writes BGR
    ok, buffer = cv2.imencode(".png", pixels)
    assert ok
    expected = (base >> 8).astype(np.uint8)
    if gray:
        expected = np.repeat(expected[..., :1], 3, axis=2)
    return buffer.tobytes(), np.ascontiguousarray(expected)


def odd_files() -> dict[str, tuple[str, bytes, np.ndarray | None]]:
    """kind -> (codec, bytes, expected RGB array or None when the reader must raise)."""
    coffee = photo("coffee")
    rgba = np.dstack([coffee, np.full(coffee.shape[:2], 60, np.uint8)])
    palette = Image.fromarray(coffee).convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    gray = coffee[..., 1]
    g16, g16_expected = sixteen_bit_png(gray=True)
    c16, c16_expected = sixteen_bit_png(gray=False)
    jpeg = photo_bytes("coffee", "jpeg")
    cmyk = encode(Image.fromarray(coffee).convert("CMYK"), "jpeg")
    return {
        "truncated-jpeg": ("jpeg", jpeg[: len(jpeg) // 2], None),
        "truncated-png": ("png", photo_bytes("coffee", "png")[:20_000], None),
        "zero-byte": ("jpeg", b"", None),
        "not-an-image": ("jpeg", b"this is not an image", None),
        "bomb-png": ("png", png_bomb(), None),
        "bomb-jpeg": ("jpeg", jpeg_bomb(), None),
        "cmyk-jpeg": ("jpeg", cmyk, np.asarray(Image.open(io.BytesIO(cmyk)).convert("RGB"))),
        "gray-jpeg": ("jpeg", encode(gray, "jpeg", quality=95), np.repeat(gray[..., None], 3, 2)),
        "gray-png": ("png", encode(gray, "png"), np.repeat(gray[..., None], 3, 2)),
        "gray16-png": ("png", g16, g16_expected),
        "rgb16-png": ("png", c16, c16_expected),
        "palette-png": ("png", encode(palette, "png"), np.asarray(palette.convert("RGB"))),
        "rgba-png": ("png", encode(rgba, "png"), coffee),
        "rgba-webp": ("webp", encode(rgba, "webp", lossless=True), coffee),
        "exif-rotated-jpeg": ("jpeg", exif_rotated_jpeg(), photo("chelsea")),
    }
