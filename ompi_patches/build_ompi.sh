#!/usr/bin/env bash
# Builds Open MPI 4.1.4 (Debian's source package 4.1.4-3) or 5.0.7 (Debian
# 13's 5.0.7-1) into a prefix cached by the content hash of everything it is
# made of.
#
# usage: ompi_patches/build_ompi.sh VARIANT           build if needed; prints the prefix last
#        ompi_patches/build_ompi.sh --cached VARIANT  the prefix if built and current, else exit 3
#        ompi_patches/build_ompi.sh --where [VARIANT] the cache folder, or VARIANT's prefix
#        ompi_patches/build_ompi.sh --tree VARIANT    VARIANT's Open MPI source tree
#   --ompi VERSION (before VARIANT) 4.1.4 (the default) or 5.0.7
#   spc       our patch series and SPC core, SPC compiled in
#   nospc     the same patched tree with SPC compiled out: the overhead baseline
#   upstream  unpatched Open MPI with its own --enable-spc
#   spcdso    spc with components as loadable objects (no --disable-dlopen):
#             the pml and coll monitoring components (seed 003) exist only so
#             (ompi/mca/pml/monitoring/configure.m4); for comparing with them
#
# All use the same configure flags except the SPC choice (and spcdso's).  Each variant
# keeps one fixed prefix and work folder, so the configure line and paths stay
# the same from one version of our sources to the next and ccache serves every
# file a change did not touch.  4.1.4's are CACHE/prefix/VARIANT and
# CACHE/work/VARIANT, 5.0.7's the same under CACHE/5.0.7/ (its logs and locks
# too); the source tarballs of both are in CACHE/src.  Environment: SPC_CACHE
# (default /var/cache/ompi-spc), the one place that default is written (other
# scripts ask --where); JOBS (default nproc).
set -euo pipefail
{ # Parsed whole before it runs, so editing this file cannot disturb a running build.

usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }

mode=build
ompi_version=4.1.4
while [ $# -gt 0 ]; do
    case "$1" in
        --cached) mode=cached; shift ;;
        --where) mode=where; shift ;;
        --tree) mode=tree; shift ;;
        --ompi) [ $# -ge 2 ] || { echo "build_ompi.sh: --ompi takes a version" >&2; exit 2; }
                ompi_version=$2; shift 2 ;;
        *) break ;;
    esac
