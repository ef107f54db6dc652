# keras-transformer: `make demo` and `make test` set everything up from scratch.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BACKENDS ?= tensorflow jax torch
SLOW_BACKEND ?= torch
export TF_CPP_MIN_LOG_LEVEL ?= 3
export NO_MKDOCS_2_WARNING ?= 1

.PHONY: install test test-all demo translate-catalog adapt-catalog docs docs-serve clean

install: $(STAMP)

# CPU builds of all three backends. torch is pinned to the version whose CPU wheel
# (2.13.0+cpu) this machine's package index serves; from PyPI itself a CPU build needs
# PyTorch's index, as the README's install block says. --no-compile: Python compiles the modules a run
# imports when it imports them, rather than pip compiling every file of three frameworks.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile "torch==2.13.0"
	$(PY) -m pip install -q --no-compile -e ".[all]"
	touch $(STAMP)

# One pytest run per backend; fails if any backend fails. Tests marked slow
# (multi-minute convergence runs, benchmark smoke runs) run on $(SLOW_BACKEND) only; test-all
# runs them everywhere. Each run spreads its tests over $(WORKERS) processes (pytest-xdist):
# most tests spend their time in one thread (tracing, compiling, Python), so two processes
# keep two cores busy.
WORKERS ?= 2
# Settings of the test processes. The tests run thousands of tiny programs, so compiling them
# and handing work between threads is most of their time. The programs are the same (their
# last-bit rounding may differ); test-all keeps the defaults.
# - One thread per process: the $(WORKERS) workers keep the cores busy, and a thread pool in
#   each on top oversubscribes them (PyTorch's generation tests took 30% longer with it).
# - XLA (JAX, and TensorFlow's jit_compile) generates code at its lowest optimization level:
#   the JAX beam-search tests took 15-20% less time, the TensorFlow ones 8%.
# - JAX keeps compiled programs in an on-disk cache, made fresh for each run, that the workers
#   and the tests' subprocesses share.
TEST_ENV = OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 \
	XLA_FLAGS="--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true \
	--xla_cpu_multi_thread_eigen=false $$XLA_FLAGS" \
	JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1
test: $(STAMP)
	@status=0; cache=$$(mktemp -d); trap 'rm -rf "$$cache"' EXIT; for backend in $(BACKENDS); do \
		if [ "$$backend" = "$(SLOW_BACKEND)" ]; then marks=""; \
		else marks="not slow and not backend_independent"; fi; \
		echo "=== KERAS_BACKEND=$$backend $${marks:+(-m '$$marks')}"; \
		$(TEST_ENV) JAX_COMPILATION_CACHE_DIR="$$cache" KERAS_BACKEND=$$backend \
			$(PY) -m pytest -q -n $(WORKERS) --dist worksteal -m "$$marks" || status=1; \
	done; \
	echo "=== mkdocs build --strict"; $(VENV)/bin/mkdocs build --strict -q || status=1; \
	exit $$status

test-all: export KT_HYPOTHESIS_EXAMPLES = 50
test-all: $(STAMP)
	@status=0; for backend in $(BACKENDS); do \
		echo "=== KERAS_BACKEND=$$backend (all tests)"; \
		KERAS_BACKEND=$$backend $(PY) -m pytest -q -n $(WORKERS) || status=1; \
	done; exit $$status

# The main job: English->German on the system's gettext catalogs, about 9 minutes on
# 2 quiet CPU cores once installed (7 of them training), ending with BLEU on the message and new-program splits,
# the copy baselines, placeholder and white-space fidelity, samples, and a filled catalog.
demo: $(STAMP)
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) examples/translate.py --minutes 7 \
		--vocabulary-size 2000 --tokens-per-batch 1024 --max-length 32 --bucket-width 8 \
		--warmup 800 --learning-rate-scale 0.65 --output runs/demo
	$(MAKE) --no-print-directory translate-catalog RUN=runs/demo

# Fills the empty catalog of a program held out of training (written by examples/translate.py)
# with translate-po, then checks it as msgfmt would compile it.
RUN ?= runs/demo
translate-catalog: $(STAMP)
	@template=$$($(PY) -c "import json; print(json.load(open('$(RUN)/results.json'))['template'] or '')"); \
	if [ -z "$$template" ]; then echo "no program was held out of training: nothing to fill"; exit 0; fi; \
	output=$${template%.pot}.po; \
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(VENV)/bin/keras-transformer translate-po "$$template" \
		--model $(RUN)/translator.keras -o "$$output" && \
	msgfmt --check-format --use-fuzzy --statistics -o /dev/null "$$output" && \
	echo "msgfmt --check-format --use-fuzzy accepts $$output"

# Adapts the run's translator to half of the held-out program's catalog (kept translated, as a
# team would have it) with adapt-po (LoRA), fills the other half with translate-po before and
# after, and prints both BLEUs against the human translations (about 5 minutes on 2 cores).
adapt-catalog: $(STAMP)
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) examples/adapt_catalog.py --run $(RUN)

# The documentation site, built into site/ (warnings fail the build).
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP)
	$(VENV)/bin/mkdocs serve

clean:
	rm -rf $(VENV) build dist *.egg-info site
