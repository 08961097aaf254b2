#!/bin/sh
# Heat's own virtual environment for the network benchmark (benchmarks/cluster_network.py):
# Heat pulls in PyTorch, far too heavy for Shoal's own environment. Heat 1.9 needs Python 3.12
# or later; with only an older Python, Heat 1.8 (the last for 3.11) is installed instead.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
TARGET="$HERE/.venv-heat"
PYTHON=""
for candidate in python3.13 python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3.12"; do
    if "$candidate" -c "" >/dev/null 2>&1; then PYTHON=$candidate; break; fi  # runs: not just a pyenv shim
done
if [ -n "$PYTHON" ]; then HEAT="heat==1.9.*"; else PYTHON=python3; HEAT="heat==1.8.*"; fi
"$PYTHON" -m venv "$TARGET"
"$TARGET/bin/python" -m pip install --quiet "$HEAT" mpich
"$TARGET/bin/python" -c "import heat; print('heat', heat.__version__, 'in', '$TARGET')"