done
variant=${1:-}
cache=${SPC_CACHE:-/var/cache/ompi-spc}
[[ $cache == /* ]] || cache=$PWD/$cache  # ccache's base_dir (below) must be absolute
# What differs between the versions: Debian's package (and the release it
# comes from: "" for the machine's own), the folder under the cache, and
# configure flags.  5.0.7's bundled PMIx and PRRTE: Debian 12's PMIx 4.2.2
# is older than PRRTE 3.0 accepts; it has no verbs (openib) to leave out.
case "$ompi_version" in
    4.1.4) package_version=4.1.4-3 suite= base=$cache ;;
    5.0.7) package_version=5.0.7-1 suite=trixie base=$cache/5.0.7 ;;
    *) echo "build_ompi.sh: Open MPI $ompi_version is not one this script builds (4.1.4 or 5.0.7)" >&2; exit 2 ;;
esac
# How the messages below name this version in a command ("" for the default).
opt_ompi=
[ "$ompi_version" = 4.1.4 ] || opt_ompi=" --ompi $ompi_version"
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
prefix=$base/prefix/$folder
work=$base/work/$folder
[ "$mode" = where ] && { echo "$prefix"; exit 0; }
[ "$mode" = tree ] && { echo "$work/openmpi-$ompi_version"; exit 0; }

repo=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-$(nproc)}
orig=openmpi_$ompi_version.orig.tar.xz
log=$base/logs/$variant.log
if [ "$variant" != upstream ] && [ ! -d "$repo/ompi_patches/$ompi_version" ]; then
    echo "build_ompi.sh: no patch series for Open MPI $ompi_version yet (ompi_patches/$ompi_version/): only its upstream variant builds" >&2
    exit 2
fi

if [ "$mode" = build ]; then
    mkdir -p "$cache/src" "$base/prefix" "$base/work" "$base/logs"
    exec 9>"$base/$variant.lock"
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
    "$repo/ompi_patches/fetch_debian_source.sh" openmpi "$package_version" "$orig" "$cache/src" $suite
elif [ ! -f "$cache/src/$orig" ]; then
    echo "build_ompi.sh: the $variant build is missing (no source in $cache/src); run ompi_patches/build_ompi.sh$opt_ompi $variant" >&2
    exit 3
fi

# --- what this build is made of ----------------------------------------------

# Fortran as Debian's libopenmpi3 has it (gfortran 12, all three bindings,
# default integer size and extensions), so that our Fortran libraries are
# drop-ins for Debian's; =all makes configure fail if a binding cannot be built.
# The fast networks as Debian's build has them (debian/rules: --with-ucx,
# --with-verbs, --with-libfabric, --with-psm2), so that pml ucx and pml cm
# with mtl ofi or psm2 are there where clusters select them; "with" rather
# than configure's default "if found", so that a missing library fails the
# build instead of silently dropping the component.
configure_flags=(
    --enable-mpi-fortran=all --disable-oshmem --disable-mpi-java
    --with-ucx --with-verbs --with-ofi --with-psm2 --without-cuda
    --with-hwloc=external --with-libevent=external --disable-dlopen
    "--with-package-string=Open MPI $ompi_version (ompi-spc $variant)"
)
if [ "$ompi_version" = 5.0.7 ]; then
    kept=()
    for flag in "${configure_flags[@]}"; do
        [ "$flag" = --with-verbs ] || kept+=("$flag")   # 5.0 has no verbs components
    done
    configure_flags=("${kept[@]}" --with-pmix=internal --with-prrte=internal)
fi
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
tools=()
configure_env=()
if [ "$variant" != upstream ]; then
    # What the installed core and the patched tree are made of (not tests).
    ours=(meson.build meson_options.txt spc/meson.build spc/include spc/src pvar_export/meson.build
          pvar_export/ompi pvar_export/papi "ompi_patches/$ompi_version" ompi_patches/series.sh
          pvar_export/include)
    # What the tools installed beside Open MPI are made of (meson's "tools"
    # install tag, and what is built below with this build's compilers):
    # a change here reinstalls them in seconds and rebuilds no Open MPI.
    tools=(tools/meson.build tools/spc-env tools/spc-check-binary tools/spc-simnodes tools/spc-simcluster tools/examples
           tools/live tools/events/spc_event_logger.c tools/events/spc_launcher_check.h tools/foreign_mpi.c
           tools/fortran
           tools/apps/inputs/h2o.nw)
    # Every Open MPI library and program links the core; with SPC compiled
    # in, also its PAPI export (MPI_Init calls it: pvar_export/ompi/ompi_spc.c).
    libs=-lspc
    if [ "$variant" != nospc ]; then
        libs="-lspc_papi -lspc"
    fi
    configure_env=(CPPFLAGS="-I$prefix/include" LDFLAGS="-L$prefix/lib -Wl,-rpath,$prefix/lib"
                   LIBS="$libs")
fi

# sources_hash PATH...: the content of the files under the PATHs of the
# repository; documents (*.md, such as ompi_patches/5.0.7/PORTING.md) and a
# series' cover letter (series.sh applies the patches without it) are not
# what a build is made of.  A PATH that does not exist is an error: a renamed
# file must not drop out of the hash unnoticed.
sources_hash() {
    [ $# -gt 0 ] || return 0
    for path in "$@"; do
        [ -e "$repo/$path" ] || { echo "build_ompi.sh: $path, a source of the $variant build, is missing" >&2; exit 1; }
    done
    (cd "$repo" && find "$@" -type f ! -path '*/__pycache__/*' ! -name '*.md' ! -name 0000-cover-letter.patch -print0 |
        sort -z | xargs -0 sha256sum)
}
content_hash() {
    {
        echo "openmpi $package_version $(sha256sum <"$cache/src/$orig")"
        echo "variant $variant"
        printf '%s\n' "${configure_flags[@]}" "${configure_env[@]}"
        gcc --version | head -1
        gfortran --version | head -1
        sources_hash "${ours[@]}"
    } | sha256sum | cut -c1-16
}
hash=$(content_hash)
# The tools' hash: of what they are made of and of the build they are for.
tools_hash=
[ ${#tools[@]} -gt 0 ] && tools_hash=$({ echo "$hash"; sources_hash "${tools[@]}"; } | sha256sum | cut -c1-16)

# install_tools: the tools of this project into the prefix of a current build.
install_tools() {
    say "installing the tools (hash $tools_hash) into $prefix"
    rm -rf "$work/spc-tools"
    logged meson setup "$work/spc-tools" "$repo" --prefix="$prefix" --libdir=lib -Dbuildtype=release \
        -Dspc=$([ "$variant" = nospc ] && echo disabled || echo enabled)
    logged meson install -C "$work/spc-tools" --tags tools
    # The MPI_T event logger needs this build's mpi.h (its MPI_T_event_*);
    # the headers it includes are the ones installed in the prefix.
    say "the event logger: $prefix/lib/libspc-event-logger.so"
    logged "$prefix/bin/mpicc" -O2 -g -fPIC -shared -Wall -Wextra -Werror \
        "$repo/tools/events/spc_event_logger.c" -o "$prefix/lib/libspc-event-logger.so" -lpthread
    logged "$repo/tools/fortran/install.sh" "$prefix"
    echo "$tools_hash" >"$prefix/.tools-built"
}
tools_current() { [ -z "$tools_hash" ] || [ "$(cat "$prefix/.tools-built" 2>/dev/null)" = "$tools_hash" ]; }

# install_defaults: ompi_patches/openmpi-mca-params.conf (Debian's defaults
# for the fast networks) as the last block of the prefix's MCA parameter
# file, in place of the one it had; every variant, also a current one.
install_defaults() {
    local file=$prefix/etc/openmpi-mca-params.conf ours=$repo/ompi_patches/openmpi-mca-params.conf
    [ -f "$file" ] || return 0
    if [ "$(sed -n '/^# ompi-spc: Open MPI/,$p' "$file")" != "$(cat "$ours")" ]; then
        sed -i '/^# ompi-spc: Open MPI/,$d' "$file"
        cat "$ours" >>"$file"
    fi
}

if [ -f "$prefix/.built" ] && [ "$(cat "$prefix/.built")" = "$hash" ]; then
    [ "$mode" = build ] && install_defaults
    if ! tools_current; then
        if [ "$mode" = cached ]; then
            echo "build_ompi.sh: the tools in $prefix are not current (Open MPI is);" \
                 "run ompi_patches/build_ompi.sh$opt_ompi $variant (seconds)" >&2
            exit 3
        fi
        install_tools
    fi
    [ "$mode" = build ] && say "up to date (content hash $hash, tools $tools_hash)"
    echo "$prefix"
    exit 0
fi
if [ "$mode" = cached ]; then
    built=$(cat "$prefix/.built" 2>/dev/null || echo none)
    echo "build_ompi.sh: the $variant build in $prefix is not current (built: $built, sources now: $hash);" \
         "run ompi_patches/build_ompi.sh$opt_ompi $variant" >&2
    exit 3
fi

# --- build --------------------------------------------------------------------

started=$(date +%s)
say "building content hash $hash into $prefix (log: $log)"
rm -rf "$work" "$prefix"
mkdir -p "$work"
: >"$log"
tar -xf "$cache/src/$orig" -C "$work"
tree=$work/openmpi-$ompi_version

if [ "$variant" != upstream ]; then
    say "building the SPC core into $prefix"
    logged meson setup "$work/spc-core" "$repo" --prefix="$prefix" --libdir=lib -Dbuildtype=release \
        -Dspc=$([ "$variant" = nospc ] && echo disabled || echo enabled)
    logged meson install -C "$work/spc-core"

    say "applying ompi_patches/$ompi_version/"
    # git am, or patch -p1 where git is missing; no fuzz, no offset.
    logged "$repo/ompi_patches/series.sh" apply "$ompi_version" "$tree"
    # Upstream's driver is replaced whole by ours.
    cp "$repo"/pvar_export/ompi/ompi_spc*.[ch] "$repo"/pvar_export/ompi/ompi_spc*.def "$tree/ompi/runtime/"
    # The series edits Makefile.am files together with their Makefile.in;
    # automake is not run, so the generated files must stay the newer ones.
    find "$tree" -name Makefile.in -exec touch {} +
fi

# ccache serves each variant from the others' compiles: absolute paths under
# the cache folder (the work trees, the prefixes) are hashed relative to the
# compiling folder (base_dir), so a file compiled the same way in another
# variant's tree is a hit, and the folder itself is not hashed (hash_dir
# matters only with -g, which Open MPI's release flags lack; set anyway).
# A file whose preprocessed text differs (SPC_ENABLE, the package string)
# compiles anew.
export CCACHE_BASEDIR=$cache CCACHE_NOHASHDIR=true
# ccache_counts: "direct preprocessed miss" of ccache's statistics so far.
ccache_counts() {
    ccache --print-stats 2>/dev/null |
        awk -F'\t' '{n[$1] = $2} END {print n["direct_cache_hit"] + 0, n["preprocessed_cache_hit"] + 0, n["cache_miss"] + 0}'
}
# ccache_delta BEFORE: this build's hits and misses, as JSON members.
ccache_delta() {
    local before=($1) now=($(ccache_counts))
    echo "\"direct_hits\": $((now[0] - before[0])), \"preprocessed_hits\": $((now[1] - before[1])), \"misses\": $((now[2] - before[2]))"
}
ccache_before=$(ccache_counts)

# How many files make will compile: in each folder a dry run of make visits,
# the objects of the libraries and programs "make all" builds there (not
# the check_ ones), as that folder's Makefile lists them (10 s).  The dry
# run's own compile commands fall about 700 short on 4.1.4: its recursion
# cannot see the convenience libraries a real run makes first, so it gives
# up early in ompi/mpi/fortran/use-mpi-f08.  A target named through a
# configure substitution (lib@OPAL_LIB_NAME@mca_common_ucx.la) keeps the
# substitution's hyphen in its variables' names (automake canonicalizes
# only the literal part), so both spellings are looked up.
planned_compiles() {
    local counter=$work/count-objects.mk
    # shellcheck disable=SC2016 # make's own $(...), not the shell's
    printf '%s\n' 'spc_canon = $(subst +,_,$(subst /,_,$(subst .,_,$(subst -,_,$(1)))))' \
        'spc_canon_dash = $(subst +,_,$(subst /,_,$(subst .,_,$(1))))' \
        'spc-objects: ; @echo $(words $(sort $(foreach t,$(LTLIBRARIES) $(LIBRARIES) $(PROGRAMS),$($(call spc_canon,$(t))_OBJECTS) $($(call spc_canon_dash,$(t))_OBJECTS))))' \
        >"$counter"
    # the dry run ends non-zero (see above): its folders are all it is for
    { make -n -k 2>/dev/null || true; } | sed -n "s/.*Entering directory '\(.*\)'$/\1/p" | sort -u |
        while read -r folder; do make -s -C "$folder" -f Makefile -f "$counter" spc-objects 2>/dev/null || true; done |
        awk '{n += $1} END {print n + 0}'
}
# How many files make install will install: a dry run shows its rules' shell
# loops, not the files, so this is the count the last install of this
# variant made (installed-VARIANT in the logs), if there was one.
planned_installs() { cat "$base/logs/installed-$variant" 2>/dev/null || true; }

# files_in DIR: how many files DIR holds (0 while it does not exist: the
# upstream build has no prefix before its install).
files_in() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

# phase NAME COMMAND...: runs one phase of the build into the log; every 30 s
# says the phase, its time so far and, for make and make install, how many
# of the planned files are done; at its end, how long it took (kept in
# build-info.json).
declare -A phase_seconds=()
phase() {
    local name=$1
    shift
    local began planned="" done_now
    began=$(date +%s)
    case "$name" in
        make) planned=$(planned_compiles) ;;
        install) planned=$(planned_installs) ;;
    esac
    local compiled_before installed_before
    compiled_before=$(grep -cE '^ *(CC|FC|PPFC) ' "$log" || true)
    installed_before=$(files_in "$prefix")
    say "$name${planned:+ ($planned files)}"
    "$@" >>"$log" 2>&1 &
    local pid=$!
    trap "kill $pid 2>/dev/null" EXIT
    local ticks=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        ticks=$((ticks + 1))
        [ $((ticks % 30)) -eq 0 ] && kill -0 "$pid" 2>/dev/null || continue
        case "$name" in
            make) done_now="$(($(grep -cE '^ *(CC|FC|PPFC) ' "$log" || true) - compiled_before)) of $planned files compiled, " ;;
            install) done_now="$(($(files_in "$prefix") - installed_before))${planned:+ of $planned} files installed, " ;;
            *) done_now= ;;
        esac
        say "$name, ${done_now}$(($(date +%s) - began)) s"
    done
    wait "$pid" || { echo "build_ompi.sh: $name failed; last lines of $log:" >&2; tail -30 "$log" >&2; exit 1; }
    trap - EXIT
    phase_seconds[$name]=$(($(date +%s) - began))
    [ "$name" = install ] && echo "$(($(files_in "$prefix") - installed_before))" >"$base/logs/installed-$variant"
    say "$name done in ${phase_seconds[$name]} s"
}

cd "$tree"
# configure's answers (autoconf's cache file) are shared by the variants: its
# checks answer alike for each, since what tells them apart (--enable-spc,
# the package string, the core's -I, -L and -l, which bring only spc_*
# names) is nothing a check looks for.  autoconf refuses a cache written
# under other CPPFLAGS, LDFLAGS or LIBS (its ac_cv_env_ lines), so the copy
# a configure starts from leaves those lines out.  The bundled PMIx and ROMIO
# run configures of their own, which always start afresh.  The cache is kept
# per set of the other flags and compilers: answers cached without Fortran
# (--disable-mpi-fortran) made a Fortran configure find a max array rank of 0.
cache_key=$({ printf '%s\n' "${configure_flags[@]}" | grep -v -e '^--with-package-string=' -e '^--enable-spc$' -e '^--disable-spc$'
              gcc --version | head -1; gfortran --version | head -1; } | sha256sum | cut -c1-12)
shared_config_cache=$base/work/config-$cache_key.cache
# 5.0.7's configure does not survive its own cache: seeded with upstream's
# answers, spc's opal_config.h got OPAL_C_HAVE__GENERIC, _STATIC_ASSERT and
# ATOMIC_CONV_VAR defined empty (its C11 checks set them outside the cached
# tests) and opal/util/minmax.h failed to compile.  It configures afresh.
share_config_cache=true
[ "$ompi_version" = 4.1.4 ] || share_config_cache=false
if $share_config_cache && [ -f "$shared_config_cache" ]; then
    grep -v '^ac_cv_env_' "$shared_config_cache" >config.cache
fi
phase configure ./configure --cache-file=config.cache --prefix="$prefix" "${configure_flags[@]}" \
    CC="ccache gcc" CXX="ccache g++" FC=gfortran "${configure_env[@]}"
if $share_config_cache; then
    cp config.cache "$shared_config_cache.$variant" && mv -f "$shared_config_cache.$variant" "$shared_config_cache"
fi
phase make make -j"$jobs"
phase install make install

cat >"$prefix/build-info.json" <<INFO
{"variant": "$variant", "content_hash": "$hash", "openmpi": "$package_version",
 "configure_flags": "$(printf '%s ' "${configure_flags[@]}")",
 "built": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "seconds": $(($(date +%s) - started)),
 "phase_seconds": {"configure": ${phase_seconds[configure]}, "make": ${phase_seconds[make]},
                   "install": ${phase_seconds[install]}},
 "ccache": {$(ccache_delta "$ccache_before")}}
INFO
echo "$hash" >"$prefix/.built"
install_defaults
[ -n "$tools_hash" ] && install_tools
say "done in $(($(date +%s) - started)) s"
echo "$prefix"
exit
}
