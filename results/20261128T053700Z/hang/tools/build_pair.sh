#!/bin/sh
# Builds Open MPI 4.1.4 twice with the same flags: src-unfixed (the tarball
# as it is) into pfx-unfixed, src-fixed (the tarball plus the patch) into
# pfx-fixed.  -O2 -g, so a hung rank's ob1 state can be read with gdb.
set -e
export CCACHE_DIR=/work/hang/ccache
for v in unfixed fixed; do
    cd /work/hang/src-$v
    echo "== $v configure $(date -u +%T)"
    ./configure --prefix=/work/hang/pfx-$v --disable-mpi-fortran --disable-oshmem --disable-mpi-java \
        --disable-io-romio --without-ucx --without-verbs --without-ofi --without-psm2 --without-cuda \
        --with-hwloc=external --with-libevent=external --disable-dlopen \
        "--with-package-string=Open MPI 4.1.4 (hang study, $v)" \
        CC="ccache gcc" CFLAGS="-O2 -g" > /work/hang/build-$v.log 2>&1
    echo "== $v make $(date -u +%T)"
    make -j2 >> /work/hang/build-$v.log 2>&1
    make install >> /work/hang/build-$v.log 2>&1
    echo "== $v done $(date -u +%T)"
done
