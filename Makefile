# Two commands do everything on a fresh machine:  make lab   |   make test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8888
export GPULAB_FAST ?= 1

.PHONY: lab test test-slow test-unit test-notebooks test-gpu install notebooks handouts clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev,lightning]'
	touch $(STAMP)

install: $(STAMP)

lab: $(STAMP)
	@echo "Starting JupyterLab on notebooks/ (localhost only, token auth on); open the URL it prints."
	GPULAB_FAST=0 $(VENV)/bin/jupyter lab --config=tools/jupyter_server_config.py --notebook-dir=notebooks --ip=127.0.0.1 --port=$(PORT) --no-browser $(if $(filter 0,$(shell id -u)),--allow-root,)

test: $(STAMP)
	$(PY) -m pytest tests notebooks

# The tests marked slow (a chapter run once more, or minutes of their own); .ci/run runs them after make test.
test-slow: $(STAMP)
	$(PY) -m pytest -m slow tests

test-unit: $(STAMP)
	$(PY) -m pytest tests

test-notebooks: $(STAMP)
	$(PY) -m pytest notebooks

# Every chapter run again here (fast mode) and written back normalised: text outputs only, no timestamps, widget
# state, ANSI codes or machine paths (tools/execute_notebooks.py, tools/normalise_notebook.py).
notebooks: $(STAMP)
	$(PY) tools/execute_notebooks.py notebooks/[0-9][0-9]_*.ipynb

# Only what needs real GPUs: tests and notebook cells marked gpu / multigpu.
test-gpu: $(STAMP)
	GPULAB_ONLY_GPU=1 $(PY) -m pytest tests notebooks

# Every chapter run again with its figures (fast sizes without a GPU, full sizes with one), as HTML and PDF (PDF
# where Chromium is installed), student and instructor editions, and the one-page cheat sheet, into handouts/.
# PAPER=letter for US Letter; HANDOUT_SIZE=fast|full to choose the sizes yourself.
PAPER        ?= a4
HANDOUT_SIZE ?= auto
handouts: $(STAMP)
	$(PY) tools/handouts.py --paper $(PAPER) --size $(HANDOUT_SIZE)

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
