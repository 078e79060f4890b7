"""A DataLoader's forked workers after the parent used OpenCV's thread pool: the worker init that
pins OpenCV must not hang on the pool the fork left behind (``cv2.setNumThreads(1)`` there
blocked for ever once the parent's pool threads had gone idle: a reader case with threads, then a
loader case, in one process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys, time
    import cv2, numpy as np, torch
    from torch.utils.data import DataLoader
    from imgbench.loaders.libs.torch_dataloader import pin_worker_threads
    from exported_pins import pin_opencv

    cv2.setNumThreads(4)
    image = np.random.default_rng(0).integers(0, 255, (1200, 1200, 3), dtype=np.uint8)
    for _ in range(3):
        cv2.GaussianBlur(image, (9, 9), 3)  # the parent's pool runs, then waits
    time.sleep(1.5)  # idle: its threads block on the pool's condition variable


    class Blurs(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return torch.from_numpy(cv2.GaussianBlur(image[:200, :200], (9, 9), 3))


    for pin in (pin_worker_threads, pin_opencv):
        loader = DataLoader(Blurs(), batch_size=2, num_workers=2, worker_init_fn=pin,
                            timeout=30, multiprocessing_context="fork")
        print(pin.__name__, sum(1 for _ in loader))
    """
)


def test_forked_workers_pin_opencv_after_the_parent_used_its_pool(tmp_path: Path) -> None:
    """imgbench's DataLoader workers' pin, and the exported module's own copy of it."""
    from imgbench.export.module import _PINS

    (tmp_path / "exported_pins.py").write_text("import sys\n" + _PINS)
    path = [str(REPO / "src"), str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path[:0] = {path!r}\n{CHILD}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["pin_worker_threads", "2", "pin_opencv", "2"]
