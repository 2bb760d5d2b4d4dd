#!/usr/bin/env bash
# Builds the forge image, the harness bundle and task-base (docs/argo.md, "Images") with podman, buildah or
# docker, whichever is present, from the repository root as the build context.
#
#   images/build.sh [--registry REG] [--tag TAG] [--clis "npm-spec …"] [--debian-base] [--push]
#
#   --registry   image name prefix (default localhost/openforge): REG/forge:TAG, REG/harness-bundle:TAG,
#                REG/task-base:TAG (spec.environment.image's default is ghcr.io/openforge/task-base:0.1.0)
#   --clis       the harness CLIs the bundle carries (default: every pinned CLI, as .ci/run pins them);
#                "" builds a lean bundle with the built-in harnesses only (forge-react, command)
#   --debian-base  first make docker.io/library/debian:bookworm-slim from Debian's own packages with
#                mmdebstrap (a machine that reaches Debian's mirror but no container registry)
#   --push       push the images after building
#
# When the build machine's HTTPS goes through a proxy with its own CA, set FORGE_BUILD_CA to its
# bundle (podman / buildah): it is mounted into the build's RUN steps, never copied into an image.
set -euo pipefail
cd "$(dirname "$0")/.."
registry=localhost/openforge
tag=dev
clis=default
push=0
debian_base=0
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --clis) clis="$2"; shift 2 ;;
    --push) push=1; shift ;;
    --debian-base) debian_base=1; shift ;;
    *) echo "images/build.sh: unknown flag $1 (see the comment at the top)" >&2; exit 2 ;;
  esac
done

tool=""
for candidate in podman buildah docker; do
  if command -v "$candidate" >/dev/null 2>&1; then tool="$candidate"; break; fi
done
[ -n "$tool" ] || { echo "images/build.sh: none of podman, buildah or docker is installed" >&2; exit 1; }

base=docker.io/library/debian:bookworm-slim
if [ "$debian_base" = 1 ] && ! "$tool" image exists "$base" 2>/dev/null; then
  # Debian's minbase from the machine's own apt sources: no registry needed.
  sources=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 || true)
  [ -n "$sources" ] || sources=/etc/apt/sources.list
  out=$(mktemp -d)
  mmdebstrap --quiet --variant=minbase bookworm "$out/base.tar" "$sources"
  "$tool" import "$out/base.tar" "$base"
  rm -rf "$out"
fi

build=()
case "$tool" in
  podman) build=(podman build --isolation chroot --network host --layers) ;;
  buildah) build=(buildah build --isolation chroot --network host --layers) ;;
  docker) build=(docker build --network host) ;;
esac
if [ -n "${FORGE_BUILD_CA:-}" ]; then
  [ "$tool" != docker ] || { echo "images/build.sh: FORGE_BUILD_CA needs podman or buildah (docker build cannot mount a file)" >&2; exit 1; }
  build+=(-v "$FORGE_BUILD_CA:/etc/ssl/certs/build-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/etc/ssl/certs/build-ca.crt)
fi

forge="$registry/forge:$tag"
bundle="$registry/harness-bundle:$tag"
taskbase="$registry/task-base:$tag"
"${build[@]}" -f images/forge/Containerfile -t "$forge" .
bundle_args=(--build-arg "FORGE_IMAGE=$forge")
[ "$clis" = default ] || bundle_args+=(--build-arg "HARNESS_CLIS=$clis")
"${build[@]}" -f images/harness-bundle/Containerfile "${bundle_args[@]}" -t "$bundle" .
"${build[@]}" -f images/task-base/Containerfile -t "$taskbase" images/task-base
if [ "$push" = 1 ]; then
  for image in "$forge" "$bundle" "$taskbase"; do "$tool" push "$image"; done
fi
echo "$forge"
echo "$bundle"
echo "$taskbase"
