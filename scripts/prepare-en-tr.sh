#!/usr/bin/env bash
# Prepare an English-Turkish parallel corpus: scripts/prepare-parallel.sh with
# --src-lang en --tgt-lang tr (same options; --help lists them).
exec "$(dirname "${BASH_SOURCE[0]}")/prepare-parallel.sh" --src-lang en --tgt-lang tr "$@"
