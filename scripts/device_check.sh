#!/usr/bin/env bash
# The accelerator half on one GPU machine (docs/gpu.md): install imgbench into the machine's own
# Python with --no-deps (plus only the carried wheels it lacks, from build/device-carry, else
# build/device-wheels), build the dataset, run `imgbench run --profile gpu`, and write the parquet
# files, a text summary and this log to $OUT. Each part goes on when an earlier one fails; the
# log is set -x style.
#   OUT=/some/folder scripts/device_check.sh        # PYTHON=python3.12 to pick the interpreter
#   GPU_FEEDS="uint8-prefetcher nvjpeg-gpu-augment" # only these feeds (default: the profile's)
#   PARTS=scaling OUT=/some/folder scripts/device_check.sh  # part 4 alone: the 4 -> 8, 16 core check
#   PARTS=ranks OUT=/some/folder scripts/device_check.sh    # part 5 alone: 2, 4, 8 ranks, ceilings
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
WHEELS="${WHEELS:-$PWD/build/device-carry}"  # only what the device image lacks (docs/gpu.md)
[ -d "$WHEELS" ] || WHEELS="$PWD/build/device-wheels"
ls -l "$WHEELS" || true
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
    simsimd:simsimd stringzilla:stringzilla albucore:albucore albumentations:albumentations \
    kornia_rs:kornia_rs kornia:kornia torchdata:torchdata \
    nvidia.nvimgcodec:nvidia_nvimgcodec_cu13; do
  module="${pair%%:*}"; wheel="${pair##*:}"
  found="$(ls "$WHEELS"/"$wheel"-*.whl 2>/dev/null | head -1)"  # not carried: its rows skip
  "$PY" -c "import $module" 2>/dev/null || { [ -n "$found" ] && missing+=("$found"); }
done
# nvJPEG for CUDA 13 (nvidia/cu13/lib/libnvjpeg.so.13), which nvImageCodec's GPU decoder loads,
# goes in with nvImageCodec
[[ " ${missing[*]-} " == *nvimgcodec* ]] && missing+=($(ls "$WHEELS"/nvidia_nvjpeg-*.whl 2>/dev/null | head -1))
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
# nvImageCodec loads nvJPEG (libnvjpeg.so.13) by name: the carried wheel's, else CUDA's own, through
# a folder holding that one library, appended to LD_LIBRARY_PATH (putting CUDA's whole lib64 first
# hid the GPU from torch: every row said "no CUDA device")
nvjpeg="$(ls $("$PY" -c "import nvidia; print(' '.join(p + '/cu13/lib/libnvjpeg.so.13' \
  for p in nvidia.__path__))" 2>/dev/null) /usr/local/cuda/lib64/libnvjpeg.so.13 2>/dev/null | head -1)"
saved_ld="${LD_LIBRARY_PATH:-}"
if [ -n "$nvjpeg" ]; then
  mkdir -p /tmp/imgbench-nvjpeg && ln -sf "$nvjpeg" /tmp/imgbench-nvjpeg/libnvjpeg.so.13
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/tmp/imgbench-nvjpeg"
fi
"$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" \
  || { echo "CUDA hidden by LD_LIBRARY_PATH=$LD_LIBRARY_PATH: restored"; export LD_LIBRARY_PATH="$saved_ld"; }
"$PY" - <<'PY' || true
for name in ("kornia", "torchdata.nodes", "nvidia.nvimgcodec", "nvidia.dali"):
    try:
        module = __import__(name, fromlist=["_"])
        print(name, getattr(module, "__version__", "imports"))
    except Exception as exc:
        print(name, "does not import:", type(exc).__name__, str(exc)[:200])
PY
IMGBENCH=("$PY" -m imgbench.cli)
"${IMGBENCH[@]}" --help >/dev/null || export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import imgbench.loaders.gpu.cases, imgbench.pytest_plugin; print('imgbench imports')" || true
[ -n "${DEVICE_CHECK_INSTALL_ONLY:-}" ] && exit 0  # how the install steps are tested without a GPU

