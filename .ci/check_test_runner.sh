#!/usr/bin/env bash
# Test of ./test.sh itself: a broken meson option must make every build step
# fail, show meson's complaint, count the failures and exit non-zero.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

output=$("$repo/test.sh" --core-only --build-root "$root" --meson-option -Dstorage=nonsense 2>&1)
status=$?
echo "$output"
problems=0
expect() { grep -q -- "$1" <<<"$output" || { echo "check_test_runner: missing from the output: $1"; problems=1; }; }
[ "$status" -ne 0 ] || { echo "check_test_runner: test.sh exited 0 after broken setups"; problems=1; }
expect "tests: 0 passed, 3 failed"
expect "FAILED: meson setup of $root/release"
expect 'nonsense'   # meson's own message about the bad value is shown
exit $problems
