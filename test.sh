#!/usr/bin/env bash
# Runs every test of the project and ends with one "tests: N passed, N failed"
# line (GoogleTest cases counted one by one); exits non-zero if anything failed.
#
# usage: ./test.sh [--core-only] [--build-root DIR] [--meson-option OPTION]...
#   --core-only            skip the Open MPI build and its tests
#   --build-root DIR       where the three build folders go (default: build)
#   --meson-option OPTION  passed to every meson setup/configure (repeatable)
#
# Steps:
#   Open MPI       ompi_patches/build_ompi.sh spc and build_ompi.sh --ompi 5.0.7
#                  spc, side by side (cached: seconds when unchanged; cold,
#                  about 14 and 10 minutes alone on a 2 vCPU AMD EPYC guest)
#   release        everything built; all tests: unit, concurrent, object-file
#                  and disassembly checks, and the MPI tests against the 4.1.4
#                  build; then the MPI and concurrent tests again with
#                  SPC_SITES=flag
#   release-5.0.7  every test that runs against Open MPI, again against the
#                  5.0.7 build, then its MPI tests with SPC_SITES=flag
#   tsan           the concurrent tests under ThreadSanitizer
#   asan           the unit and concurrent tests under AddressSanitizer + UBSan
# Two tests run at once per core (MESON_TESTTHREADS sets another number).
# Warnings are errors in all of them; the folders but release build only what
# their tests need (meson test does).  Every step that fails (configure,
# build, a test, a missing test log) counts as a failure and shows its log.
set -uo pipefail
cd "$(dirname "$0")"
# meson compiles through ccache when it is installed; these let a compile
# of another clone of this repository serve this one's (paths under the
# checkout hashed relative to it, the compiling folder not hashed), as
# ompi_patches/build_ompi.sh does for Open MPI.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true

usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }

