# The two quickstart commands, each doing its own set-up on a fresh machine:
#   make sweep   the main job: a local sweep of matrix/sweeps/smoke.yaml on the simulated engine
#   make test    lint and the whole test suite (.ci/run calls this)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: sweep test lint system-deps clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

sweep: $(STAMP)
	$(BIN)/infermatrix sweep

system-deps:
	bash scripts/install-system-deps.sh

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP) system-deps lint
	$(BIN)/infermatrix validate
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) results test-artifacts
