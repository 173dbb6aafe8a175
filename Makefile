# prism_fast — the two set-up commands a new user runs:
#   make demo   system packages (if missing) + venv + package, then evaluate the bundled sample set
#   make test   the same set-up, then the test suite
PYTHON ?= python3
VENV   ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=
# The suite on this many pytest-xdist processes, whole test files to each (module fixtures are set up once):
# most tests wait on one render or one Ray run at a time, so two processes use both cores of a 2-core machine
# (25 -> 17 min there). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2

.PHONY: demo test sysdeps venv bench clean

sysdeps:
	bash scripts/install_system_deps.sh

# The same Python install script as the Dockerfile (tests/test_packaging.py); the image adds the gpu extra.
EXTRAS ?= dev,embeddings

$(STAMP): setup.py
	$(MAKE) sysdeps
	PYTHON=$(PYTHON) bash scripts/install_python.sh $(VENV) $(EXTRAS) editable
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	$(VENV)/bin/prism-fast

test: venv
	$(VENV)/bin/pytest -m "not gpu" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache outputs multirun
