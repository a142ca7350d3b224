#!/usr/bin/env bash
# What a new user does, checked: a fresh clone of this repository's HEAD in a
# folder outside it (no build/ folder, nothing of this checkout's
# surroundings beside it), then the README's two commands there:
# ./run.sh --profile smoke, which must pass, and whose results
# tools/tests/check_smoke.py checks on its own (the demo's table against its
# prediction, every step's record), then ./test.sh.  Prints how long each
# took, on which CPU, and whether the Open MPI builds came from the cache;
# ends with one "tests: N passed, N failed" line (the smoke run and its
# check count one each, test.sh's own count is added).
#
# usage: tools/tests/fresh_clone.sh [--cold] [--keep] [--smoke-only]
#                                   [--profile PROFILE]
#   --cold        nothing cached, as on a new machine: an Open MPI cache and
#                 a ccache of the clone's own (SPC_CACHE, CCACHE_DIR), so
#                 every build is made from nothing; default: this machine's
#                 caches as they are
#   --keep        keep the clone and its caches (default: removed if all passed)
#   --smoke-only  run.sh only, not test.sh
#   --profile P   run.sh's profile (default smoke, what CI runs; short is a
#                 newcomer's ./run.sh); its results are checked the same way
set -uo pipefail
{ # Parsed whole before it runs: bash reads a script as it goes, and an edit
  # to this file during a run (CI takes an hour cold) once broke one.
repo=$(cd "$(dirname "$0")/../.." && pwd)
usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }

cold=false keep=false smoke_only=false profile=smoke
while [ $# -gt 0 ]; do
    case "$1" in
        --cold) cold=true ;;
        --keep) keep=true ;;
        --smoke-only) smoke_only=true ;;
        --profile)
            case "${2:-}" in smoke | short | full) profile=$2; shift ;;
                *) echo "fresh_clone.sh: --profile takes smoke, short or full" >&2; exit 2 ;; esac ;;
        -h | --help) usage; exit 0 ;;
        *) echo "fresh_clone.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ompi-spc-fresh.XXXXXX") || exit 2
# Other users reach a --cold run's Open MPI cache here, as they reach
# /var/cache/ompi-spc otherwise: the cluster test runs a job as nobody, whose
# processes load libmpi from it (mktemp makes the folder 0700).
chmod 755 "$scratch"
clone=$scratch/ompi-spc
git clone --quiet --no-local "$repo" "$clone" || { echo "fresh_clone.sh: cannot clone $repo" >&2; exit 2; }
[ ! -e "$clone/build" ] || { echo "fresh_clone.sh: the clone has a build/ folder" >&2; exit 2; }
if [ "$cold" = true ]; then
    export SPC_CACHE=$scratch/ompi-cache CCACHE_DIR=$scratch/ccache
fi
cache=$(SPC_CACHE=${SPC_CACHE:-} "$clone/ompi_patches/build_ompi.sh" --where)
cached=()
for variant in spc nospc upstream; do
    "$clone/ompi_patches/build_ompi.sh" --cached "$variant" >/dev/null 2>&1 && cached+=("$variant")
done
# ./test.sh's second Open MPI
"$clone/ompi_patches/build_ompi.sh" --ompi 5.0.7 --cached spc >/dev/null 2>&1 && cached+=("5.0.7 spc")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "== fresh clone of $(git -C "$repo" rev-parse --short HEAD) in $clone"
echo "   CPU: $cpu, $(nproc) cores; Open MPI cache $cache; builds current there: ${cached[*]:-none}"

passed=0 failed=0 timings=()
# timed NAME COMMAND...: runs it in the clone, notes its time, counts it.
timed() {
    local name=$1 start status
    shift
    start=$(date +%s)
    (cd "$clone" && "$@")
    status=$?
    timings+=("$name: $(($(date +%s) - start)) s, exit $status")
    return $status
}

# ./test.sh's second Open MPI (5.0.7), built while the smoke runs, in a
# session of its own: the kernel shares the CPU between sessions
# (autogroups), so the two builds at the start go side by side, each using
# what the other leaves idle (a configure is one process), and ./test.sh
# then finds it built or waits for it (build_ompi.sh's lock).  The smoke is
# not a measurement, so nothing it says is disturbed.
prebuild=
if [ "$smoke_only" = false ]; then
    (cd "$clone" && exec setsid -w ompi_patches/build_ompi.sh --ompi 5.0.7 spc) \
        >"$scratch/prebuild-5.0.7.log" 2>&1 &
    prebuild=$!
    trap 'kill -TERM -- -"$prebuild" 2>/dev/null' EXIT
fi

out=$clone/results/$profile
steps=$(cd "$clone" && ./run.sh --help | sed -n 's/.*(default: \([a-z,]*\)).*/\1/p' | head -1)
if timed "./run.sh --profile $profile" ./run.sh --profile "$profile" --out "$out"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
    echo "FAILED: ./run.sh --profile $profile in the fresh clone"
fi
if timed "results checked" /usr/bin/python3 tools/tests/check_smoke.py "$out" "$steps"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
    echo "FAILED: the $profile run's results (tools/tests/check_smoke.py)"
fi

if [ "$smoke_only" = false ]; then
    # Its outcome is ./test.sh's to judge: that build is ./test.sh's first step.
    wait "$prebuild"
    prebuilt=$(sed -n 's/.*\] done in \([0-9]*\) s$/\1 s/p' "$scratch/prebuild-5.0.7.log" | tail -1)
    timings+=("5.0.7 build beside the smoke: ${prebuilt:-none (cached)}")
    trap - EXIT
    timed "./test.sh" bash -o pipefail -c './test.sh 2>&1 | tee "$0"' "$scratch/test.log"
    counts=$(sed -n 's/^tests: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$scratch/test.log" | tail -1)
    if [ -n "$counts" ]; then
        passed=$((passed + ${counts% *}))
        failed=$((failed + ${counts#* }))
    else
        failed=$((failed + 1))
        echo "FAILED: ./test.sh printed no tally"
    fi
fi

echo "== fresh clone ($([ "$cold" = true ] && echo "nothing cached" || echo "builds cached: ${cached[*]:-none}"))," \
     "on $cpu:"
printf '   %s\n' "${timings[@]}"
if [ "$failed" -eq 0 ] && [ "$keep" = false ]; then
    rm -rf "$scratch"
else
    echo "   kept: $scratch"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
exit
}
