"""The loader tests' photos and context, for the gpu cases run on the CPU."""

from tests.loaders.conftest import make_context, photo_dir

__all__ = ["make_context", "photo_dir"]
