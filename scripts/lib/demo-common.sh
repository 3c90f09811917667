# The opening the three demos share (scripts/demo.sh, demo-mlm.sh, demo-finetune.sh), sourced
# right after `set -euo pipefail` with the demo's arguments. A demo takes its settings from
# environment variables only: --help prints the demo's opening comment block, and any other
# argument is refused instead of starting a run.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }
case "${1:-}" in
  "") ;;
  -h|--help) usage 0 ;;
  *) echo "$(basename "$0"): unknown argument '$1' (settings are the environment variables above)" >&2; usage 2 ;;
esac
cd "$(dirname "$0")/.."
# The project's tools (lib/tools.sh: the virtual environment `make demo` makes) come first.
source scripts/lib/tools.sh
if [[ -n "$TOOLS" ]]; then export PATH="${TOOLS%/}:$PATH"; fi
START=$SECONDS
step() { printf '\n== %s (%ds) ==\n' "$1" $((SECONDS - START)); }
