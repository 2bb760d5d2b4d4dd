# Sourced by python/build-env.sh, build-notebooks-env.sh and check-pins.sh: the project's Python
# venvs pin cp311 wheels, so each needs Python 3.11 exactly.
#
# find_python311 WHAT: prints the first of $PYTHON, python3.11, python3 that is Python 3.11, or
# exits 1 with one line saying which versions were found and how to install 3.11 (WHAT names the
# caller in that line).
find_python311() {
  local what=$1 cand found
  for cand in "${PYTHON:-}" python3.11 python3; do
    [ -n "$cand" ] || continue
    command -v "$cand" >/dev/null 2>&1 || continue
    if "$cand" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
      command -v "$cand"
      return 0
    fi
  done
  found=$(for cand in "${PYTHON:-}" python3.11 python3; do
    [ -n "$cand" ] && command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null
  done | sort -u | paste -sd, - || true)
  echo "$what: needs Python 3.11 exactly (the pins are cp311 wheels); found ${found:-no python3}. Install Python 3.11 with its venv module (Debian/Ubuntu: apt-get install python3.11 python3.11-venv; or: uv python install 3.11, pyenv install 3.11) and rerun, or set PYTHON=/path/to/python3.11" >&2
  exit 1
}