core_only=false
build_root=build
extra_options=()
while [ $# -gt 0 ]; do
    case "$1" in
        --core-only) core_only=true; shift ;;
        --build-root) [ $# -ge 2 ] || { usage >&2; exit 2; }; build_root=$2; shift 2 ;;
        --meson-option) [ $# -ge 2 ] || { usage >&2; exit 2; }; extra_options+=("$2"); shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "test.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

passed=0
hangs=0
failed=0

# fail STEP LOG: counts one failure and shows the step's log.
fail() {
    echo "FAILED: $1"
    [ -f "$2" ] && { echo "--- $2 (last 60 lines)"; tail -60 "$2"; echo "---"; }
    failed=$((failed + 1))
}

# setup DIR [meson options...]: configures DIR once, reconfigures it later.
setup() {
    local dir=$1
    shift
    local log=$dir.setup.log
    local options=(-Dwerror=true "$@" "${extra_options[@]}")
    if [ -f "$dir/build.ninja" ]; then
        meson configure "$dir" "${options[@]}" >"$log" 2>&1
    else
        meson setup "$dir" "${options[@]}" >"$log" 2>&1
    fi || { fail "meson setup of $dir" "$log"; return 1; }
}

# tally LOG: "passed failed hangs" from a meson testlog.json; hangs are the
# attempts netpipe_runs.watch found hung and ran again.
tally() {
    python3 - "$1" <<'PY'
import json, re, sys
passed = failed = hangs = 0
for line in open(sys.argv[1]):
    test = json.loads(line)
    hangs += len(re.findall(r"^watch: hung ", test.get("stdout", ""), re.M))
    good = test["result"] in ("OK", "EXPECTEDFAIL")
    cases_ok = len(re.findall(r"^\[       OK \]", test.get("stdout", ""), re.M))
    cases_bad = len(re.findall(r"^\[  FAILED  \] .* \(\d+ ms\)$", test.get("stdout", ""), re.M))
    if cases_ok + cases_bad:
        passed += cases_ok
        failed += cases_bad or (0 if good else 1)
    else:
        passed += good
        failed += not good
print(passed, failed, hangs)
PY
}

# check DIR [--build-all] [meson test options...]: runs the tests, adds to
# the tallies.  meson test builds what they need; --build-all builds every
# target first, so that all of them compile without a warning.
check() {
    local dir=$1
    shift
    local build_all=false
    [ "${1:-}" = --build-all ] && { build_all=true; shift; }
    echo "=== $dir: meson test --num-processes $test_processes $*"
    local began=$SECONDS
    if $build_all; then
        ninja -C "$dir" >"$dir.build.log" 2>&1 || { fail "build of $dir" "$dir.build.log"; return; }
    fi
    # testlog.json, or testlog-<setup>.json with --setup
    rm -f "$dir"/meson-logs/testlog*.json
    meson test -C "$dir" --print-errorlogs --num-processes "$test_processes" "$@"
    local testlog counts
    testlog=$(ls "$dir"/meson-logs/testlog*.json 2>/dev/null | head -1)
    if [ ! -s "$testlog" ] || ! counts=($(tally "$testlog")) || [ ${#counts[@]} -ne 3 ]; then
        fail "meson test in $dir (the build of what its tests need, or the tests) wrote no readable test log" \
            "$dir/meson-logs/testlog.txt"
        return
    fi
    passed=$((passed + counts[0]))
    failed=$((failed + counts[1]))
    hangs=$((hangs + counts[2]))
    echo "=== $dir: ${counts[0]} passed, ${counts[1]} failed in $((SECONDS - began)) s (its build included)"
    [ "${counts[2]}" -eq 0 ] ||
        echo "=== $dir: ${counts[2]} test attempts hung and were ended, their backtraces kept (\"watch: hung\" in $testlog)"
}

mkdir -p "$build_root" || { echo "test.sh: cannot create $build_root" >&2; exit 2; }
ompi_cache=
ompi5_built=false
if [ "$core_only" = false ]; then
    # Both before any test (the tools tests of each version also meet the
    # other's build), side by side: each leaves a core idle for much of its
    # time (a configure is one process), so two finish sooner together.
    echo "=== Open MPI 4.1.4 and 5.0.7 with SPC (ompi_patches/build_ompi.sh [--ompi 5.0.7] spc)"
    setsid -w ompi_patches/build_ompi.sh spc >"$build_root/ompi.log" 2>&1 &
    builds=($!)
    setsid -w ompi_patches/build_ompi.sh --ompi 5.0.7 spc >"$build_root/ompi-5.0.7.log" 2>&1 &
    builds+=($!)
    trap 'kill -TERM -- "${builds[@]/#/-}" 2>/dev/null' EXIT
    if wait "${builds[0]}"; then
        ompi_cache=$(ompi_patches/build_ompi.sh --where)
    else
        fail "the Open MPI build" "$build_root/ompi.log"
    fi
    if wait "${builds[1]}"; then
        ompi5_built=true
    else
        fail "the Open MPI 5.0.7 build" "$build_root/ompi-5.0.7.log"
    fi
    trap - EXIT
fi

# Twice as many tests at once as cores: half the CPU time sat idle with one
# a core (mpirun start-ups, ranks waiting on each other, Slurm's time limit).
test_processes=${MESON_TESTTHREADS:-$((2 * $(nproc)))}
# Open MPI 4.1.4's mpirun makes TMPDIR/ompi.HOST.UID at its start
# (orte/util/session_dir.c:154) and at its end removes the files in it and
# then it, if empty (:446, :428); an mpirun starting while another ends can
# find it made, then gone, and fail in orte_init ("mkdir ... File exists",
# opal/util/os_dirpath.c:116-119).  Seen with four tests at once.  A folder
# of ours in it keeps it from being empty while the tests run (that removal
# leaves folders: opal/util/os_dirpath.c:209-219).
session_host=$(hostname)
case $session_host in *[!0-9.]*) session_host=${session_host%%.*} ;; esac
session_keeper=${TMPDIR:-/tmp}/ompi.$session_host.$(id -u)/ompi-spc-test.$$
mkdir -p -m 0700 "$session_keeper"
trap 'rmdir "$session_keeper" 2>/dev/null' EXIT
if setup "$build_root/release" -Dompi_cache="$ompi_cache"; then
    check "$build_root/release" --build-all
    check "$build_root/release" --setup flagsites --suite ompi --suite concurrent
fi
# the suites without Open MPI ran in release already
if [ "$ompi5_built" = true ] &&
    setup "$build_root/release-5.0.7" -Dompi_cache="$(ompi_patches/build_ompi.sh --where)" -Dompi_version=5.0.7; then
    check "$build_root/release-5.0.7" --no-suite unit --no-suite concurrent --no-suite analysis \
        --no-suite runner --no-suite docs
    check "$build_root/release-5.0.7" --setup flagsites --suite ompi
fi
setup "$build_root/tsan" -Dbuildtype=debugoptimized -Db_sanitize=thread &&
    check "$build_root/tsan" --suite concurrent
setup "$build_root/asan" -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false &&
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 check "$build_root/asan" --suite unit --suite concurrent

echo "=== ./test.sh took $SECONDS s"
[ "$hangs" -eq 0 ] || echo "$hangs test attempts hung and were ended, each run again unless its third (\"watch: hung\" in the logs)"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
