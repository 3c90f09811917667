# Where the scripts find python and fairseq's programs, sourced by each of them: the directory
# FAIRSEQ_STRUCT_TOOLS names (another environment's bin/), else the checkout's .venv/bin when it
# exists, else PATH. Sets TOOLS to that directory with a trailing slash, or "" for PATH.
_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -n "${FAIRSEQ_STRUCT_TOOLS:-}" ]]; then
  TOOLS="${FAIRSEQ_STRUCT_TOOLS%/}/"
elif [[ -x "$_repo/.venv/bin/python" ]]; then
  TOOLS="$_repo/.venv/bin/"
else
  TOOLS=""
fi
unset _repo

# The directory of the fairseq_struct package that PYTHON (an interpreter of TOOLS) imports:
# fairseq's --user-dir. find_spec locates it without importing it (importing loads fairseq: 3 s).
fairseq_struct_dir() {
  "$1" -c 'import importlib.util, os, sys
spec = importlib.util.find_spec("fairseq_struct")
print(os.path.dirname(spec.origin)) if spec else sys.exit(1)' || {
    echo "$(basename "$0"): $1 has no fairseq_struct package: run 'make venv', or pip install fairseq-struct there (FAIRSEQ_STRUCT_TOOLS names another environment's bin/)" >&2
    return 1
  }
}
