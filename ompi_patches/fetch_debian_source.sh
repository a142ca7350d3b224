#!/usr/bin/env bash
# Fetches the orig tarball of a Debian source package into DIR and checks it
# against the Checksums-Sha256 of the package's .dsc; does nothing when DIR
# already holds a tarball that checks out.  Source entries of apt are derived
# from the machine's own deb entries when none exist, so that no host name
# is written anywhere.  Only the orig tarball is required: the Debian diff
# tarball of netpipe 3.7.2-8 is missing on the mirror (apt-get then fails).
#
# usage: fetch_debian_source.sh PACKAGE VERSION ORIG_TARBALL DIR
#   e.g. fetch_debian_source.sh openmpi 4.1.4-3 openmpi_4.1.4.orig.tar.xz /var/cache/ompi-spc/src
set -euo pipefail
[ $# -eq 4 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
package=$1 version=$2 orig=$3 dir=$4
dsc="${package}_${version#*:}.dsc"
mkdir -p "$dir"
cd "$dir"
exec 8>.fetch.lock
flock 8  # builds of several variants may fetch at once

verified() {
    local listed
    [ -f "$dsc" ] && [ -f "$orig" ] || return 1
    listed=$(awk -v file="$orig" '/^Checksums-Sha256:/{on=1; next} /^[^ ]/{on=0}
                                  on && $3 == file {print $1 "  " $3}' "$dsc")
    [ -n "$listed" ] && sha256sum --check --quiet <<<"$listed"
}

enable_source_entries() {
    local list=/etc/apt/sources.list.d/ompi-spc-deb-src.sources found=0
    for sources in /etc/apt/sources.list.d/*.sources; do
        [ -f "$sources" ] && [ "$sources" != "$list" ] || continue
        grep -q '^Types:.*\bdeb-src\b' "$sources" && found=1
        if grep -q '^Types: *deb *$' "$sources"; then
            sed 's/^Types: *deb *$/Types: deb-src/' "$sources" >>"$list"
            echo >>"$list"
            found=1
        fi
    done
    if [ -f /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list; then
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/ompi-spc-deb-src.list
        found=1
    fi
    [ "$found" = 1 ] || { echo "fetch_debian_source.sh: no apt source entries to derive deb-src from" >&2; exit 1; }
    apt-get update -qq
}

verified && exit 0
rm -f "$dsc" "$orig"  # a damaged download is fetched again, not trusted
echo "fetch_debian_source.sh: fetching Debian source package $package=$version into $dir" >&2
ls /etc/apt/sources.list.d/ompi-spc-deb-src.* >/dev/null 2>&1 || enable_source_entries
apt-get source --download-only -qq "$package=$version" >&2 || true  # judged by the check below
verified || { echo "fetch_debian_source.sh: $orig of $package=$version is missing or does not match $dsc" >&2; exit 1; }
