#!/usr/bin/env bash
# Builds Open MPI 4.1.4 (Debian's source package 4.1.4-3) into a prefix cached
# by the content hash of everything it is made of.
#
# usage: ompi_patches/build_ompi.sh VARIANT           build if needed; prints the prefix last
#        ompi_patches/build_ompi.sh --cached VARIANT  the prefix if built and current, else exit 3
#        ompi_patches/build_ompi.sh --where [VARIANT] the cache folder, or VARIANT's prefix
#        ompi_patches/build_ompi.sh --tree VARIANT    VARIANT's Open MPI source tree
#   spc       our patch series and SPC core, SPC compiled in
#   nospc     the same patched tree with SPC compiled out: the overhead baseline
#   upstream  unpatched 4.1.4 with its own --enable-spc
#   spcdso    spc with components as loadable objects (no --disable-dlopen):
#             the pml and coll monitoring components (seed 003) exist only so
#             (ompi/mca/pml/monitoring/configure.m4); for comparing with them
#
# All use the same configure flags except the SPC choice (and spcdso's).  Each variant
# keeps one fixed prefix and work folder, so the configure line and paths stay
# the same from one version to the next and ccache serves every file a change
# did not touch.  Environment: SPC_CACHE (default /var/cache/ompi-spc), the one
# place that default is written (other scripts ask --where); JOBS (default nproc).
set -euo pipefail
{ # Parsed whole before it runs, so editing this file cannot disturb a running build.

usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }

mode=build
case "${1:-}" in
    --cached) mode=cached; shift ;;
    --where) mode=where; shift ;;
    --tree) mode=tree; shift ;;
esac
variant=${1:-}
cache=${SPC_CACHE:-/var/cache/ompi-spc}
case "$variant" in
    spc | nospc | upstream | spcdso) ;;
    "") [ "$mode" = where ] && { echo "$cache"; exit 0; }
        echo "build_ompi.sh: missing variant" >&2; usage >&2; exit 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build_ompi.sh: unknown variant '${variant}'" >&2; usage >&2; exit 2 ;;
esac
# Every variant's folders have names of one length ("spc_____"), so that the
# prefix paths the builds carry (and put in each process's environment and
# link map) shift no layout between variants.
folder=$(printf '%-8s' "$variant" | tr ' ' _)
prefix=$cache/prefix/$folder
work=$cache/work/$folder
[ "$mode" = where ] && { echo "$prefix"; exit 0; }
[ "$mode" = tree ] && { echo "$work/openmpi-4.1.4"; exit 0; }

repo=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-$(nproc)}
package_version=4.1.4-3
orig=openmpi_4.1.4.orig.tar.xz
log=$cache/logs/$variant.log

if [ "$mode" = build ]; then
    mkdir -p "$cache/src" "$cache/prefix" "$cache/work" "$cache/logs"
    exec 9>"$cache/$variant.lock"
    flock 9  # one build of a variant at a time
fi

say() { echo "[build $variant $(date +%H:%M:%S)] $*" >&2; }

# logged COMMAND...: runs it into the log; on failure shows the log's end.
logged() {
    "$@" >>"$log" 2>&1 || {
        echo "build_ompi.sh: '$*' failed; last lines of $log:" >&2
        tail -30 "$log" >&2
        exit 1
    }
}

# --- the source, verified ----------------------------------------------------

if [ "$mode" = build ]; then
    "$repo/ompi_patches/fetch_debian_source.sh" openmpi "$package_version" "$orig" "$cache/src"
elif [ ! -f "$cache/src/$orig" ]; then
    echo "build_ompi.sh: the $variant build is missing (no source in $cache/src); run ompi_patches/build_ompi.sh $variant" >&2
    exit 3
fi

# --- what this build is made of ----------------------------------------------

configure_flags=(
    --disable-mpi-fortran --disable-oshmem --disable-mpi-java
    --without-ucx --without-verbs --without-ofi --without-psm2 --without-cuda
    --with-hwloc=external --with-libevent=external --disable-dlopen
    "--with-package-string=Open MPI 4.1.4 (ompi-spc $variant)"
)
case "$variant" in
    spc | upstream | spcdso) configure_flags+=(--enable-spc) ;;
    nospc) configure_flags+=(--disable-spc) ;;
esac
if [ "$variant" = spcdso ]; then
    kept=()
    for flag in "${configure_flags[@]}"; do
        [ "$flag" = --disable-dlopen ] || kept+=("$flag")
    done
    configure_flags=("${kept[@]}")
fi

ours=()
configure_env=()
if [ "$variant" != upstream ]; then
    # What the installed core and the patched tree are made of (not tests).
    ours=(meson.build meson_options.txt spc/meson.build spc/include spc/src pvar_export/meson.build
          pvar_export/ompi pvar_export/papi ompi_patches/series
          tools/meson.build tools/spc-env tools/spc-check-binary tools/missing_bindings.c tools/examples
          tools/events/spc_event_logger.c pvar_export/client)
    while read -r patch_name; do
        ours+=("ompi_patches/$patch_name")
    done < <(grep -v '^\s*\(#\|$\)' "$repo/ompi_patches/series")
    # Every Open MPI library and program links the core; with SPC compiled
    # in, also its PAPI export (MPI_Init calls it: pvar_export/ompi/ompi_spc.c).
    libs=-lspc
    if [ "$variant" != nospc ]; then
        libs="-lspc_papi -lspc"
    fi
    configure_env=(CPPFLAGS="-I$prefix/include" LDFLAGS="-L$prefix/lib -Wl,-rpath,$prefix/lib"
                   LIBS="$libs")
