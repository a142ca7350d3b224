#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the study need (only
# those missing).  Used by run.sh and .ci/run; needs root (or sudo) when
# something is missing.
set -euo pipefail

packages=(meson ninja-build g++ pkg-config python3 binutils libgtest-dev libbenchmark-dev
          make patch xz-utils ccache flex libhwloc-dev libevent-dev
          libpapi-dev papi-tools libsde1 python3-pandas python3-matplotlib valgrind)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install_deps.sh: missing ${missing[*]}; run me as root" >&2; exit 1; }
    sudo=(sudo)
fi
echo "installing: ${missing[*]}"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
