#!/usr/bin/env bash
# Builds the Fortran side of the counters (libspc_fortran.so: spc_fortran.c
# and the module spc_counters of spc_counters.f90) with an Open MPI build's
# own mpicc and mpifort, and installs the library into lib/ and
# spc_counters.mod where that mpifort finds Open MPI's own modules (the
# folder of its --showme:compile -I flags that holds mpi.mod: lib/ for Open
# MPI 4.1, which --showme:incdirs leaves out).
# ompi_patches/build_ompi.sh runs it for every build it installs tools into.
#
# usage: tools/fortran/install.sh PREFIX [DEST]
#   PREFIX  the Open MPI build (its bin/mpicc, bin/mpifort, include/spc/)
#   DEST    where to install (default PREFIX), the same folders under it:
#           for a trial build beside a prefix one must not write into
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0" >&2
    exit 2
fi
prefix=$(cd "$1" && pwd)
dest=${2:-$prefix}
here=$(cd "$(dirname "$0")" && pwd)
mpicc=$prefix/bin/mpicc
mpifort=$prefix/bin/mpifort

moddir=
for flag in $("$mpifort" --showme:compile); do
    case "$flag" in -I*) [ -f "${flag#-I}/mpi.mod" ] && moddir=${flag#-I} ;; esac
done
case "$moddir" in
    "$prefix"/*) ;;
    *) echo "install.sh: $mpifort finds no mpi.mod under $prefix (it compiles with: $("$mpifort" --showme:compile))" >&2
       exit 1 ;;
esac
moddir=${moddir#"$prefix"/}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$mpicc" -O2 -g -fPIC -Wall -Wextra -Werror -c "$here/spc_fortran.c" -o "$work/spc_fortran.o"
"$mpifort" -O2 -g -fPIC -Wall -Wextra -Werror -J "$work" -c "$here/spc_counters.f90" -o "$work/spc_counters.o"
# Linked by mpifort, which brings libgfortran if the module needs it and
# this build's rpath; --as-needed drops the Fortran MPI libraries it does not.
"$mpifort" -shared -Wl,--as-needed -Wl,-soname,libspc_fortran.so -o "$work/libspc_fortran.so" \
    "$work/spc_fortran.o" "$work/spc_counters.o"

mkdir -p "$dest/lib" "$dest/$moddir"
install -m 755 "$work/libspc_fortran.so" "$dest/lib/libspc_fortran.so"
install -m 644 "$work/spc_counters.mod" "$dest/$moddir/spc_counters.mod"
echo "installed $dest/lib/libspc_fortran.so and $dest/$moddir/spc_counters.mod"