fi

content_hash() {
    {
        echo "openmpi $package_version $(sha256sum <"$cache/src/$orig")"
        echo "variant $variant"
        printf '%s\n' "${configure_flags[@]}" "${configure_env[@]}"
        gcc --version | head -1
        if [ ${#ours[@]} -gt 0 ]; then
            (cd "$repo" && find "${ours[@]}" -type f ! -path '*/__pycache__/*' -print0 |
                sort -z | xargs -0 sha256sum)
        fi
    } | sha256sum | cut -c1-16
}
hash=$(content_hash)

if [ -f "$prefix/.built" ] && [ "$(cat "$prefix/.built")" = "$hash" ]; then
    [ "$mode" = build ] && say "up to date (content hash $hash)"
    echo "$prefix"
    exit 0
fi
if [ "$mode" = cached ]; then
    built=$(cat "$prefix/.built" 2>/dev/null || echo none)
    echo "build_ompi.sh: the $variant build in $prefix is not current (built: $built, sources now: $hash);" \
         "run ompi_patches/build_ompi.sh $variant" >&2
    exit 3
fi

# --- build --------------------------------------------------------------------

started=$(date +%s)
say "building content hash $hash into $prefix (log: $log)"
rm -rf "$work" "$prefix"
mkdir -p "$work"
: >"$log"
tar -xf "$cache/src/$orig" -C "$work"
tree=$work/openmpi-4.1.4

if [ "$variant" != upstream ]; then
    say "building the SPC core into $prefix"
    logged meson setup "$work/spc-core" "$repo" --prefix="$prefix" --libdir=lib -Dbuildtype=release \
        -Dspc=$([ "$variant" = nospc ] && echo disabled || echo enabled)
    logged meson install -C "$work/spc-core"

    say "applying ompi_patches/series"
    while read -r patch_name; do
        patch -d "$tree" -p1 --forward --batch --quiet <"$repo/ompi_patches/$patch_name" >>"$log" 2>&1 ||
            { echo "build_ompi.sh: $patch_name does not apply; see $log" >&2; exit 1; }
    done < <(grep -v '^\s*\(#\|$\)' "$repo/ompi_patches/series")
    # Upstream's driver is replaced whole by ours.
    cp "$repo"/pvar_export/ompi/ompi_spc*.[ch] "$tree/ompi/runtime/"
    # The series edits Makefile.am files together with their Makefile.in;
    # automake is not run, so the generated files must stay the newer ones.
    find "$tree" -name Makefile.in -exec touch {} +
fi

# progress PHASE COMMAND...: runs COMMAND, showing compiled files every 30 s
progress() {
    local phase=$1
    shift
    local before expected
    before=$(grep -c '^ *CC\(LD\)\? ' "$log" || true)
    expected=$(cat "$cache/logs/objects-$variant" 2>/dev/null || echo "?")
    "$@" >>"$log" 2>&1 &
    local pid=$!
    trap "kill $pid 2>/dev/null" EXIT
    local ticks=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        ticks=$((ticks + 1))
        if [ $((ticks % 30)) -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
            local done_now=$(($(grep -c '^ *CC\(LD\)\? ' "$log" || true) - before))
            say "$phase: $done_now of ~$expected files compiled, $(($(date +%s) - started)) s so far"
        fi
    done
    wait "$pid" || { echo "build_ompi.sh: $phase failed; last lines of $log:" >&2; tail -30 "$log" >&2; exit 1; }
    trap - EXIT
}

cd "$tree"
say "configure"
progress configure ./configure --prefix="$prefix" "${configure_flags[@]}" \
    CC="ccache gcc" CXX="ccache g++" "${configure_env[@]}"
say "make -j$jobs"
progress make make -j"$jobs"
grep -c '^ *CC\(LD\)\? ' "$log" >"$cache/logs/objects-$variant" || true
say "make install"
progress install make install

if [ "$variant" != upstream ]; then
    # The MPI_T event logger needs this build's mpi.h (its MPI_T_event_*).
    say "the event logger: $prefix/lib/libspc-event-logger.so"
    logged "$prefix/bin/mpicc" -O2 -g -fPIC -shared -Wall -Wextra -Werror \
        -I"$repo/spc/include" -I"$repo/pvar_export/client" "$repo/tools/events/spc_event_logger.c" -o "$prefix/lib/libspc-event-logger.so" -lpthread
fi

cat >"$prefix/build-info.json" <<INFO
{"variant": "$variant", "content_hash": "$hash", "openmpi": "$package_version",
 "configure_flags": "$(printf '%s ' "${configure_flags[@]}")",
 "built": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "seconds": $(($(date +%s) - started))}
INFO
echo "$hash" >"$prefix/.built"
say "done in $(($(date +%s) - started)) s"
echo "$prefix"
exit
}
