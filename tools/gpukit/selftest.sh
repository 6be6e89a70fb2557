#!/usr/bin/env bash
# make test-gpu as a GPU machine without internet sees it, tried on this CPU machine:
#   tools/gpukit/selftest.sh [--clone] /path/to/python        (make test-kit runs it with --clone)
# The Python given holds torch and the GPU machine's usual packages (tools/gpukit/requirements.txt says which) and
# nothing of the Jupyter stack. Builds wheelhouse/ for its X.Y (an index is needed for that step only), then runs
# make test-gpu with every index and find-links switched off, and fails if that Python's `pip freeze` changed.
# Then checks what a GPU run relies on in the run's environment (.gpu-deps/ then the checkout on PYTHONPATH): gpulab's
# kernel provisioner registered, gpulab, evidence/ and the chapters the checkout's (tools/gpukit/preflight.py), and
# that the bundle of the GPU edition is written from the chapters it executed (gpu_run.py --simulated-bundle).
# --clone: all of that in a copy of this checkout that was never installed into (git clone, plus the uncommitted
# changes), in a temporary folder removed afterwards. A checkout where `pip install -e .` ran holds gpulab.egg-info,
# which registers gpulab's entry points for any Python with the checkout on its path; a GPU machine's clone has none.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --clone ]; then
  py=${2:?usage: tools/gpukit/selftest.sh --clone /path/to/python-with-torch}
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  git clone --quiet --no-checkout . "$tmp/gpulab"
  git -C "$tmp/gpulab" checkout --quiet --detach "$(git rev-parse HEAD)"
  # what is not committed yet: changed and new files, not the ignored ones (venvs, egg-info, .gpu-deps, wheelhouse)
  # nor a linked .venv
  git ls-files -z --modified --others --exclude-standard -- . ':!.venv*' \
    | tar --null --files-from=- --ignore-failed-read -cf - | tar -xf - -C "$tmp/gpulab"
  git ls-files -z --deleted | (cd "$tmp/gpulab" && xargs -0 -r rm -f --)
  echo "selftest in a clone never installed into: $tmp/gpulab ($(git rev-parse --short HEAD) plus uncommitted changes)"
  rc=0; "$tmp/gpulab/tools/gpukit/selftest.sh" "$py" || rc=$?
  exit $rc
fi
py=${1:?usage: tools/gpukit/selftest.sh [--clone] /path/to/python-with-torch}
version=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
if "$py" -c 'import ipykernel' 2>/dev/null; then
  echo "$py has ipykernel: this check needs a Python without the Jupyter stack, as on the GPU machine"; exit 2
fi
make wheelhouse GPU_PYTHON_VERSION="$version"
rm -rf .gpu-deps
before=$(mktemp); after=$(mktemp); trap 'rm -f "$before" "$after"' EXIT
"$py" -m pip freeze --all > "$before"
rc=0
env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null \
  make test-gpu GPU_PYTHON="$py" || rc=$?
"$py" -m pip freeze --all > "$after"
if ! diff -u "$before" "$after"; then
  echo "make test-gpu changed $py's environment (above)"; exit 1
fi
echo "make test-gpu ran offline from wheelhouse/ and left $py's environment as it was ($(wc -l < "$before") packages)"
group=jupyter_client.kernel_provisioners
PYTHONPATH=".gpu-deps:$PWD" "$py" -c "import importlib.metadata as m
print('$group seen in the run\'s environment:', sorted(e.name for e in m.entry_points(group='$group')))"
if ! PYTHONPATH=".gpu-deps:$PWD" "$py" tools/gpukit/preflight.py "$PWD"; then
  echo "the run's environment is not what a GPU run relies on (above)"; rc=1
fi
# the GPU edition's bundle from the chapters that run executed, with a described 2-GPU machine's facts (SIMULATED,
# into .gpu-deps/simulated-evidence/): the step a GPU run takes after its tests, here in the kit's own environment
if ! "$py" tools/gpu_run.py --simulated-bundle kaggle-2xT4; then
  echo "the kit could not write the GPU edition's bundle from the chapters it ran (above)"; rc=1
fi
exit $rc
