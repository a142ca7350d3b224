#!/bin/sh
# The 8-thread pairwise hang, reproduced and measured (see NOTES.md).
# Run from /work/hang with /work/main's bench/ and pvar_export/ at hand.
set -e
M=${MAIN:-/work/hang/repo}
mkdir -p bin
# 1. the benchmark against Debian's Open MPI; one run, 30 s limit
/usr/bin/mpicc -std=gnu11 -O2 -g -I $M/pvar_export/include -I $M/spc/include $M/bench/pairwise.c \
    -o bin/pairwise-debian -lpthread
timeout 30 /usr/bin/mpirun --allow-run-as-root -np 2 --bind-to none --mca btl self,vader \
    ./bin/pairwise-debian --threads 8 --no-counters || echo "exit $? (124: hung)"
# 2. our two builds of the 4.1.4 tarball (src-unfixed, src-fixed = tarball + patch)
[ -x pfx-fixed/bin/mpirun ] || tools/build_pair.sh
for v in unfixed fixed; do
    pfx-$v/bin/mpicc -std=gnu11 -O2 -g -I $M/pvar_export/include -I $M/spc/include $M/bench/pairwise.c \
        -o bin/pairwise-$v -lpthread
done
# 3. the three interleaved, 200 rounds, 30 s limit; gdb state of every hang
python3 tools/hangrate.py --runs 200 --limit 30 --out logs/interleaved-T8 \
    unfixed=/work/hang/pfx-unfixed/bin/mpirun:/work/hang/bin/pairwise-unfixed \
    fixed=/work/hang/pfx-fixed/bin/mpirun:/work/hang/bin/pairwise-fixed \
    debian=/usr/bin/mpirun:/work/hang/bin/pairwise-debian -- --threads 8 --no-counters
python3 tools/classify.py logs/interleaved-T8
# 4. the off-line harness
sim/build.sh && sim/build/exhaust_unfixed 9 && sim/build/exhaust_fixed 9
