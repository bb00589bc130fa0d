#!/usr/bin/env bash
# Build or push Sparring's container images with whichever engine is present.
#
#   images/build.sh build [NAME...]   build trainer, sandbox and mlx (or only the NAMEs given)
#   images/build.sh push  [NAME...]   push them (build first)
#
# Tags: ${REGISTRY:-localhost}/sparring-<name>:${VERSION}; VERSION defaults to the `version` in
# pyproject.toml. Engine: $ENGINE if set, else the first of docker, podman, buildah on PATH.
# Extra build flags: BUILD_ARGS (e.g. BUILD_ARGS="--build-arg WITH_VLLM=1").
# The build context is the repository root (the Dockerfiles copy pyproject.toml and src/).
set -euo pipefail

# Only shell builtins before the engine check, so that a bare PATH still gets a clear message.
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
root="$(cd "$here/.." && pwd)"
all_images=(trainer sandbox mlx)

usage() {
    echo "usage: $0 build|push [trainer|sandbox|mlx ...]" >&2
    exit 2
}

mode="${1:-}"
case "$mode" in
    build | push) shift ;;
    -h | --help) usage ;;
    *) usage ;;
esac
images=("$@")
if [ ${#images[@]} -eq 0 ]; then
    images=("${all_images[@]}")
fi
for name in "${images[@]}"; do
    if [ ! -f "$root/images/$name/Dockerfile" ]; then
        echo "error: unknown image '$name' (known: ${all_images[*]})" >&2
        exit 2
    fi
done

engine="${ENGINE:-}"
if [ -z "$engine" ]; then
    for candidate in docker podman buildah; do
        if command -v "$candidate" >/dev/null 2>&1; then
            engine="$candidate"
            break
        fi
    done
fi
if [ -z "$engine" ] || ! command -v "$engine" >/dev/null 2>&1; then
    echo "error: no container engine found: install docker, podman or buildah," >&2
    echo "       or set ENGINE=<path>. See docs/cluster-guide.md, 'Building images'." >&2
    exit 1
fi

version="${VERSION:-$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$root/pyproject.toml" | head -n 1)}"
if [ -z "$version" ]; then
    echo "error: could not read version from $root/pyproject.toml (set VERSION=...)" >&2
    exit 1
fi
registry="${REGISTRY:-localhost}"
registry="${registry%/}"
read -r -a extra_args <<<"${BUILD_ARGS:-}"

tag_of() { echo "${registry}/sparring-$1:${version}"; }

build_one() {
    local name="$1" tag platform=()
    tag="$(tag_of "$name")"
    # The mlx image is arm64-only; its FROM line pins the platform, the engine must agree.
    if [ "$name" = "mlx" ]; then
        platform=(--platform linux/arm64)
    fi
    echo ">> building $tag with $engine"
    case "${engine##*/}" in
        buildah)
            buildah bud ${platform[@]+"${platform[@]}"} ${extra_args[@]+"${extra_args[@]}"} -f "$root/images/$name/Dockerfile" \
                -t "$tag" "$root" ;;
        *)
            "$engine" build ${platform[@]+"${platform[@]}"} ${extra_args[@]+"${extra_args[@]}"} -f "$root/images/$name/Dockerfile" \
                -t "$tag" "$root" ;;
    esac
}

push_one() {
    local tag
    tag="$(tag_of "$1")"
    echo ">> pushing $tag with $engine"
    "$engine" push "$tag"
}

for name in "${images[@]}"; do
    if [ "$mode" = "build" ]; then
        build_one "$name"
    else
        push_one "$name"
    fi
done
