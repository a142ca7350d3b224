#!/usr/bin/env bash
# The main job: installs what it needs, builds Open MPI with our counters, shows
# them at work, then runs the overhead study of the SPC paper on our counters
# and upstream's.  ./run.sh --help lists the steps and what they save.
set -uo pipefail
cd "$(dirname "$0")" || exit 2
# meson compiles through ccache when it is installed; these let a compile
# of another clone of this repository serve this one's (paths under the
# checkout hashed relative to it, the compiling folder not hashed), as
# ompi_patches/build_ompi.sh does for Open MPI.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true

# Steps in the order they run, and the Open MPI builds each needs: the spc
# build's steps come first, so a new user sees counters after one build.
all_steps="demo,microbench,ab,callgrind,netpipe,pairwise,lammps"
declare -A step_builds=(
    [demo]="spc" [microbench]="spc" [ab]="spc"
    [callgrind]="spc nospc upstream" [netpipe]="spc nospc upstream"
    [pairwise]="spc nospc upstream" [lammps]="spc nospc upstream")
usage() {
    cat <<USAGE
usage: ./run.sh [--profile smoke|short|full] [--only STEPS] [--out DIR]
  --profile PROFILE  smoke: every step once at its smallest size (what CI runs;
                     a check that everything works, not a measurement);
                     short (default): a few rounds, for a look; full: the
                     README's sizes.  Each campaign step passes the profile
                     to its driver, which says what it means for that step
                     (python3 -m netpipe_runs.<driver> --help, from this
                     folder).  Measured times are in the README.
  --only STEPS       comma list of steps to run (default: $all_steps)
  --out DIR          where results go (default results/<UTC time>, inside this
                     repository, where a run worth keeping is committed from)

Open MPI is built as the steps need it (ompi_patches/build_ompi.sh, cached
by content hash): spc before the first step, so the demo runs as soon as it
exists; nospc and upstream together, before the first step that compares
with them.  No step runs beside a build.

Steps, each saved in its folder of DIR:
  demo        an MPI program's counters read through MPI_T and PAPI, and the
              finalize report (output.txt); read from outside while it runs
              by spc-record and spc-top (live.txt, live.csv)         [spc]
  microbench  fast-path and read micro-benchmarks: JSON of every repetition,
              table.md                                               [spc]
  ab          the in-process A/B ping-pong (counters on and off in one pair
              of processes)                                          [spc]
  callgrind   instructions per message in PMPI_Send and the receive match
              path (summary.md)                        [spc nospc upstream]
  netpipe     NetPIPE latency and bandwidth sweeps: overhead figures,
              netpipe_summary.md                       [spc nospc upstream]
  pairwise    the multi-threaded pairwise benchmark (Table 3) and message
              rates (report.md, with the A/B's tables) [spc nospc upstream]
  lammps      Debian's unchanged LAMMPS on each build: loop time per
              configuration (summary.md)               [spc nospc upstream]
The campaign steps (ab, callgrind, netpipe, pairwise, lammps) also keep
meta.json, runs.jsonl (one record per run) and raw.tar.xz (every run's raw
output); each is a driver of the package netpipe_runs (ab_runs,
callgrind_counts, netpipe_sweep, pairwise_runs, lammps_runs: python3 -m
netpipe_runs.DRIVER --help) and its tables a report of the package analysis
(/usr/bin/python3 -m analysis.REPORT DIR).  DIR/summary.md gathers every
table with the date, machine and command; DIR/meta.json has the machine and
builds.  The study runs in the builds as they were when each was brought up
to date: a build replaced before or while a step runs stops that step with a
message.  A step that fails, or that leaves no record, is reported and the
others still run; the exit status is non-zero if any failed.
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
    # the micro-benchmarks' repetitions; each campaign's sizes are its driver's --profile
    smoke) repetitions=1 min_time=0.01 ;;
    short) repetitions=3 min_time=0.05 ;;
    full) repetitions=10 min_time=0.2 ;;
    *) echo "run.sh: --profile must be smoke, short or full, not '$profile'" >&2; exit 2 ;;
