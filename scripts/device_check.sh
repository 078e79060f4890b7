#!/usr/bin/env bash
# The accelerator half on one GPU machine (docs/gpu.md): install imgbench into the machine's own
# Python with --no-deps (plus only the carried wheels it lacks, from build/device-wheels), build
# the dataset, run `imgbench run --profile gpu`, and write the parquet files, a text summary and
# this log to $OUT. Each part goes on when an earlier one fails; the log is set -x style.
#   OUT=/some/folder scripts/device_check.sh        # PYTHON=python3.12 to pick the interpreter
set -u -o pipefail
OUT="${OUT:-$PWD/build/device-out}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/device_check.log") 2>&1
set -x
PY="${PYTHON:-}"
if [ -z "$PY" ]; then  # the interpreter that has torch
  for candidate in python3 python3.12 python; do
    if "$candidate" -c "import torch" 2>/dev/null; then PY="$candidate"; break; fi
  done
  PY="${PY:-python3}"
fi
WHEELS="$PWD/build/device-wheels"
date -u
nvidia-smi || true
df -h /dev/shm "$PWD" || true
nproc || true
"$PY" - <<'PY' || true
import sys, torch, torchvision
print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available()); print("torchvision", torchvision.__version__)
PY

# 1. the wheels the machine lacks (module -> wheel name), then imgbench itself, editable
missing=()
for pair in psutil:psutil rich:rich markdown_it:markdown_it_py mdurl:mdurl pygments:pygments \
    pydantic_core:pydantic_core pydantic:pydantic annotated_types:annotated_types \
    typing_inspection:typing_inspection typer:typer click:click shellingham:shellingham annotated_doc:annotated_doc \
    typing_extensions:typing_extensions threadpoolctl:threadpoolctl cloudpickle:cloudpickle \
    tqdm:tqdm simplejpeg:simplejpeg dateutil:python_dateutil six:six iniconfig:iniconfig \
    pluggy:pluggy cpuinfo:py_cpuinfo setuptools:setuptools wheel:wheel yaml:pyyaml scipy:scipy \
    simsimd:simsimd stringzilla:stringzilla albucore:albucore albumentations:albumentations; do
  module="${pair%%:*}"; wheel="${pair##*:}"
  "$PY" -c "import $module" 2>/dev/null || missing+=("$(ls "$WHEELS"/"$wheel"-*.whl | head -1)")
done
# imgbench's pytest-benchmark shim is pinned to 5.1-5.3
"$PY" - <<'PY' || missing+=("$(ls "$WHEELS"/pytest_benchmark-*.whl | head -1)")
import importlib.metadata as m, sys
v = tuple(int(p) for p in m.version("pytest-benchmark").split(".")[:2])
sys.exit(0 if (5, 1) <= v < (5, 4) else 1)
PY
if [ "${#missing[@]}" -gt 0 ]; then
  "$PY" -m pip install --no-deps --no-index "${missing[@]}" || true
fi
"$PY" -m pip install --no-deps --no-index --no-build-isolation -e . \
  || "$PY" -m pip install --no-deps --no-index --no-build-isolation --user -e . || true
IMGBENCH=("$PY" -m imgbench.cli)
"${IMGBENCH[@]}" --help >/dev/null || export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import imgbench.gpu.cases, imgbench.pytest_plugin; print('imgbench imports')" || true
[ -n "${DEVICE_CHECK_INSTALL_ONLY:-}" ] && exit 0  # how the install steps are tested without a GPU

# 2. the dataset (cached; nothing to do when built), then the profile. 16 DataLoader workers hold
# 32 batches in shared memory: 4.9 GB at batch 256 float32. A smaller /dev/shm gets batch 64
shm_kb=$(df -k --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
if [ -n "$shm_kb" ] && [ "$shm_kb" -lt 8388608 ]; then
  printf '[tool.imgbench.profiles.gpu.loader]\ngpu_batch_size = 64\n' >"$OUT/gpu-profile.toml"
  export IMGBENCH_PYPROJECT="$OUT/gpu-profile.toml"
fi
"${IMGBENCH[@]}" dataset build synthetic-imagenet-like || true
# three sessions, each its own parquet file, so a time-out loses one part only: the device's
# copies, decode, augmentation and cached step; the feeds (DataLoader -> device -> step); the CPU
# decoders and the CPU-only DataLoader they are compared with
BUDGET_S="${BUDGET_S:-570}"  # the whole script, so the summary is written within a 600 s call
run_part() {  # SECONDS KEYWORD: at most SECONDS, and never past the script's budget
  local left=$((BUDGET_S - SECONDS)) limit="$1"
  if [ "$left" -lt 30 ]; then echo "not run (time budget spent): -k '$2'"; return; fi
  [ "$left" -lt "$limit" ] && limit="$left"
  timeout "$limit" "${IMGBENCH[@]}" run --profile gpu --results "$OUT/results" --no-envs \
    --name gpu-check -k "$2"
  echo "imgbench run -k '$2' exit: $?"
}
PARTS="${PARTS:-device feed cpu}"  # which parts to run (a rerun names only what failed)
[[ " $PARTS " == *" device "* ]] && run_part 120 "gpu and not feed"
# CUDA in a fork of the worker server is expected to work (the server never initialises CUDA);
# if the rows say otherwise, the rest runs in the session's own process
"$PY" - "$OUT/results" <<'PY' && export IMGBENCH_SETTINGS="process_model=in-process"
import sys
from imgbench.results.store import load_results
f = load_results(sys.argv[1]).frame
bad = f[(f["library"] == "gpu") & (f["status"] == "failed")]
sys.exit(0 if bad["reason"].astype(str).str.contains("initiali").any() else 1)
PY
[ -n "${IMGBENCH_SETTINGS:-}" ] && run_part 120 "gpu and not feed"
[[ " $PARTS " == *" feed "* ]] && run_part 300 "gpu and feed"
[[ " $PARTS " == *" cpu "* ]] && run_part 90 "not gpu"
if ! ls "$OUT"/results/*.parquet >/dev/null 2>&1; then
  # no parquet at all: the gpu cases straight through pytest, its plugin named
  timeout $((BUDGET_S - SECONDS > 60 ? BUDGET_S - SECONDS : 60)) "$PY" -m pytest benches/bench_loaders.py -p imgbench.pytest_plugin \
    --imgbench-profile=gpu --imgbench-results="$OUT/results" -p no:cacheprovider -k gpu -q || true
fi

# 3. the summary
"$PY" -m imgbench.gpu.summary "$OUT/results" | tee "$OUT/summary.txt" || true
nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv || true
date -u
