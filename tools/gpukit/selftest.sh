#!/usr/bin/env bash
# make test-gpu as a GPU machine without internet sees it, tried on this CPU machine:
#   tools/gpukit/selftest.sh /path/to/python
# The Python given holds torch and the GPU machine's usual packages (tools/gpukit/requirements.txt says which) and
# nothing of the Jupyter stack. Builds wheelhouse/ for its X.Y (an index is needed for that step only), then runs
# make test-gpu with every index and find-links switched off, and fails if that Python's `pip freeze` changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${1:?usage: tools/gpukit/selftest.sh /path/to/python-with-torch}
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
exit $rc
