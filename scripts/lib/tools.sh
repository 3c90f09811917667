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
