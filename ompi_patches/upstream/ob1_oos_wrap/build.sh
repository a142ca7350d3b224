#!/bin/sh
# Builds the harness twice, with append_frag_to_ordered_list() and
# remove_head_from_ordered_list() taken at build time from two Open MPI
# trees (nothing of Open MPI is stored here): UNFIXED, an extracted 4.1.4
# tarball, and FIXED, the same with ../v4.1.x-ob1-oos-head-across-seq-wrap.patch.
# usage: build.sh UNFIXED_TREE FIXED_TREE   (then build/exhaust_unfixed 9, build/exhaust_fixed 9)
set -e
[ $# -eq 2 ] || { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2; }
unfixed=$(cd "$1" && pwd) fixed=$(cd "$2" && pwd)
cd "$(dirname "$0")"
mkdir -p build
for v in unfixed fixed; do
    eval tree=\$$v
    f=$tree/ompi/mca/pml/ob1/pml_ob1_recvfrag.c
    { echo '#include "../prelude.h"'
      sed -n '/^append_frag_to_ordered_list(/,/^}/p;/^remove_head_from_ordered_list(/,/^}/p' "$f" |
        sed 's/^append_frag_to_ordered_list(/static void append_frag_to_ordered_list(/;s/^remove_head_from_ordered_list(/static mca_pml_ob1_recv_frag_t *remove_head_from_ordered_list(/'
    } > build/ordered_list_$v.c
    for p in sim2 exhaust; do
        gcc -O2 -g -Wall -include build/ordered_list_$v.c -o build/${p}_$v $p.c
    done
done
