# Two commands do everything on a fresh machine:  make lab   |   make test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8888
export GPULAB_FAST ?= 1

.PHONY: lab env lint format test test-extended test-slow test-cluster test-unit test-notebooks test-gpu test-kit test-compat wheelhouse \
        venvs-ahead \
        install notebooks handouts site clean

# JupyterHub's proxy is a Node program (npm), not on PyPI: installed beside the venv where npm exists, for the Hub
# test (tests/server/test_hub.py) and tools/jupyterhub_config.py (c.ConfigurableHTTPProxy.command). .ci/run installs
# npm with apt when it may.
CHP_VERSION ?= 5.3.0
CHP         := $(VENV)/node/node_modules/.bin/configurable-http-proxy

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev,lightning,lab,hub,kubernetes,site]'
	if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-audit --no-fund --prefix $(VENV)/node configurable-http-proxy@$(CHP_VERSION); \
	else echo "no npm here: JupyterHub's proxy (configurable-http-proxy) is not installed, the Hub test will fail"; fi
	touch $(STAMP)

install: $(STAMP)

# make lab opens the learner's own copy of the chapters, mywork/ (git-ignored: Run All and autosave change only it,
# so git pull never conflicts). tools/learner_copy.py copies each chapter it lacks (a chapter a pull adds joins) and
# never overwrites one; delete mywork/NN_….ipynb for a fresh copy of that chapter.
lab: $(STAMP)
	@$(PY) tools/learner_copy.py --dest mywork
	@echo "Starting JupyterLab on mywork/ (localhost only, token auth on); open the URL it prints. Ctrl-C stops it."
	GPULAB_FAST=0 $(VENV)/bin/jupyter lab --config=tools/jupyter_server_config.py --notebook-dir=mywork --ip=127.0.0.1 --port=$(PORT) --no-browser $(if $(filter 0,$(shell id -u)),--allow-root,)

# The environment report (what each chapter will do on this machine), through the course's venv: a fresh terminal's
# python3 finds ./gpulab but not the packages installed into .venv.
env: $(STAMP)
	$(PY) -m gpulab env

# make test and make test-compat share the work between TEST_WORKERS pytest-xdist workers (--dist loadfile): a test
# file's tests stay on one worker (its module fixtures run once; nbval's cells share the chapter's kernel), except in
# the files conftest.py names in SPREAD, whose tests are dealt out one by one. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
XDIST        := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# The tests' kernels and ranks each run torch's OpenMP threads, more of them than the machine has cores. libgomp's
# threads spin while they wait for each other, so one whose core another process holds costs its team whole time
# slices; passive waiting (they sleep) suits a shared machine. Measured on 2 cores with one busy loop beside it:
# chapter 00's MLP (3 epochs, without its monitor) took 3.6 s spinning, 1.4 s passive, 1.2 s with the cores free.
# Not for make lab or make notebooks: alone on a machine, spinning is the faster default. OMP_WAIT_POLICY=ACTIVE
# make test to compare.
TEST_ENV     := OMP_WAIT_POLICY=$(or $(OMP_WAIT_POLICY),PASSIVE)

# make test: the unit and meta tests, and every chapter and the workshop guide under nbval once: what a maintainer runs
# before a commit. make test-extended: the tests conftest.py marks extended (the browser, the site, the handouts, the
# package index's dry runs, every chapter on a simulated 8-GPU server, whole scripts under torchrun); CI runs both.
test: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest $(XDIST) -m 'not slow and not extended and not cluster' tests notebooks

test-extended: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest $(XDIST) -m 'extended and not slow and not cluster' tests notebooks

# ruff: the Python files are formatted and checked (pyproject.toml's [tool.ruff]); the chapters are not (lesson text).
# make format rewrites them as make lint wants.
lint: $(STAMP)
	$(VENV)/bin/ruff format --check --diff .
	$(VENV)/bin/ruff check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The tests marked slow (a chapter run once more, or minutes of their own); .ci/run runs them after make test.