esac
IFS=, read -r -a asked <<<"$steps"
for step in "${asked[@]}"; do
    [[ ",$all_steps," == *",$step,"* ]] || { echo "run.sh: unknown step '$step' (steps: $all_steps)" >&2; exit 2; }
done
chosen=()  # the asked steps, in the order of all_steps
IFS=, read -r -a ordered <<<"$all_steps"
for step in "${ordered[@]}"; do
    [[ ",$steps," == *",$step,"* ]] && chosen+=("$step")
done
mkdir -p "$out" || { echo "run.sh: cannot create $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
command_line="./run.sh --profile $profile --only $(IFS=,; echo "${chosen[*]}") --out $out"
analysis=/usr/bin/python3  # Debian's pandas and matplotlib import only under it
failed=()
started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started)) s"; }

./install_deps.sh || { echo "run.sh: installing the Debian packages failed" >&2; exit 1; }
mapfile -t root_env < <(grep -Ev '^[[:space:]]*(#|$)' ompi_patches/run_as_root.env)

# use_builds: VARIANT=HASH of every build brought up to date so far; the
# study runs in exactly these (the campaigns' --use-builds) and never
# starts a build under a running step.
use_builds=
declare -A built=()
building=()  # process groups of the builds under way, ended with run.sh
trap '[ ${#building[@]} -eq 0 ] || kill -TERM -- "${building[@]/#/-}" 2>/dev/null' EXIT
# need VARIANT...: every one built (build_ompi.sh, cached by content hash).
# Those missing are built at once, each in a process group of its own: on
# 2 cores two builds together finish sooner than one after the other, as a
# build alone leaves a core idle for much of its time (a configure is one
# process; make waits on links and installs).  Steps that measure time
# never run beside a build: each waits here for its builds to end.
need() {
    local variant missing=() pids=() status=0 k prefix
    for variant in "$@"; do
        [ -n "${built[$variant]:-}" ] || missing+=("$variant")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== Open MPI build ${missing[*]} ($(elapsed) so far; cached by content hash, cold: see the README)"
    for variant in "${missing[@]}"; do
        setsid ompi_patches/build_ompi.sh "$variant" >"$out/.prefix-$variant" &
        pids+=($!)
    done
    building=("${pids[@]}")
    for k in "${!missing[@]}"; do
        variant=${missing[$k]}
        if wait "${pids[$k]}" && prefix=$(tail -1 "$out/.prefix-$variant") && [ -f "$prefix/.built" ]; then
            built[$variant]=$prefix
            use_builds+="${use_builds:+,}$variant=$(cat "$prefix/.built")"
        else
            echo "run.sh: the $variant build failed" >&2
            status=1
        fi
        rm -f "$out/.prefix-$variant"
    done
    building=()
    [ -z "$use_builds" ] || write_meta || status=1
    return $status
}
write_meta() {
    python3 -m netpipe_runs.campaign meta "$out/meta.json" --command "$command_line" --profile "$profile" \
        --use-builds "$use_builds"
}
need spc || exit 1
spc_prefix=${built[spc]}
cache=$(ompi_patches/build_ompi.sh --where)

# The study's programs come from one build folder, built against the cached
# spc build (for the PAPI and MPI_T read benchmark).
study_build=build/study
study_options=("ompi_cache=$cache")

# configured NAME: the value of meson option NAME in the study build folder.
configured() {
    meson introspect "$study_build" --buildoptions 2>/dev/null |
        python3 -c 'import json, sys; print(next((str(o["value"]) for o in json.load(sys.stdin) if o["name"] == sys.argv[1]), ""))' "$1"
}

