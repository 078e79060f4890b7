"""The recipe's crop windows as torchvision draws them, and the check that a crop-aware decoder's
windows follow them (tests/loaders/test_documented.py, tests/loaders/test_tf_tasks.py)."""

from __future__ import annotations

import numpy as np

from imgbench.augment import spec


def reference_windows(sizes: list[tuple[int, int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(area fraction, aspect) of ``n`` windows drawn as the recipe defines them: torchvision's
    RandomResizedCrop.get_params (uniform area, log-uniform aspect, a window that does not fit
    is drawn again), over the same image sizes."""
    import torch
    from torchvision.transforms import RandomResizedCrop

    torch.manual_seed(0)
    areas, aspects = [], []
    for i in range(n):
        width, height = sizes[i % len(sizes)]
        image = torch.empty(3, height, width)
        _, _, h, w = RandomResizedCrop.get_params(image, list(spec.RRC_SCALE), list(spec.RRC_RATIO))
        areas.append(h * w / (width * height))
        aspects.append(w / h)
    return np.array(areas), np.array(aspects)


def check_window_distribution(
    areas: np.ndarray, aspects: np.ndarray, sizes: list[tuple[int, int]]
) -> None:
    """Windows within the recipe's ranges (a pixel's rounding aside), distributed as the
    recipe's own draw: mean area within 0.05 (about 4 standard errors at 384 draws), the share
    under a fifth of the range within 0.08, the share wider than tall within 0.12."""
    low, high = spec.RRC_SCALE
    assert areas.min() >= low * 0.9 and areas.max() <= high * 1.001
    assert aspects.min() >= spec.RRC_RATIO[0] * 0.95
    assert aspects.max() <= spec.RRC_RATIO[1] * 1.05
    ref_areas, ref_aspects = reference_windows(sizes, 4000)
    assert abs(areas.mean() - ref_areas.mean()) < 0.05, (areas.mean(), ref_areas.mean())
    small = low + 0.2 * (high - low)
    assert abs((areas < small).mean() - (ref_areas < small).mean()) < 0.08
    assert abs((aspects > 1).mean() - (ref_aspects > 1).mean()) < 0.12
