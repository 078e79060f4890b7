# make bench: set up everything, then run the default matrix on the synthetic dataset -> results/*.parquet
# make test:  set up everything, then ruff, mypy and the tests
PYTHON ?= python3
# Python may write the bytecode of this checkout's modules (and pytest its assertion-rewritten
# test and plugin modules): with PYTHONDONTWRITEBYTECODE set (as on some hosts), every test's
# interpreter and pytest session compiled and rewrote them again (a collection 14.5 s -> 9.6 s)
unexport PYTHONDONTWRITEBYTECODE
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= default
NAME ?= $(PROFILE)
# Debian packages: libturbojpeg0 (PyTurboJPEG, jpeg4py), libjpeg-turbo-progs (tjbench, the native
# ceiling), chromium (the dashboard's real-browser test), libjpeg62-turbo-dev zlib1g-dev libpng-dev
# libwebp-dev libtiff-dev (to compile pillow-simd, with WebP and TIFF, in its own environment),
# libjemalloc2 libtcmalloc-minimal4 (the allocator dimension: LD_PRELOAD in worker processes),
# valgrind (instruction counts under callgrind: --imgbench-measure=instructions, the regression gate),
# FFmpeg 5.1's libraries (spdl.io decodes through the system's FFmpeg; its wheel ships none)
APT_PACKAGES ?= libturbojpeg0 libjpeg-turbo-progs chromium libjpeg62-turbo-dev zlib1g-dev libpng-dev \
  libwebp-dev libtiff-dev libjemalloc2 libtcmalloc-minimal4 valgrind \
  libavcodec59 libavformat59 libavutil57 libswscale6 libswresample4 libavfilter8 libavdevice59
EXTRAS ?= all
STAMP := $(VENV)/.imgbench-installed
# the tensorflow environment (tf.data, Keras, TensorFlow's decoders), tested by make test
TF_ENV := .venvs/tensorflow/.imgbench-env-built
# the mosaic environment (Mosaic Streaming, the `mds` format), tested by make test: layered
# over this venv (a .pth file), it installs only streaming (--no-deps) and what this venv lacks
# (transformers<5 and its hub client, codecs, hashes): 196 MB, and 62 s to build here at load 2.3,
# 180 s at load 4.5 (was 6.3 GB and 493 s with its own torch). make test goes on when its build
# fails: the env is removed and its tests skip, naming the command. The stamp has a new name, so
# that a mosaic env built by an older imgbench (with its own torch) is rebuilt.
MOSAIC_ENV := .venvs/mosaic/.imgbench-env-layered
# the mxnet environment (MXNet 1.9.1: mx.image.imdecode, ImageRecordIter), tested by make test: its
# own numpy 1.23.5 stack (MXNet uses np.bool), 743 MB, 30 s to build here through uv (105-165 s
# through pip at load 3-6; the mxnet wheel comes from PyPI). make test goes on when its build fails: its tests skip
MXNET_ENV := .venvs/mxnet/.imgbench-env-built
# the albumentationsx environment (AlbumentationsX, AGPL-3.0, beside this venv's MIT albumentations
# 2.0.8: both install the `albumentations` package), tested by make test: layered like mosaic, it
# installs albumentationsx, its albucore 0.2.21 and numkong (44 s to build here, measured while
# other jobs ran). make test goes on when its build fails: its tests skip, naming the command
AX_ENV := .venvs/albumentationsx/.imgbench-env-built

.PHONY: setup bench test test-envs test-serial static-checks lint format clean-results mosaic-env mosaic-env-or-skip \
  mxnet-env mxnet-env-or-skip albumentationsx-env albumentationsx-env-or-skip

setup: $(STAMP)

# uv installs what pip resolves, with pip's configured indexes, in about a sixth of the time
# (src/imgbench/installer.py; docs/decisions.md); where its wheel does not install, pip does it
INSTALL := PYTHONPATH=src $(PY) -m imgbench.installer --python $(PY) --quiet