# configure_study_build: sets the folder up, or reconfigures it when the
# cache folder or another option differs from what it was configured with.
configure_study_build() {
    local log=$study_build.setup.log option stale=()
    local flags=("${study_options[@]/#/-D}")
    mkdir -p "$(dirname "$study_build")" || { echo "run.sh: cannot create $(dirname "$study_build")" >&2; return 1; }
    if [ ! -f "$study_build/build.ninja" ]; then
        meson setup "$study_build" "${flags[@]}" >"$log" 2>&1 && return 0
        echo "run.sh: meson setup of $study_build failed; last lines of $log:" >&2
    else
        for option in "${study_options[@]}"; do
            [ "$(configured "${option%%=*}")" = "${option#*=}" ] ||
                stale+=("${option%%=*} was '$(configured "${option%%=*}")', now '${option#*=}'")
        done
        [ ${#stale[@]} -eq 0 ] && return 0
        echo "== reconfiguring $study_build: ${stale[*]}"
        { meson configure "$study_build" "${flags[@]}" || meson setup --wipe "$study_build" "${flags[@]}"; } >"$log" 2>&1 &&
            return 0
        echo "run.sh: $study_build cannot be reconfigured (${stale[*]}); remove it to start afresh; last lines of $log:" >&2
    fi
    tail -20 "$log" >&2
    return 1
}
echo "== the study's programs in $study_build ($(elapsed) so far)"
configure_study_build || exit 1
ninja -C "$study_build" bench/spc_bench bench/spc_read_bench bench/spc_demo >/dev/null || { echo "run.sh: building the benchmarks failed" >&2; exit 1; }

mpirun_spc() { env "${root_env[@]}" "$spc_prefix/bin/mpirun" "$@"; }
demo() {
    mkdir -p "$out/demo"
    # Live counters (README "Live counters"): spc-record samples the demo's
    # ranks every millisecond from their start, from outside, and spc-top
    # reads their files, kept after MPI_Finalize.
    local live="$out/demo/live" status=0
    mkdir -p "$live"
    "$spc_prefix/bin/spc-record" --dir "$live" --interval 1 --out "$out/demo/live.csv" --wait 60 --quiet &
    local recorder=$!
    mpirun_spc -np 2 --bind-to core --mca btl self,vader --mca mpi_spc_dump_enabled true \
        --mca mpi_spc_live 1 --mca mpi_spc_live_dir "$live" --mca mpi_spc_live_keep 1 \
        "$study_build/bench/spc_demo" 2>&1 | tee "$out/demo/output.txt" || status=1
    wait "$recorder" || status=1
    {
        echo "== read from outside while it ran: spc-record, rank 0's SEND per sample (of $out/demo/live.csv)"
        awk -F, '$5 == 0 && $6 == "OMPI_SPC_SEND" { printf "%s%s", sep, $8; sep = " " } END { print "" }' \
            "$out/demo/live.csv"
        echo "== spc-top --once on the files the demo kept"
        "$spc_prefix/bin/spc-top" --once --dir "$live"
    } 2>&1 | tee "$out/demo/live.txt"
    "$spc_prefix/bin/spc-top" --clean --dir "$live" >/dev/null || status=1
    return $status
}
# Debian's libbenchmark is built without NDEBUG, and says so before every
# run as if the timings were at stake.  They are not: the timed loop (for
# (auto _ : state)) is inline in our own release (-DNDEBUG) code; the library only
# starts and stops it.  Its line becomes one that says so.
debug_library_note() {
    sed 's/^\*\*\*WARNING\*\*\* Library was built as DEBUG. Timings may be affected.$/(Debian'"'"'s libbenchmark is built without NDEBUG: its own bookkeeping only; the timed loops are ours, built as release with -DNDEBUG)/'
}
microbench() {
    mkdir -p "$out/microbench"
    local options=(--benchmark_repetitions="$repetitions" --benchmark_enable_random_interleaving=true
                   --benchmark_min_time="$min_time" --benchmark_display_aggregates_only=true)
    "$study_build/bench/spc_bench" "${options[@]}" \
        --benchmark_out="$out/microbench/bench.json" --benchmark_out_format=json 2>&1 | debug_library_note &&
    mpirun_spc -np 1 --bind-to core "$study_build/bench/spc_read_bench" "${options[@]}" \
        --benchmark_out="$out/microbench/reads.json" --benchmark_out_format=json 2>&1 | debug_library_note &&
    $analysis -m analysis.microbench_table "$out/microbench/bench.json" "$out/microbench/reads.json" \
        --out "$out/microbench/table.md"
}
# The campaigns run in the builds of this study or stop: never a rebuild under a running step.
callgrind() { python3 -m netpipe_runs.callgrind_counts --use-builds "$use_builds" --profile "$profile" --out "$out/callgrind"; }
netpipe() { python3 -m netpipe_runs.netpipe_sweep --use-builds "$use_builds" --profile "$profile" --out "$out/netpipe"; }
pairwise() { python3 -m netpipe_runs.pairwise_runs --use-builds "$use_builds" --profile "$profile" --out "$out/pairwise"; }
ab() { python3 -m netpipe_runs.ab_runs --use-builds "$use_builds" --profile "$profile" --out "$out/ab"; }
lammps() { python3 -m netpipe_runs.lammps_runs --use-builds "$use_builds" --profile "$profile" --out "$out/lammps"; }

# recorded STEP: whether STEP left the record it is for (a campaign: every
# planned run in runs.jsonl; demo and microbench: their outputs).
recorded() {
    case "$1" in
        demo) [ -s "$out/demo/output.txt" ] && [ -s "$out/demo/live.csv" ] ;;
        microbench) [ -s "$out/microbench/table.md" ] ;;
        *) python3 -m netpipe_runs.campaign check "$out/$1" ;;
    esac
}

