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

cat >"$out/meta.json" <<META
{
  "commit": "$(git rev-parse HEAD 2>/dev/null || echo unknown)",
  "dirty": $( [ -z "$(git status --porcelain 2>/dev/null)" ] && echo false || echo true ),
  "meson_options": "$(meson introspect --buildoptions build/release | python3 -c 'import json,sys; print(" ".join(f"{o["name"]}={o["value"]}" for o in json.load(sys.stdin) if o["name"] in ("spc","storage","buildtype","b_sanitize")))')",
  "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')",
  "kernel": "$(uname -r)",
  "command": "./run.sh --repetitions $repetitions --min-time $min_time --out $out"
}
META

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
