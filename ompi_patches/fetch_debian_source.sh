#!/usr/bin/env bash
# Fetches the orig tarball of a Debian source package into DIR and checks it
# against the Checksums-Sha256 of the package's .dsc; does nothing when DIR
# already holds a tarball that checks out.  Source entries of apt are derived
# from the machine's own deb entries when none exist, so that no host name
# is written anywhere.  Only the .dsc and the orig tarball are fetched
# (apt-get --print-uris names them, apt-helper downloads them through apt's
# own configuration): the Debian diff tarball is not needed, and netpipe
# 3.7.2-8's is missing on the mirror (a whole apt-get source prints a 404).
# With SUITE (another Debian release's, e.g. trixie for openmpi 5.0.7-1), the
# package comes through an apt configuration of its own in DIR/apt-SUITE/:
# one deb-src stanza for SUITE, derived from the machine's deb entry of its
# own release, with its own package lists; the machine's apt configuration
# is neither used nor changed, so nothing of SUITE can be installed.
#
# usage: fetch_debian_source.sh PACKAGE VERSION ORIG_TARBALL DIR [SUITE]
#   e.g. fetch_debian_source.sh openmpi 4.1.4-3 openmpi_4.1.4.orig.tar.xz /var/cache/ompi-spc/src
#        fetch_debian_source.sh openmpi 5.0.7-1 openmpi_5.0.7.orig.tar.xz /var/cache/ompi-spc/src trixie
set -euo pipefail
[ $# -eq 4 ] || [ $# -eq 5 ] || { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2; }
package=$1 version=$2 orig=$3 dir=$4 suite=${5:-}
dsc="${package}_${version#*:}.dsc"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)  # SUITE's apt configuration names it from there
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

# SUITE's own apt configuration, in DIR/apt-SUITE/: its one stanza is the
# machine's deb entry for the machine's own release (the suite named in
# /etc/os-release, not -updates or -security) with Types deb-src and Suites
# SUITE: the same archive, keys and options.  Made and updated on first use.
apt_dir=$dir/apt-$suite
suite_options=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
               -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
prepare_suite() {
    [ -f "$apt_dir/updated" ] && return 0
    local codename sources stanzas=$apt_dir/sources.list.d/$suite.sources
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || { echo "fetch_debian_source.sh: no VERSION_CODENAME in /etc/os-release" >&2; exit 1; }
    rm -rf "$apt_dir"
    mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    : >"$apt_dir/sources.list"
    for sources in /etc/apt/sources.list.d/*.sources; do
        [ -f "$sources" ] || continue
        # Paragraph mode: one stanza a record, one field a line.
        awk -v codename="$codename" -v suite="$suite" 'BEGIN { RS = "" }
            { n = split($0, line, "\n"); deb = 0; ours = 0
              for (i = 1; i <= n; i++) {
                  if (line[i] ~ /^Types: *deb *$/) deb = 1
                  if (line[i] ~ /^Suites:/ && index(" " substr(line[i], 8) " ", " " codename " ")) ours = 1
              }
              if (!deb || !ours) next
              for (i = 1; i <= n; i++) {
                  if (line[i] ~ /^Types:/) line[i] = "Types: deb-src"
                  if (line[i] ~ /^Suites:/) line[i] = "Suites: " suite
                  print line[i]
              }
              print "" }' "$sources" >>"$stanzas"
    done
    [ -s "$stanzas" ] || rm -f "$stanzas"
    if [ -f /etc/apt/sources.list ]; then
        awk -v codename="$codename" -v suite="$suite" \
            '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i == codename) { $1 = "deb-src"; $i = suite; print; next } }' \
            /etc/apt/sources.list >"$apt_dir/sources.list"
    fi
    [ -f "$stanzas" ] || [ -s "$apt_dir/sources.list" ] ||
        { echo "fetch_debian_source.sh: no deb entry of $codename to derive a deb-src entry of $suite from" >&2; exit 1; }
    apt-get "${suite_options[@]}" update -qq >&2
    touch "$apt_dir/updated"
}

verified && exit 0
rm -f "$dsc" "$orig"  # a damaged download is fetched again, not trusted
echo "fetch_debian_source.sh: fetching Debian source package $package=$version${suite:+ of $suite} into $dir" >&2
apt_options=()
if [ -n "$suite" ]; then
    prepare_suite
    apt_options=("${suite_options[@]}")
else
    ls /etc/apt/sources.list.d/ompi-spc-deb-src.* >/dev/null 2>&1 || enable_source_entries
fi
# download_needed: the .dsc and the orig tarball, each checked against the
# SHA256 apt's index lists for it; nothing else of the source package.
download_needed() {
    local uris uri file size sum quiet_as_root=(-qq)
    # apt's sandbox user cannot write into DIR when root runs this (apt warns
    # and downloads as root anyway): say so to apt, which then says nothing.
    [ "$(id -u)" -ne 0 ] || quiet_as_root+=(-o APT::Sandbox::User=root)
    uris=$(apt-get "${apt_options[@]}" --print-uris source -qq "$package=$version") || return 1
    while read -r uri file size sum; do
        [ "$file" = "$dsc" ] || [ "$file" = "$orig" ] || continue
        /usr/lib/apt/apt-helper "${apt_options[@]}" "${quiet_as_root[@]}" download-file "${uri//\'/}" "$dir/$file" "$sum" >&2 || return 1
    done <<<"$uris"
}
if ! download_needed && [ -n "$suite" ]; then
    # SUITE's lists are from its first use: once more with fresh ones.
    rm -f "$apt_dir/updated"
    prepare_suite
    download_needed || true
fi  # judged by the check below
verified || { echo "fetch_debian_source.sh: $orig of $package=$version is missing or does not match $dsc" >&2; exit 1; }
