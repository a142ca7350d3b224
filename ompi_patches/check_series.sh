#!/usr/bin/env bash
# Checks that ompi_patches/series applies cleanly (no fuzz, no offset
# warnings treated as failure) to a pristine Open MPI 4.1.4 tree.
# usage: check_series.sh ORIG_TARBALL
set -euo pipefail
tarball=${1:?usage: check_series.sh ORIG_TARBALL}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$tarball" ] || { echo "check_series.sh: no tarball at $tarball" >&2; exit 1; }
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
tar -xf "$tarball" -C "$tree"
applied=0
while read -r patch_name; do
    output=$(patch -d "$tree/openmpi-4.1.4" -p1 --forward --batch <"$here/$patch_name") ||
        { echo "FAIL: $patch_name does not apply:"; echo "$output"; exit 1; }
    if grep -q -E 'fuzz|offset' <<<"$output"; then
        echo "FAIL: $patch_name applies only with fuzz or offset:"; echo "$output"; exit 1
    fi
    echo "ok: $patch_name"
    applied=$((applied + 1))
done < <(grep -v '^\s*\(#\|$\)' "$here/series")
echo "series: $applied patches apply cleanly"