$(STAMP): pyproject.toml Makefile scripts/apt-install.sh src/imgbench/installer.py
	@scripts/apt-install.sh $(APT_PACKAGES)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check 'uv>=0.9' \
	  || echo "warning: uv did not install; pip installs everything (slower)"
	$(INSTALL) -e '.[$(EXTRAS)]'
	@# litdata without its declared deps, which would pull torchvision and a second torch
	$(INSTALL) --no-deps 'litdata>=0.2.76,<0.3'
	@touch $@

bench: setup
	$(VENV)/bin/imgbench dataset build $$($(PY) -c "from imgbench.profiles import get_profile; print(get_profile('$(PROFILE)').dataset)")
	@# one pytest session per environment and dataset (imgbench run: the plan and estimate first,
	@# one progress line, the answer and the commands that show more last); exit 1 = some cases
	@# failed, which are rows with status=failed, so the run still counts
	@rc=0; $(VENV)/bin/imgbench run --profile $(PROFILE) --name $(NAME) -- $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 1 ]; then echo "some cases failed: see the rows with status=failed"; rc=0; fi; \
	exit $$rc

$(TF_ENV): $(STAMP)
	$(VENV)/bin/imgbench env create tensorflow
	@touch $@

mosaic-env: $(MOSAIC_ENV)

$(MOSAIC_ENV): $(STAMP)
	$(VENV)/bin/imgbench env create mosaic
	@touch $@

mosaic-env-or-skip: setup
	@$(MAKE) --no-print-directory $(MOSAIC_ENV) || { rm -rf .venvs/mosaic; \
	  echo "warning: the mosaic env did not build; its tests skip (make mosaic-env to retry)"; }

mxnet-env: $(MXNET_ENV)

$(MXNET_ENV): $(STAMP)
	$(VENV)/bin/imgbench env create mxnet
	@touch $@

mxnet-env-or-skip: setup
	@$(MAKE) --no-print-directory $(MXNET_ENV) || { rm -rf .venvs/mxnet; \
	  echo "warning: the mxnet env did not build; its tests skip (make mxnet-env to retry)"; }

albumentationsx-env: $(AX_ENV)

$(AX_ENV): $(STAMP)
	$(VENV)/bin/imgbench env create albumentationsx
	@touch $@

albumentationsx-env-or-skip: setup
	@$(MAKE) --no-print-directory $(AX_ENV) || { rm -rf .venvs/albumentationsx; \
	  echo "warning: the albumentationsx env did not build; its tests skip (make albumentationsx-env to retry)"; }

# the isolated environments make test needs, built at once (their pip downloads and installs
# overlap; `imgbench run` builds a run's missing ones at once too)
TEST_ENVS := $(TF_ENV) mosaic-env-or-skip mxnet-env-or-skip albumentationsx-env-or-skip

test-envs: setup
	@$(MAKE) --no-print-directory -j4 $(TEST_ENVS)

# ruff and mypy run while the isolated environments build (pip's downloads and unpacking leave a
# core free); the tests start when all of them are done. Two phases, both always run (the first
# failure's exit code is kept): the tests on $(TEST_WORKERS) pytest-xdist workers, a module per
# worker (its bench sessions run once), then the few whose assertions read timings alone (SERIAL
# in tests/conftest.py). Most of a test's time is its own processes starting and waiting (servers,
# Ray, Chromium, interpreters): one pytest process kept this 2-core machine 93% busy (of 200%)
# and took 11:02; three workers 6:30, then 0:55 alone (docs/decisions.md)
TEST_WORKERS ?= 3
PYTEST := $(VENV)/bin/pytest tests/ -p no:cacheprovider --timeout=900
test: setup
	@$(MAKE) --no-print-directory -j5 $(TEST_ENVS) static-checks
	@rc=0; \
	$(PYTEST) --durations=25 -m "not serial" -n $(TEST_WORKERS) --dist loadfile || rc=$$?; \
	$(PYTEST) --durations=5 -m serial || rc=$$(( rc ? rc : $$? )); \
	exit $$rc

static-checks: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	scripts/typecheck.sh $(VENV)/bin/mypy

# every test in one pytest process, in order (a failure that needs no other test beside it)
test-serial: test-envs
	$(PYTEST) --durations=25

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
