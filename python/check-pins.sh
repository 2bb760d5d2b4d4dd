#!/usr/bin/env bash
# Checks that every pin in python/requirements*.txt resolves from the package index alone, as on
# a laptop or a cloud VM: pip's configuration is switched off for these commands (the machine's
# config files, with their local wheel directories, extra indexes and constraints, and every
# PIP_* variable; only PIP_CERT, the CA bundle HTTPS may need, and PIP_DEFAULT_TIMEOUT are kept).
#
#   bash python/check-pins.sh
#
# For each venv python/build-env.sh builds, `pip install --dry-run --ignore-installed` resolves
# its requirements (dependencies included) and then its --no-deps file, nothing installed; pip
# reads only the wheels' metadata (see fast-deps below). Then each pinned name==version must be
# what pip chose, from an https URL (not a local file). The two venvs resolve at once. Exits
# non-zero naming the file and the pin.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=python/python311.sh
. python/python311.sh
py=$(find_python311 check-pins)

clean=(env)
while IFS= read -r var; do clean+=(-u "$var"); done < <(compgen -e | grep '^PIP_' || true)
clean+=(PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1)
[ -z "${PIP_CERT:-}" ] || clean+=("PIP_CERT=$PIP_CERT")
[ -z "${PIP_DEFAULT_TIMEOUT:-}" ] || clean+=("PIP_DEFAULT_TIMEOUT=$PIP_DEFAULT_TIMEOUT")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# pip from a throwaway venv: a system Python may refuse pip install outright (PEP 668's
# externally-managed marker, Debian's), and nothing is installed into it anyway.
"${clean[@]}" "$py" -m venv "$work/venv" || { echo "check-pins: python -m venv failed (Debian: apt-get install python3.11-venv)" >&2; exit 1; }
py=$work/venv/bin/python
# A pip that reads a wheel's metadata by HTTP range requests (--use-feature=fast-deps) where the
# index serves no separate metadata file: tens of MB instead of every wheel (~8 GB, with CUDA
# torch's nvidia-* wheels, measured with the venv's own pip 23).
"${clean[@]}" "$py" -m pip install --quiet --no-cache-dir pip==26.3 || { echo "check-pins: could not install pip 26.3 from the package index" >&2; exit 1; }

# resolve NAME REQ NODEPS: two dry runs, their reports in $work/NAME.{deps,nodeps}.json.
resolve() {
  local name=$1 req=$2 nodeps=$3 log=$work/$1.log
  "${clean[@]}" "$py" -m pip install --dry-run --ignore-installed --use-feature=fast-deps --no-cache-dir --quiet --report "$work/$name.deps.json" \
    -r "python/$req" >"$log" 2>&1 &&
  "${clean[@]}" "$py" -m pip install --dry-run --ignore-installed --use-feature=fast-deps --no-cache-dir --no-deps --quiet --report "$work/$name.nodeps.json" \
    -r "python/$nodeps" >>"$log" 2>&1
}

start=$SECONDS
resolve reference requirements.txt requirements-nodeps.txt & ref=$!
resolve sglang-native requirements-sglang-native.txt requirements-sglang-native-nodeps.txt & nat=$!
failed=0
for job in "reference:$ref" "sglang-native:$nat"; do
  if ! wait "${job#*:}"; then
    echo "check-pins: the ${job%%:*} requirements do not resolve from the package index alone:" >&2
    tail -n 20 "$work/${job%%:*}.log" >&2
    failed=1
  fi
done
[ "$failed" = 0 ] || exit 1

"$py" - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
files = {"reference": ("requirements.txt", "requirements-nodeps.txt"),
         "sglang-native": ("requirements-sglang-native.txt", "requirements-sglang-native-nodeps.txt")}
bad, count = [], 0
for venv, pair in files.items():
    for req, kind in zip(pair, ("deps", "nodeps")):
        chosen = {}
        for item in json.load(open(f"{work}/{venv}.{kind}.json"))["install"]:
            chosen[norm(item["metadata"]["name"])] = (item["metadata"]["version"], item["download_info"]["url"])
        for n, line in enumerate(open(f"python/{req}"), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, version = line.partition("==")
            count += 1
            got = chosen.get(norm(name))
            if got is None:
                bad.append(f"python/{req}:{n}: {line}: pip did not choose it")
            elif got[0] != version:
                bad.append(f"python/{req}:{n}: {line}: the index gave {got[0]}")
            elif not got[1].startswith("https://"):
                bad.append(f"python/{req}:{n}: {line}: came from {got[1]}, not the index")
if bad:
    print("check-pins: pins the package index alone does not satisfy:\n  " + "\n  ".join(bad), file=sys.stderr)
    sys.exit(1)
print(f"check-pins: all {count} pins resolve from the package index alone", end="")
PY
echo " (in $((SECONDS - start)) s)"
