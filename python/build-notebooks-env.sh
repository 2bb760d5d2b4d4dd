#!/usr/bin/env bash
# Builds the venv the Jupyter notebooks in analytics/notebooks/ run in (DuckDB's Python API,
# pandas, matplotlib, and nbclient / ipykernel / jupytext to execute them from a test).
#
#   bash python/build-notebooks-env.sh                 # .venv/notebooks
#   bash python/build-notebooks-env.sh --venv DIR      # another location
#   bash python/build-notebooks-env.sh --force         # rebuild even when the stamp matches
#
# Idempotent like python/build-env.sh: a venv whose .stamp holds the hash of
# python/requirements-notebooks.txt (and of the Python version) is left alone; anything else is
# deleted and built anew. Cold: 123 s and 450 MB on the shared 2-core machine (wheels only).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/.venv/notebooks
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --venv) venv=$(realpath -m "$2"); shift ;;
    --force) force=1 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-notebooks-env: unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
die() { echo "build-notebooks-env: $*" >&2; exit 1; }

# shellcheck source=python/python311.sh
. "$root/python/python311.sh"
py=$(find_python311 build-notebooks-env)

req=$root/python/requirements-notebooks.txt
hash=$( { echo "python $("$py" -c 'import sys; print(sys.version.split()[0])')"; cat "$req"; } | sha256sum | cut -d' ' -f1)
if [ "$force" = 0 ] && [ -x "$venv/bin/python" ] && [ -f "$venv/.stamp" ] && [ "$(cat "$venv/.stamp")" = "$hash" ]; then
  echo "build-notebooks-env: ${venv#"$root"/} is up to date"
  exit 0
fi
start=$SECONDS
echo "build-notebooks-env: building ${venv#"$root"/} with $py"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$py" -m venv "$venv" || die "python -m venv failed (Debian: apt-get install python3.11-venv)"
log=$venv/build.log
if ! "$venv/bin/python" -m pip install --no-input --progress-bar off --disable-pip-version-check \
    --only-binary=:all: -r "$req" >"$log" 2>&1; then
  tail -n 25 "$log" >&2
  die "pip install -r python/requirements-notebooks.txt failed (see the lines above); full log: $log"
fi
"$venv/bin/python" -c 'import duckdb, pandas, matplotlib, nbclient, ipykernel, jupytext' \
  || die "an import failed in ${venv#"$root"/} (see above)"
echo "$hash" >"$venv/.stamp"
echo "build-notebooks-env: ${venv#"$root"/} built in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))"
