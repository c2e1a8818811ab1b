#!/usr/bin/env bash
# Create ./.venv and install drkernel-rl into it (idempotent; re-runs are instant when nothing changed).
#
#   bash scripts/bootstrap.sh            # the package and its runtime dependencies
#   bash scripts/bootstrap.sh dev,ray    # plus test tools and the optional Ray backend
#
# On a machine without an NVIDIA GPU the CPU build of torch is pinned (torch==2.13.0; set
# PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu where your pip does not already resolve that pin
# to a CPU wheel) together with triton==3.6.0 and numpy<2.4, the combination whose interpreter runs
# honest kernels correctly (docs/background.md says why). With a GPU, the torch/triton already wanted by the
# host are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python_bin="${PYTHON:-python3}"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  pins=()
else
  pins=("torch==2.13.0" "triton==3.6.0" "numpy<2.4")
fi

target="."
[ -n "$extras" ] && target=".[${extras}]"
stamp_key="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)-${extras}-${#pins[@]}"
stamp=".venv/.bootstrap-${stamp_key}"

[ -x .venv/bin/python ] || "$python_bin" -m venv .venv
if [ ! -f "$stamp" ]; then
  echo "bootstrap: installing drkernel-rl${extras:+ [$extras]} into .venv (first run takes ~2 minutes)" >&2
  # a line every 30 s while pip works quietly, so a long install is not mistaken for a hang
  (while sleep 30; do echo "bootstrap: still installing (${SECONDS} s so far; pip's log: .venv/bootstrap.log)" >&2; done) &
  heartbeat=$!
  trap 'kill "$heartbeat" 2>/dev/null || true' EXIT
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>/dev/null || true
  if ! .venv/bin/python -m pip install -q --disable-pip-version-check "${pins[@]}" -e "$target" >.venv/bootstrap.log 2>&1; then
    grep -v "is ignored: it is neither a file nor a directory" .venv/bootstrap.log | tail -n 40 >&2
    echo "bootstrap: pip install failed (full log: .venv/bootstrap.log)" >&2
    exit 1
  fi
  rm -f .venv/.bootstrap-*
  touch "$stamp"
  kill "$heartbeat" 2>/dev/null || true
  echo "bootstrap: done in ${SECONDS} s" >&2
fi
