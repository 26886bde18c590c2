# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# Both create .venv, install TensorFlow and tfliquid (compiling the C++ ops against that TensorFlow) and the
# Debian packages the tests use when they are missing.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
INSTALLED := $(VENV)/.tfliquid-installed
SOURCES := setup.py pyproject.toml $(shell find ops protos -type f 2>/dev/null)
PYTEST_ARGS ?=

.PHONY: demo test lint install system-deps bench clean gpu-check

demo: $(INSTALLED)
	$(PY) examples/pcr_demo.py

# The 15 slowest tests are listed at the end: pytest on 2 cores is kept under 10 minutes. Two test processes
# (pytest-xdist): much of the suite waits on subprocesses, throttled reads and servers, not on the CPU. Tests of
# one xdist_group share a process (the guides' blocks read what the README's make).
test: lint $(INSTALLED)
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=15 $(PYTEST_ARGS)

# Style is checked, not fixed, here; `ruff format .` and `clang-format -i` fix it (settings: pyproject.toml,
# .clang-format).
CPP_SOURCES := $(shell find ops tests/cuda_host -name '*.cc' -o -name '*.h' 2>/dev/null)

lint: $(VENV)/.deps-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@echo "$(VENV)/bin/clang-format --dry-run --Werror ops/ tests/cuda_host/ ($(words $(CPP_SOURCES)) files)"
	@$(VENV)/bin/clang-format --dry-run --Werror $(CPP_SOURCES)

install: $(INSTALLED)

# The L3 GPU decoder on this machine's GPU, without TensorFlow or the virtual environment (docs/l3.md).
gpu-check:
	tests/cuda_device/run.sh

bench: $(INSTALLED)
	$(PY) -m benchmarks.pcr_read
	$(PY) -m benchmarks.convert
	$(PY) -m benchmarks.l3_decode
	$(PY) -m benchmarks.cache
	$(PY) -m benchmarks.autotune
	$(PY) -m benchmarks.analyzer
	$(PY) -m benchmarks.beam_convert
	$(PY) -m benchmarks.service
	$(PY) -m benchmarks.clairvoyant

# jpegtran/cjpeg (tests, fixtures), the libjpeg headers (the lossless transcoder links libjpeg) and ccache (the
# C++ tests' sanitizer builds compile again only what changed: ops/tests/compiler.sh).
system-deps:
	@if ! command -v jpegtran >/dev/null || ! command -v cjpeg >/dev/null || [ ! -f /usr/include/jpeglib.h ] \
	    || ! command -v ccache >/dev/null; then \
	  echo "installing Debian packages libjpeg-turbo-progs libjpeg-dev ccache"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libjpeg-turbo-progs libjpeg-dev ccache >/dev/null; \
	fi

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps-installed: requirements-dev.txt | $(PY)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	$(PIP) check  # apache-beam (the [beam] extra) must resolve beside TensorFlow: protobuf, grpcio, numpy
	touch $@

# ccache, where installed, makes a rebuild (another clone, an edited source) compile only what changed: paths below
# the checkout are hashed relative to it, and the working directory not at all.
$(INSTALLED): $(VENV)/.deps-installed $(SOURCES) | system-deps
	if command -v ccache >/dev/null; then \
	  export CC="ccache gcc" CXX="ccache g++" CCACHE_BASEDIR="$(CURDIR)" CCACHE_NOHASHDIR=1; \
	fi; \
	$(PIP) install -q --no-build-isolation --no-deps -e .
	touch $@

clean:
	rm -rf build *.egg-info tfliquid/_lib/*.so tfliquid/_proto/*_pb2.py
