#!/usr/bin/env bash
# The main job.  Until the Open MPI integration lands, that is the fast-path
# micro-benchmarks: it builds build/release, runs every configuration in one
# binary with interleaved repetitions, and saves under OUT:
#   bench.json   Google Benchmark's JSON, every repetition
#   meta.json    commit, build options, CPU, command line
#   table.md     the README table (analysis/microbench_table.py)
set -euo pipefail
cd "$(dirname "$0")"

usage() {
    cat <<USAGE
usage: ./run.sh [--repetitions N] [--min-time SECONDS] [--out DIR]
  --repetitions N     runs of each benchmark, interleaved at random (default 10)
  --min-time SECONDS  minimum time of one run (default 0.2)
  --out DIR           where results go (default results/microbench/<UTC time>)
USAGE
}

repetitions=10
min_time=0.2
out="results/microbench/$(date -u +%Y%m%dT%H%M%SZ)"
while [ $# -gt 0 ]; do
    case "$1" in
        --repetitions) repetitions=${2:?--repetitions needs a number}; shift 2 ;;
        --min-time) min_time=${2:?--min-time needs seconds}; shift 2 ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[[ "$repetitions" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --repetitions must be a positive integer" >&2; exit 2; }
[[ "$min_time" =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "run.sh: --min-time must be a number of seconds" >&2; exit 2; }
mkdir -p "$out" || { echo "run.sh: cannot create $out" >&2; exit 2; }

echo "== building build/release"
[ -f build/release/build.ninja ] || meson setup build/release >/dev/null
ninja -C build/release bench/spc_bench >/dev/null

python3 - "$out/meta.json" "./run.sh --repetitions $repetitions --min-time $min_time --out $out" <<'PY'
import json, subprocess, sys
def run(*command):
    return subprocess.run(command, capture_output=True, text=True).stdout.strip()
options = json.loads(run("meson", "introspect", "--buildoptions", "build/release"))
cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
json.dump({
    "commit": run("git", "rev-parse", "HEAD") or "unknown",
    "dirty": bool(run("git", "status", "--porcelain")),
    "meson_options": {o["name"]: o["value"] for o in options
                      if o["name"] in ("spc", "storage", "buildtype", "b_sanitize")},
    "cpu": cpu,
    "kernel": run("uname", "-r"),
    "command": sys.argv[2],
}, open(sys.argv[1], "w"), indent=2)
PY

echo "== running spc_bench: $repetitions interleaved repetitions, results in $out"
build/release/bench/spc_bench \
    --benchmark_repetitions="$repetitions" \
    --benchmark_enable_random_interleaving=true \
    --benchmark_min_time="$min_time" \
    --benchmark_out="$out/bench.json" --benchmark_out_format=json \
    --benchmark_display_aggregates_only=true

echo "== table"
python3 analysis/microbench_table.py "$out/bench.json" "$out/table.md"
echo "saved: $out"
