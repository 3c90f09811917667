#!/usr/bin/env bash
# Prepare an English-Inuktitut parallel corpus: scripts/prepare-parallel.sh with
# --src-lang en --tgt-lang iu (same options; --help lists them).
exec "$(dirname "${BASH_SOURCE[0]}")/prepare-parallel.sh" --src-lang en --tgt-lang iu "$@"
