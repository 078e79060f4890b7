# make bench: set up everything, then run the default matrix on the synthetic dataset -> results/*.parquet
# make test:  set up everything, then ruff and the tests
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= default
NAME ?= $(PROFILE)
# Debian packages: libturbojpeg0 (PyTurboJPEG, jpeg4py), libjpeg-turbo-progs (tjbench, the native
# ceiling), chromium (the dashboard's real-browser test), libjpeg62-turbo-dev zlib1g-dev libpng-dev
# (to compile pillow-simd in its own environment)
APT_PACKAGES ?= libturbojpeg0 libjpeg-turbo-progs chromium libjpeg62-turbo-dev zlib1g-dev libpng-dev
# isolated environments whose reader cases `make bench` also runs (none for the quick profile)
ENVS ?= $(if $(filter quick,$(PROFILE)),,pillow-simd tensorflow)
EXTRAS ?= all
STAMP := $(VENV)/.imgbench-installed

.PHONY: setup bench test lint format clean-results

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile scripts/apt-install.sh
	@scripts/apt-install.sh $(APT_PACKAGES)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	@# litdata without its declared deps, which would pull torchvision and a second torch
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps 'litdata>=0.2.76,<0.3'
	@touch $@

bench: setup
	$(VENV)/bin/imgbench dataset build $$($(PY) -c "from imgbench.profiles import get_profile; print(get_profile('$(PROFILE)').dataset)")
	@# exit 1 means some cases failed: they are rows with status=failed, so the run still counts
	@rc=0; $(VENV)/bin/pytest benches/ --imgbench-profile=$(PROFILE) --benchmark-save=$(NAME) \
	  -p no:cacheprovider $(PYTEST_ARGS) || rc=$$?; \
	for env in $(ENVS); do \
	  [ $$rc -le 1 ] || break; \
	  test -x .venvs/$$env/bin/python || $(VENV)/bin/imgbench env create $$env || { rc=2; break; }; \
	  .venvs/$$env/bin/python -m pytest benches/bench_readers.py --imgbench-env=$$env \
	    --imgbench-profile=$(PROFILE) --benchmark-save=$(NAME)-$$env -p no:cacheprovider \
	    $(PYTEST_ARGS) || { r=$$?; [ $$r -le 1 ] || rc=$$r; [ $$r -eq 1 ] && rc=1; }; \
	done; \
	echo; \
	if [ $$rc -eq 1 ]; then echo "some cases failed: see the rows with status=failed"; rc=0; fi; \
	echo "results: $$(ls -t results/*.parquet 2>/dev/null | head -1)"; \
	echo "dashboard: $(VENV)/bin/imgbench dashboard   (or: $(VENV)/bin/streamlit run dashboard/app.py)"; \
	exit $$rc

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/pytest tests/ -p no:cacheprovider

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