# 2. the dataset (cached; nothing to do when built), then the profile. 16 DataLoader workers hold
# 32 batches in shared memory: 4.9 GB at batch 256 float32. A smaller /dev/shm gets batch 64
shm_kb=$(df -k --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
amend=()
if [ -n "$shm_kb" ] && [ "$shm_kb" -lt 8388608 ]; then
  amend+=("gpu_batch_size = 64")
fi
if [ -n "${GPU_FEEDS:-}" ]; then  # "a b c" -> gpu_feeds = ["a", "b", "c"]
  amend+=("gpu_feeds = [$(printf '"%s", ' $GPU_FEEDS | sed 's/, $//')]")
fi
if [ "${#amend[@]}" -gt 0 ]; then
  { echo '[tool.imgbench.profiles.gpu.loader]'; printf '%s\n' "${amend[@]}"; } >"$OUT/gpu-profile.toml"
  cat "$OUT/gpu-profile.toml"
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
# which parts to run (a rerun names only what failed); `scaling` (part 4) runs in a call of its own
PARTS="${PARTS:-device feed cpu}"
[[ " $PARTS " == *" device "* ]] && run_part 180 "gpu and not feed"
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

# 4. (its own call: PARTS=scaling) the bound for the cores you don't have (docs/loaders.md): the
# quick profile's loader rows at 0, 1, 2 and SCALING_FIT workers on SCALING_FIT cores (taskset),
# then at N workers on N cores for each N of SCALING_TARGETS, and lab/scaling_check.py fitting the
# first run (N = 1, 2, SCALING_FIT: a USL fit) to predict each of the others
if [[ " $PARTS " == *" scaling "* ]]; then
  fit="${SCALING_FIT:-4}"
  {
    for n in "$fit" ${SCALING_TARGETS:-8 16}; do
      sweep="[$n]"; [ "$n" = "$fit" ] && sweep="[0, 1, 2, $fit]"
      printf '[tool.imgbench.profiles.scaling-%s]\nbase = "quick"\n' "$n"
      printf '[tool.imgbench.profiles.scaling-%s.loader]\nworker_sweep = %s\n' "$n" "$sweep"
    done
  } >"$OUT/scaling-profiles.toml"
  "${IMGBENCH[@]}" dataset build synthetic-small || true
  for n in "$fit" ${SCALING_TARGETS:-8 16}; do
    left=$((BUDGET_S - SECONDS)); [ "$left" -lt 60 ] && { echo "scaling: no time for $n cores"; break; }
    IMGBENCH_PYPROJECT="$OUT/scaling-profiles.toml" timeout "$left" taskset -c "0-$((n - 1))" \
      "${IMGBENCH[@]}" run --profile "scaling-$n" --no-envs -k "loader and not gpu" \
      --name "scaling-$n" --results "$OUT/scaling-$n"
    echo "scaling run on $n cores exit: $?"
    [ "$n" = "$fit" ] && continue
    "$PY" lab/scaling_check.py "$OUT/scaling-$fit" "$OUT/scaling-$n" --fit-cores "$fit" \
      --cores "$n" --all | tee -a "$OUT/scaling.txt" || true
  done
fi

# 5. (its own call: PARTS=ranks) training ranks sharing the cores and the in-RAM ceilings
# (docs/loaders.md): the quick profile's DataLoader at one worker per core, R = 2, 4, 8 ranks at
# cores / R and at cores workers each, the two ceilings; then the answer's lines about them
if [[ " $PARTS " == *" ranks "* ]]; then
  {
    printf '[tool.imgbench.profiles.ranks-check]\nbase = "quick"\n'
    printf '[tool.imgbench.profiles.ranks-check.loader]\nworker_sweep = [%s]\n' "$(nproc)"
    printf 'ranks = [%s]\nceiling_pipelines = ["ram-bytes", "ram-decoded"]\n' "${RANKS:-2, 4, 8}"
  } >"$OUT/ranks-profile.toml"
  left=$((BUDGET_S - SECONDS))
  IMGBENCH_PYPROJECT="$OUT/ranks-profile.toml" timeout "$left" "${IMGBENCH[@]}" run \
    --profile ranks-check --no-envs -k "torch-dataloader and not gpu" --name ranks-check \
    --results "$OUT/ranks"
  echo "ranks run exit: $?"
  "${IMGBENCH[@]}" report --markdown --results "$OUT/ranks" | tee "$OUT/ranks.txt" || true
fi

# 3. the summary
"$PY" -m imgbench.answer.gpu_summary "$OUT/results" | tee "$OUT/summary.txt" || true
nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv || true
date -u
