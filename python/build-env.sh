#!/usr/bin/env bash
# Builds the pinned Python reference environments that tests/reference/oracle.py runs in.
#
#   bash python/build-env.sh                        # .venv/reference (what `bun run test` needs)
#   bash python/build-env.sh --with-sglang-native   # also .venv/sglang-native (opt-in; .ci/run builds it)
#   bash python/build-env.sh --dry-run              # say what would be built, build nothing
#   bash python/build-env.sh --force                # rebuild even when the stamp matches
#
# Idempotent: a venv whose .stamp holds the hash of its requirement lines (comments aside) and of
# the Python version is left alone, so `bun run test`, which runs this first, only checks the
# stamp after the first build. Anything else (no stamp, other hash, interrupted build) is deleted
# and built anew. Exits non-zero with a line naming the package that failed. Needs Python 3.11.
#
# .venv/reference: python/requirements.txt (with dependency resolution, which also checks that
# the freeze is complete), then python/requirements-nodeps.txt with --no-deps (vLLM 0.33.0 and
# SGLang 0.5.23, whose declared dependencies cannot be installed next to veRL on a CPU machine).
# Cold, it took 194 s and 4.2 GB on a 2-core machine with an empty pip cache.
# .venv/sglang-native (opt-in, --with-sglang-native): python/requirements-sglang-native.txt, then
# python/requirements-sglang-native-nodeps.txt with --no-deps: SGLang's native GenerateReqInput,
# whose imports need torchvision, hence CUDA torch 2.14.1 (117 s and 6.0 GB more). Only
# tests/reference/engine-requests.test.ts and oracle.test.ts use it; they skip its checks
# without it unless FORGE_REQUIRE_SGLANG_NATIVE=1 (set by .ci/run).
#
# pip is used as configured on the machine. `torch==2.13.0` takes a local CPU wheel where pip
# finds one (a local version such as 2.13.0+cpu sorts after the index's 2.13.0), else the
# package index's build (CUDA on Linux: its nvidia-* wheels add several GB). For the CPU build
# elsewhere:
#   PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu bash python/build-env.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

with_native=0
force=0
dry_run=0
for arg in "$@"; do
  case "$arg" in
    --with-sglang-native) with_native=1 ;;
    --without-sglang-native) with_native=0 ;; # the default; kept so older command lines still work
    --force) force=1 ;;
    --dry-run) dry_run=1 ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    *) echo "build-env: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "build-env: $*" >&2; exit 1; }

# The pins are cp311 wheels: Python 3.11 exactly.
# shellcheck source=python/python311.sh
. "$root/python/python311.sh"
py=$(find_python311 build-env)
pyver=$("$py" -c 'import sys; print(sys.version.split()[0])')

# One build at a time (two `bun run test` at once): the second waits, then finds the stamp.
if [ "$dry_run" = 0 ] && command -v flock >/dev/null 2>&1; then
  mkdir -p "$root/.venv"
  exec 9>"$root/.venv/.build-env.lock"
  flock 9
fi

# Which package a failed pip run was about, from pip's own error lines.
failing_package() {
  local log=$1
  grep -oE "(No matching distribution found for|Could not find a version that satisfies the requirement|Failed to build|Failed building wheel for|Cannot install) [^ ]+" "$log" \
    | head -1 | awk '{print $NF}' || true
}

# pip_install VENV LOG FILE [--no-deps]
pip_install() {
  local venv=$1 log=$2 file=$3; shift 3
  echo "build-env: pip install $* -r ${file#"$root"/}"
  if ! "$venv/bin/python" -m pip install --no-input --progress-bar off --disable-pip-version-check \
      "$@" -r "$file" >>"$log" 2>&1; then
    local pkg
    pkg=$(failing_package "$log")
    tail -n 25 "$log" >&2
    if [ -n "$pkg" ]; then
      die "failed to install $pkg (from ${file#"$root"/}); full log: $log"
    fi
    if grep -q "ResolutionImpossible\|conflicting dependencies" "$log"; then
      die "conflicting pins in ${file#"$root"/} (see the lines above); full log: $log"
    fi
    die "pip install -r ${file#"$root"/} failed (see the lines above); full log: $log"
  fi
}

# check_imports VENV MODULE... : import each module in one process, name the first that fails.
check_imports() {
  local venv=$1; shift
  echo "build-env: checking imports: $*"
  VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$venv/bin/python" - "$@" <<'PY' || die "an import failed in $venv (see above)"
import importlib, sys, traceback
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as e:  # noqa: BLE001 - report whatever stops the import
        traceback.print_exc()
        print(f"build-env: module {name} is not importable: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
PY
}

# build NAME "REQ_FILE..." "NODEPS_FILE..." "MODULE..."
build() {
  local name=$1 reqs=$2 nodeps=$3 modules=$4
  local venv=$root/.venv/$name stamp=$root/.venv/$name/.stamp
  local hash f
  # The requirement lines only: a comment edited does not rebuild the venv.
  hash=$( { echo "python $pyver"; for f in $reqs $nodeps; do echo "== $f"; sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d' "$root/python/$f"; done; } \
    | sha256sum | cut -d' ' -f1)
  if [ "$force" = 0 ] && [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
    echo "build-env: .venv/$name is up to date (its stamp matches python/$reqs)"
    return 0
  fi
  local why="not built yet"
  if [ "$force" = 1 ]; then why="--force"
  elif [ -f "$stamp" ]; then why="its requirements or Python changed since it was built"
  elif [ -e "$venv" ]; then why="an earlier build did not finish"
  fi
  if [ "$dry_run" = 1 ]; then
    echo "build-env: would build .venv/$name with $py ($pyver): $why (--dry-run: nothing built)"
    return 0
  fi
  local start=$SECONDS
  echo "build-env: building .venv/$name with $py ($pyver): $why. The first build takes 3-5 minutes and ~4 GB on disk (6 GB more for sglang-native); later runs only check its stamp."
  rm -rf "$venv"
  mkdir -p "$root/.venv"
  "$py" -m venv "$venv" || die "python -m venv failed for .venv/$name (Debian: apt-get install python3.11-venv)"
  local log=$root/.venv/$name.build.log
  : >"$log"
  for f in $reqs; do pip_install "$venv" "$log" "$root/python/$f"; done
  for f in $nodeps; do pip_install "$venv" "$log" "$root/python/$f" --no-deps; done
  # shellcheck disable=SC2086
  check_imports "$venv" $modules
  echo "$hash" >"$stamp"
  echo "build-env: .venv/$name built in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))"
}

build reference "requirements.txt" "requirements-nodeps.txt" \
  "torch transformers pandas pyarrow verl.trainer.ppo.core_algos verl.utils.dataset.rl_dataset verl.experimental.agent_loop transfer_queue verl.trainer.ppo.v1.agent_loop_tq vllm.tool_parsers vllm.reasoning vllm.renderers.online_renderer vllm.renderers.online_derenderer sglang.srt.entrypoints.openai.protocol"

if [ "$with_native" = 1 ]; then
  build sglang-native "requirements-sglang-native.txt" "requirements-sglang-native-nodeps.txt" \
    "torch torchvision sglang.srt.managers.io_struct"
fi
