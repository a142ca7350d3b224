#!/usr/bin/env bash
# Runs every test of the project:
#   Open MPI       ompi_patches/build_ompi.sh spc (cached: seconds when unchanged,
#                  about 20 minutes cold), unless --core-only
#   build/release  all tests, including the object-file and disassembly checks
#                  and the MPI tests against that Open MPI build (suite ompi)
#   build/tsan     the concurrent tests under ThreadSanitizer
#   build/asan     the unit and concurrent tests under AddressSanitizer + UBSan
# Warnings are errors in all three.  Ends with one "N passed, N failed" line
# (GoogleTest cases counted one by one) and exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")"

core_only=false
case "${1:-}" in
    "") ;;
    --core-only) core_only=true ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; echo "usage: ./test.sh [--core-only]"; exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (usage: ./test.sh [--core-only])" >&2; exit 2 ;;
esac

passed=0
failed=0

# setup DIR [meson options...]: configures DIR once, reconfigures if it exists.
setup() {
    local dir=$1
    shift
    if [ -f "$dir/build.ninja" ]; then
        meson configure "$dir" -Dwerror=true "$@" >/dev/null
    else
        meson setup "$dir" -Dwerror=true "$@" >/dev/null
    fi
}

# check DIR [meson test options...]: builds and runs, adds to the tallies.
check() {
    local dir=$1
    shift
    echo "=== $dir: meson test $*"
    if ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
        cat "$dir.build.log"
        echo "FAILED: build of $dir"
        failed=$((failed + 1))
        return
    fi
    meson test -C "$dir" --print-errorlogs "$@"
    local tally
    tally=($(python3 - "$dir/meson-logs/testlog.json" <<'PY'
# Counts GoogleTest cases one by one, and any other test as one.
import json, re, sys
passed = failed = 0
for line in open(sys.argv[1]):
    test = json.loads(line)
    good = test["result"] in ("OK", "EXPECTEDFAIL")
    cases_ok = len(re.findall(r"^\[       OK \]", test.get("stdout", ""), re.M))
    cases_bad = len(re.findall(r"^\[  FAILED  \] .* \(\d+ ms\)$", test.get("stdout", ""), re.M))
    if cases_ok + cases_bad:
        passed += cases_ok
        failed += cases_bad or (0 if good else 1)
    else:
        passed += good
        failed += not good
print(passed, failed)
PY
    ))
    passed=$((passed + tally[0]))
    failed=$((failed + tally[1]))
}

mkdir -p build
ompi_cache=
if [ "$core_only" = false ]; then
    echo "=== Open MPI 4.1.4 with SPC (ompi_patches/build_ompi.sh spc)"
    if ompi_patches/build_ompi.sh spc >/dev/null; then
        ompi_cache=${SPC_CACHE:-/var/cache/ompi-spc}
    else
        echo "FAILED: the Open MPI build"
        failed=$((failed + 1))
    fi
fi
setup build/release -Dompi_cache="$ompi_cache" && check build/release
setup build/tsan -Dbuildtype=debugoptimized -Db_sanitize=thread && check build/tsan --suite concurrent
setup build/asan -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false &&
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 check build/asan --suite unit --suite concurrent

echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
