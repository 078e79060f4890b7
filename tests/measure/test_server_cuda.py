"""The worker server imports nothing that initialises CUDA before it forks (issue: a GPU box got
a CPU answer): nvImageCodec starts the CUDA driver at import, and a child forked after that has
no CUDA. Checked on this CPU machine in a fresh interpreter that runs the server's own preload
for the default profile: the modules that would start CUDA are required by its cases, yet none
is imported, torch has not initialised CUDA, and no CUDA driver library is mapped."""

from __future__ import annotations

import json
import subprocess
import sys

from imgbench.library import missing_module
from imgbench.measure.server import CUDA_AT_IMPORT, fork_safe, preload_modules

PROBE = """
import json, sys
from imgbench.measure.server import CUDA_AT_IMPORT, preload_imports
from imgbench.profiles import get_profile
from imgbench.stages import profile_imports, worker_preload

required = profile_imports(get_profile("default"), "main")
preload_imports(worker_preload(required))
starts_cuda = sorted(
    m for m in sys.modules if any(m == c or m.startswith(c + ".") for c in CUDA_AT_IMPORT)
)
torch = sys.modules.get("torch")
with open("/proc/self/maps") as maps:
    mapped = maps.read()
print(json.dumps({
    "required": list(required),
    "starts_cuda": starts_cuda,
    "torch_imported": torch is not None,
    "torch_cuda_initialized": bool(torch is not None and torch.cuda.is_initialized()),
    "libcuda_mapped": "libcuda.so" in mapped,
}))
"""


def test_the_preload_leaves_out_what_starts_cuda() -> None:
    assert not fork_safe("nvidia.nvimgcodec") and not fork_safe("nvidia.nvimgcodec.x")
    assert fork_safe("nvidia.dali") and fork_safe("torch") and not fork_safe("pyvips")
    assert "nvidia.nvimgcodec" not in preload_modules(("nvidia.nvimgcodec", "torch"))


def test_the_servers_preload_for_the_default_profile_starts_no_cuda() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    # not vacuous: where nvImageCodec is installed, the profile's cases require it
    if missing_module("nvimgcodec", ("nvidia.nvimgcodec",)) is None:
        assert set(CUDA_AT_IMPORT) <= set(found["required"]), found["required"]
    assert found["starts_cuda"] == []
    assert found["torch_imported"]  # the loader cases' requirement, preloaded
    assert not found["torch_cuda_initialized"] and not found["libcuda_mapped"]