test-slow: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest -m slow tests

# The course on a real SLURM cluster: two nodes on this machine, the batch file submitted unchanged with sbatch, and
# a JupyterHub whose servers are SLURM jobs (deploy/batchspawner_config.py) (tools/test_cluster.py, tests/cluster/).
# Root only; installs Debian's SLURM and MUNGE with apt-get where missing,
# and says in one line why it skipped elsewhere. Stops every daemon it started and fails if one is left.
test-cluster: $(STAMP)
	$(TEST_ENV) $(PY) tools/test_cluster.py

test-unit: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest tests

test-notebooks: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest notebooks

# Every chapter, and the workshop guide, run again here (fast mode) and written back normalised: text outputs only, no timestamps, widget
# state, ANSI codes or machine paths (tools/execute_notebooks.py, tools/normalise_notebook.py). The chapters whose
# lessons read timings (04, 05, 07, 08) are saved only from a quiet machine: 2 independent processes must reach 1.7× one
# (gpulab.scaling.how_quiet), before the run and on the chapter's own top line; otherwise the file is left as it was,
# with the reason. GPULAB_ALLOW_NOISY=1 make notebooks saves them anyway (their top line then says "not quiet").
notebooks: $(STAMP)
	$(PY) tools/execute_notebooks.py notebooks/[0-9][0-9]_*.ipynb notebooks/workshop_guide.ipynb

# Only what needs real GPUs: tests and notebook cells marked gpu / multigpu, run by the Python that holds the GPU
# machine's torch (GPU_PYTHON), which is never changed: what it lacks goes into .gpu-deps/ (from wheelhouse/, with no
# index, when that folder exists). Writes evidence/<date>-<gpu>.json and its summary where a GPU ran the tests.
GPU_PYTHON         ?= python3
GPU_PYTHON_VERSION ?= 3.12
test-gpu:
	$(GPU_PYTHON) tools/gpu_run.py

# Where an index is reachable: the wheels test-gpu needs beyond a GPU machine's usual packages, for its Python.
wheelhouse:
	$(PYTHON) tools/gpukit/wheelhouse.py $(GPU_PYTHON_VERSION)

# test-gpu as a GPU machine without internet meets it, on this CPU: tools/gpukit/selftest.sh in a venv of its own
# (KIT_VENV) that holds torch and a GPU machine's usual packages (tools/gpukit/requirements.txt names them) and none of
# the Jupyter stack, in a copy of this checkout that was never installed into (git clone, plus uncommitted changes: no
# gpulab.egg-info registers gpulab's entry points there, as none does on a fresh clone). Building wheelhouse/ there
# needs an index; test-gpu then runs with none. torch is the build constraints.txt pins (pip takes it from the local
# disk where its configuration finds it there, as make install does). Takes minutes: the chapters' CPU cells run.
KIT_VENV     ?= .venv-kit
KIT_PY       := $(KIT_VENV)/bin/python
KIT_STAMP    := $(KIT_VENV)/.installed
KIT_PLATFORM := torch torchvision lightning numpy matplotlib scikit-learn pytest pytest-timeout hypothesis \
                nvidia-ml-py cloudpickle tqdm psutil

$(KIT_STAMP): tools/gpukit/requirements.txt constraints.txt
	rm -rf $(KIT_VENV) && $(PYTHON) -m venv $(KIT_VENV)
	$(KIT_PY) -m pip install --quiet -c constraints.txt $(KIT_PLATFORM)
	touch $(KIT_STAMP)

test-kit: $(KIT_STAMP)
	tools/gpukit/selftest.sh --clone $(abspath $(KIT_PY))

