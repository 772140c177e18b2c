#!/bin/sh
# kubectl-pyscheduler as krew installs it (examples/krew/pyscheduler.yaml).
# The plugin is Python (the kube-pyscheduler distribution), so on first use
# this script makes a private virtual environment with python3 (3.11 or
# newer), installs kube-pyscheduler==@VERSION@ into it with pip, and from then
# on runs the plugin from there.
#   PYSCHEDULER_KREW_HOME    where the environments live
#                            (default ${XDG_CACHE_HOME:-~/.cache}/kubectl-pyscheduler)
#   PYSCHEDULER_KREW_PYTHON  the interpreter that makes it (default python3)
#   PYSCHEDULER_KREW_SOURCE  what pip installs instead (a wheel file, say)
set -eu
version=@VERSION@
home=${PYSCHEDULER_KREW_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-pyscheduler}
venv=$home/$version
if [ ! -f "$venv/.complete" ]; then
  python=${PYSCHEDULER_KREW_PYTHON:-python3}
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "kubectl-pyscheduler: needs Python 3.11 or newer as '$python' (set PYSCHEDULER_KREW_PYTHON)" >&2
    exit 2
  fi
  source=${PYSCHEDULER_KREW_SOURCE:-kube-pyscheduler==$version}
  echo "kubectl-pyscheduler: first run: installing $source into $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$source" >&2
  touch "$venv/.complete"
fi
exec "$venv/bin/kubectl-pyscheduler" "$@"
