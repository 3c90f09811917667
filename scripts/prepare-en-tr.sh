#!/usr/bin/env bash
# Prepare an English-Turkish parallel corpus: scripts/prepare-parallel.sh with
# --src-lang en --tgt-lang tr (same options; --help lists them).
first=()  # --check-options stays the first argument
if [[ "${1:-}" == --check-options ]]; then first=(--check-options); shift; fi
exec "$(dirname "${BASH_SOURCE[0]}")/prepare-parallel.sh" "${first[@]}" --src-lang en --tgt-lang tr "$@"
