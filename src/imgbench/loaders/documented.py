"""Each system as its own authors build it: the ``as-documented`` rows beside the same-recipe ones.

A same-recipe row runs imgbench's pipeline (the same reader, decoder and augmentation parts in
every loader), so loaders are compared on where the work runs. A system's users build it the
way its authors' image-classification example or performance guide does, and some of those
ways change the work's shape without changing its output: DALI's ResNet-50 example decodes only
the crop's window (``fn.decoders.image_random_crop``), TensorFlow's ResNet preprocessing too
(``decode_and_crop_jpeg``), SPDL's and torchdata.nodes' ImageNet examples batch the indices
first and run one task per batch. A benchmark that measures a system below its own examples
picks the wrong answer, so each system with such an example gets an as-documented row: the same
recipe (crop distribution, flip, colour jitter, normalisation, output shape and dtype), built
as the example builds it, citing the example (``configured_from``).

Each adapter declares its own :class:`Documented` (one adapter file per library); this module
holds the record and the row columns every loader case carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

SAME_RECIPE: Final = "same-recipe"
AS_DOCUMENTED: Final = "as-documented"
FULL: Final = "full"  # the whole image is decoded, then cropped
ROI: Final = "roi"  # the decoder decodes only the crop's window
PARAM: Final = "configured_as"  # the parameter (in the case id) an as-documented row adds


@dataclass(frozen=True)
class Documented:
    """How a system's own authors build it, for one as-documented row."""

    source: str  # the example or guide followed: repository and file (or page), and version
    params: Mapping[str, Any] = field(default_factory=dict)  # what differs, in the case id
    crop_decode: str = FULL


def configuration_columns(
    system: str, *, crops: bool, documented: Documented | None = None
) -> dict[str, Any]:
    """The row columns saying which system a loader row measures and how it was built.
    ``crops``: the row's recipe draws a random crop (else ``crop_decode`` is null)."""
    if documented is None:
        return {
            "system": system,
            "configured_as": SAME_RECIPE,
            "configured_from": None,
            "crop_decode": FULL if crops else None,
        }
    return {
        "system": system,
        "configured_as": AS_DOCUMENTED,
        "configured_from": documented.source,
        "crop_decode": documented.crop_decode if crops else None,
    }


def documented_params(documented: Documented) -> dict[str, Any]:
    """The parameters an as-documented row adds to its case (so its id differs)."""
    return {PARAM: AS_DOCUMENTED, **documented.params}


def documented_counts(sweep: tuple[int, ...]) -> tuple[int, ...]:
    """The thread counts an as-documented row runs at: the plan's sweep up to one per core (its
    rows past the cores read no faster here: 4 threads on 2 cores 0.94-1.0x of 2, make bench
    2026-11-29), at least its first count."""
    import os

    cores = os.cpu_count() or 2
    return tuple(t for t in sweep if t <= cores) or sweep[:1] or (1,)
