#!/usr/bin/env bash
# The main job: installs the Debian packages it needs, builds the three Open
# MPI builds (cached by content hash), shows the counters at work, then runs
# the overhead study of the SPC paper (seed 004, sections 5 and 6) on our
# implementation and on upstream Open MPI 4.1.4's, side by side.  Each step
# is saved under OUT (default results/<UTC time>):
#   demo/        an MPI program's counters read through MPI_T and PAPI, and the finalize report
#   microbench/  fast-path and read micro-benchmarks: JSON of every repetition, table.md
#   callgrind/   instructions per message in PMPI_Send and the receive match path
#   netpipe/     NetPIPE latency and bandwidth sweeps: raw outputs, overhead plots, tables
#   pairwise/    the multi-threaded pairwise benchmark (Table 3) and message rates
#   ab/          the in-process A/B ping-pong (counters on and off in one pair of processes)
#   summary.md   every table, with date, machine and this command; meta.json
# A step that fails is recorded and the others still run; the exit status
# is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")"

all_steps="demo,microbench,callgrind,netpipe,pairwise,ab"
usage() {
    cat <<USAGE
usage: ./run.sh [--profile short|full] [--only STEPS] [--out DIR]
  --profile short|full  short (default): a few minutes in all, for a look; full:
                        10 rounds of everything, about 20 minutes here
  --only STEPS          comma list of steps to run (default: $all_steps)
  --out DIR             where results go (default results/<UTC time>)
USAGE
}

profile=short
steps=$all_steps
out="results/$(date -u +%Y%m%dT%H%M%SZ)"
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile=${2:-}; shift 2 || { usage >&2; exit 2; } ;;
        --only) steps=${2:-}; shift 2 || { usage >&2; exit 2; } ;;
        --out) out=${2:-}; shift 2 || { usage >&2; exit 2; } ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$profile" in
    short) repetitions=3 min_time=0.05 messages=2000 ;;
    full) repetitions=10 min_time=0.2 messages=20000 ;;
    *) echo "run.sh: --profile must be short or full, not '$profile'" >&2; exit 2 ;;
esac
IFS=, read -r -a chosen <<<"$steps"
for step in "${chosen[@]}"; do
    [[ ",$all_steps," == *",$step,"* ]] || { echo "run.sh: unknown step '$step' (steps: $all_steps)" >&2; exit 2; }
done
mkdir -p "$out" || { echo "run.sh: cannot create $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
cache=${SPC_CACHE:-/var/cache/ompi-spc}
command_line="./run.sh --profile $profile --only $steps --out $out"
failed=()

./install_deps.sh || { echo "run.sh: installing the Debian packages failed" >&2; exit 1; }
echo "== Open MPI builds spc, nospc, upstream (cached by content hash; a cold one takes 8 to 16 minutes)"
for variant in spc nospc upstream; do
    ompi_patches/build_ompi.sh "$variant" >/dev/null || { echo "run.sh: the $variant build failed" >&2; exit 1; }
done

# The programs of the study come from one build folder, built against the
# cached spc build (for the PAPI and MPI_T read benchmark).
study_build=build/study
if [ ! -f "$study_build/build.ninja" ]; then
    meson setup "$study_build" -Dompi_cache="$cache" >/dev/null || exit 1
fi
ninja -C "$study_build" bench/spc_bench bench/spc_read_bench bench/spc_demo >/dev/null || { echo "run.sh: building the benchmarks failed" >&2; exit 1; }

/usr/bin/python3 - "$out/meta.json" "$command_line" "$profile" <<'PY'
import json, os, sys
sys.path.insert(0, "netpipe_runs")
import study
prefixes = {v: os.path.join(os.environ.get("SPC_CACHE", "/var/cache/ompi-spc"), "prefix", v)
            for v in ("spc", "nospc", "upstream")}
json.dump({"command": sys.argv[2], "profile": sys.argv[3], "machine": study.machine(),
           "builds": {v: study.build_info(p) for v, p in prefixes.items()}},
          open(sys.argv[1], "w"), indent=2)
PY

mpirun_spc() {
    env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$cache/prefix/spc/bin/mpirun" "$@"
}
demo() {
    mkdir -p "$out/demo"
    mpirun_spc -np 2 --bind-to core --mca btl self,vader --mca mpi_spc_dump_enabled true \
        "$study_build/bench/spc_demo" 2>&1 | tee "$out/demo/output.txt"
}
microbench() {
    mkdir -p "$out/microbench"
    local options=(--benchmark_repetitions="$repetitions" --benchmark_enable_random_interleaving=true
                   --benchmark_min_time="$min_time" --benchmark_display_aggregates_only=true)
    "$study_build/bench/spc_bench" "${options[@]}" \
        --benchmark_out="$out/microbench/bench.json" --benchmark_out_format=json &&
    mpirun_spc -np 1 --bind-to core "$study_build/bench/spc_read_bench" "${options[@]}" \
        --benchmark_out="$out/microbench/reads.json" --benchmark_out_format=json &&
    python3 analysis/microbench_table.py "$out/microbench/bench.json" "$out/microbench/reads.json" \
        --out "$out/microbench/table.md"
}
callgrind() { python3 netpipe_runs/callgrind_counts.py --messages "$messages" --out "$out/callgrind"; }
netpipe() { python3 netpipe_runs/netpipe_sweep.py --profile "$profile" --out "$out/netpipe"; }
pairwise() { python3 netpipe_runs/pairwise_runs.py --profile "$profile" --out "$out/pairwise"; }
ab() { python3 netpipe_runs/ab_runs.py --profile "$profile" --out "$out/ab"; }

started=$(date +%s)
for k in "${!chosen[@]}"; do
    step=${chosen[$k]}
    echo "== step $((k + 1)) of ${#chosen[@]}: $step ($(($(date +%s) - started)) s so far)"
    "$step" || { failed+=("$step"); echo "run.sh: step $step failed; going on" >&2; }
done

echo "== reports"
# (Debian's pandas and matplotlib import only under /usr/bin/python3)
if [ -d "$out/netpipe" ]; then
    /usr/bin/python3 analysis/netpipe_report.py "$out/netpipe" >/dev/null || failed+=(netpipe-report)
fi
measured=()
for folder in pairwise ab; do
    [ -d "$out/$folder" ] && measured+=("$out/$folder")
done
if [ ${#measured[@]} -gt 0 ]; then
    /usr/bin/python3 analysis/pairwise_report.py "${measured[@]}" >/dev/null || failed+=(pairwise-report)
fi
python3 analysis/study_summary.py "$out" >/dev/null || failed+=(summary)
echo "saved in $out after $(($(date +%s) - started)) s:"
echo "  meta.json (machine, builds, command), and the tables and figures:"
(cd "$out" && find . -name '*.md' -o -name '*.png' | sort | sed 's|^\./|  |')
if [ ${#failed[@]} -gt 0 ]; then
    echo "run.sh: failed steps: ${failed[*]}" >&2
    exit 1
fi
