# prism_fast — the two set-up commands a new user runs:
#   make demo   system packages (if missing) + venv + package, then evaluate the bundled sample set
#   make test   the same set-up, then the test suite
PYTHON ?= python3
VENV   ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=

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
	$(VENV)/bin/pytest -m "not gpu" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache outputs multirun