for k in "${!chosen[@]}"; do
    step=${chosen[$k]}
    read -r -a builds_needed <<<"${step_builds[$step]}"
    if ! need "${builds_needed[@]}"; then
        failed+=("$step")
        echo "run.sh: step $step needs the builds ${builds_needed[*]}; going on without it" >&2
        continue
    fi
    echo "== step $((k + 1)) of ${#chosen[@]}: $step ($(elapsed) so far)"
    if ! "$step"; then
        failed+=("$step")
        echo "run.sh: step $step failed; going on" >&2
    elif ! recorded "$step"; then
        failed+=("$step")
        echo "run.sh: step $step left no complete record in $out/$step; going on" >&2
    fi
done

echo "== reports"
report() {  # report NAME MODULE ARGS...: runs a report of analysis/, counts a failure
    local name=$1
    shift
    $analysis -m "$@" >/dev/null || failed+=("$name")
}
# (a campaign that could not start left no meta.json)
[ -f "$out/callgrind/meta.json" ] && report callgrind-table analysis.callgrind_table "$out/callgrind"
[ -f "$out/netpipe/meta.json" ] && report netpipe-report analysis.netpipe_report "$out/netpipe"
measured=()
for folder in pairwise ab; do
    [ -f "$out/$folder/meta.json" ] && measured+=("$out/$folder")
done
[ ${#measured[@]} -gt 0 ] && report pairwise-report analysis.pairwise_report "${measured[@]}"
[ -f "$out/lammps/meta.json" ] && report lammps-report analysis.lammps_report "$out/lammps"
report summary analysis.study_summary "$out"
echo "saved in $out after $(elapsed):"
echo "  meta.json (machine, builds, command), and the tables and figures:"
(cd "$out" && find . -name '*.md' -o -name '*.png' | sort | sed 's|^\./|  |')
if [ ${#failed[@]} -gt 0 ]; then
    echo "run.sh: failed steps: ${failed[*]}" >&2
    exit 1
fi