# Every chapter run again with its figures (fast sizes without a GPU, full sizes with one), as HTML and PDF (PDF
# where Chromium is installed), student and instructor editions, and the one-page cheat sheet, into handouts/.
# PAPER=letter for US Letter; HANDOUT_SIZE=fast|full to choose the sizes yourself. GPU_EDITION=1: the GPU edition,
# where each GPU cell that skips here shows what the newest recorded GPU run printed (evidence/<date>-<gpu>/), labelled.
PAPER        ?= a4
HANDOUT_SIZE ?= auto
GPU_EDITION  ?=
handouts: $(STAMP)
	$(PY) tools/handouts.py --paper $(PAPER) --size $(HANDOUT_SIZE) $(if $(filter 1,$(GPU_EDITION)),--gpu-edition,)

# The course as a static website in _site/ (tools/website.py): Sphinx with myst-nb and sphinx-book-theme, offline.
# Each chapter's run is the handouts' (build/executed/: make handouts then make site runs every chapter once), shown
# as the GPU edition. SITE_SIZE=fast|full as HANDOUT_SIZE; REPO_URL=https://github.com/OWNER/REPO for the Colab and
# Kaggle links where the git remote is not that URL. Publishing the folder: docs/publishing.md.
SITE_SIZE ?= auto
REPO_URL  ?=
site: $(STAMP)
	$(PY) tools/website.py --size $(SITE_SIZE) $(if $(REPO_URL),--repo-url $(REPO_URL),)

# The oldest versions the README supports, in a second venv: the platform first as Colab holds it (torch 2.11.0,
# torchvision 0.26.0, ipywidgets 7.7.1, the classic Notebook, no JupyterLab), pip asked whether installing gpulab would
# change any of it (it must not), then gpulab with every direct dependency at its lower bound (constraints-lowest.txt),
# and the platform's versions compared once more. Then what make test runs: the unit and meta tests and every chapter
# under nbval. The extended tests run once, in the main venv (make test-extended).
COMPAT_VENV  ?= .venv-compat
COMPAT_PY    := $(COMPAT_VENV)/bin/python
COMPAT_STAMP := $(COMPAT_VENV)/.installed
COMPAT_BASE  := $(COMPAT_VENV)/.platform
PLATFORM     := torch torchvision ipywidgets matplotlib 'notebook<7'

# The platform alone first (its own stamp): it does not touch the checkout, so .ci/run builds it while other legs run.
$(COMPAT_BASE): constraints-lowest.txt
	rm -rf $(COMPAT_VENV) && $(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_PY) -m pip install --quiet --upgrade pip
	$(COMPAT_PY) -m pip install --quiet -c constraints-lowest.txt $(PLATFORM)
	$(COMPAT_PY) -m pip freeze --exclude-editable > $(COMPAT_VENV)/platform.txt
	touch $(COMPAT_BASE)

$(COMPAT_STAMP): $(COMPAT_BASE) pyproject.toml
	$(COMPAT_PY) tools/install_changes.py -e '.[lightning]'
	$(COMPAT_PY) tools/install_changes.py .
	$(COMPAT_PY) -m pip install --quiet -c constraints-lowest.txt -e '.[dev,lightning]'
	$(COMPAT_PY) tools/install_changes.py --compare $(COMPAT_VENV)/platform.txt torch torchvision ipywidgets matplotlib numpy notebook
	touch $(COMPAT_STAMP)

test-compat: $(COMPAT_STAMP)
	$(TEST_ENV) GPULAB_COMPAT=1 $(COMPAT_PY) -m pytest $(XDIST) -m 'not slow and not extended and not cluster' \
	  tests notebooks

# The two venvs that only pip builds (the compat leg's platform, the GPU kit's torch): nothing of the checkout is
# installed into them, so .ci/run builds them in the background while the first legs run.
venvs-ahead: $(COMPAT_BASE) $(KIT_STAMP)

clean:
	rm -rf $(VENV) $(COMPAT_VENV) $(KIT_VENV) .gpu-deps .pytest_cache build _site *.egg-info
