#!/usr/bin/python3
"""Real applications, unchanged, counted (issue 22, item 4): each Debian
application of apps.json runs on 2 ranks twice, in folders of its own:

  1. with Debian's Open MPI (/usr/bin/mpirun.openmpi): the reference
     physical result;
  2. with our build (PREFIX/bin/mpirun, PREFIX/lib first), every counter on
     and the finalize CSV written, and the independent counting library
     (LIBRARY, pmpi_count.c) preloaded into the ranks.

Then, per application: the physical result of 2 equals 1's (the printed
digits: tolerance 0 in apps.json), and per rank each compared counter of the
CSV equals the independent count exactly:

  - every call counter of the catalogue (SPC_CALL rows: sends, receives,
    probes, collectives, puts, gets and accumulates, waits and tests, MPI_Wtime,
    MPI_Comm_dup) against the calls of its MPI function, C and Fortran
    entry points added; a call counter that is not 0 for a function the
    library does not wrap fails too;
  - BYTES_SENT_USER and BYTES_RECEIVED_USER against the bytes of the user's
    point-to-point sends (count x type size) and of the completed receives
    (their statuses);
  - the sums of the MESSAGE_SIZES_SENT and MESSAGE_SIZES_RECEIVED
    histograms against the messages sent and received.

With --known, the counting library is first held against a program whose
counts are known (known_traffic.f90 under Debian's Open MPI).  Before any of
it, the comparisons show they can fail: a count off by one
planted in a copy of a real pair of records, and a result one digit off,
must each be reported, and only they.

Writes OUT/apps.json (every count, ours and independent, per rank), OUT/apps.md
(the table), OUT/config.json (builds, packages, CPU, date, command) and
OUT/raw.tar.xz (each run's output, CSV and independent counts).
Exit 1 if a check fails.

It reads apps.json, and each run's result, with netpipe_runs/app_runs.py,
from the repository's root on PYTHONPATH (tools/apps/meson.build sets it).

With --mpirun-arg (repeatable), our build's runs take those arguments too:
the PML to run under (--mpirun-arg=--mca --mpirun-arg=pml --mpirun-arg=ucx
...); the counters compared are the same under every PML we build.

usage: PYTHONPATH=REPO /usr/bin/python3 run_apps.py PREFIX LIBRARY OUT [--known known_traffic.f90]
         [--apps nwchem,elk,abinit] [--mpirun-arg ARG]..."""
import argparse
import copy
import csv
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

from netpipe_runs import app_runs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CATALOGUE = os.path.join(REPO, "spc", "include", "spc", "catalogue.def")
NAMES_H = os.path.join(REPO, "spc", "include", "spc", "names.h")
DEBIAN_MPIRUN = "/usr/bin/mpirun.openmpi"
RANKS = 2

# How the table groups the call counters (catalogue names); a sendrecv is a
# send and a receive.
SENDS = ("SEND", "BSEND", "RSEND", "SSEND", "ISEND", "IBSEND", "IRSEND", "ISSEND", "SENDRECV", "SENDRECV_REPLACE")
RECEIVES = ("RECV", "IRECV", "MRECV", "IMRECV", "SENDRECV", "SENDRECV_REPLACE")
COLLECTIVE_CATEGORIES = ("MPI_COLL", "MPI_ICOLL", "MPI_PCOLL")
PUTS, GETS = ("PUT", "RPUT"), ("GET", "RGET")
ACCUMULATES = ("ACCUMULATE", "RACCUMULATE", "GET_ACCUMULATE", "RGET_ACCUMULATE", "FETCH_AND_OP",
               "COMPARE_AND_SWAP")

# known_traffic.f90's counts on each rank, as the program makes them: the
# counting library must see exactly these before its counts judge ours.
INT, DOUBLE = 4, 8
KNOWN = {
    0: {"calls_fortran": {"MPI_Send": 3, "MPI_Isend": 1, "MPI_Wait": 1, "MPI_Ssend": 1, "MPI_Sendrecv": 1,
                          "MPI_Allreduce": 1, "MPI_Bcast": 1, "MPI_Barrier": 1, "MPI_Wtime": 1},
        "calls_c": {},
        # the send to MPI_PROC_NULL moves nothing
        "bytes_sent": 10 * INT + 20 * INT + 5 * DOUBLE + 3 * INT + 4 * INT, "messages_sent": 5,
        "bytes_received": 6 * INT, "messages_received": 1},
    1: {"calls_fortran": {"MPI_Recv": 1, "MPI_Irecv": 3, "MPI_Waitall": 1, "MPI_Waitany": 1, "MPI_Sendrecv": 1,
                          "MPI_Allreduce": 1, "MPI_Bcast": 1, "MPI_Barrier": 1, "MPI_Wtime": 1},
        "calls_c": {},
        "bytes_sent": 6 * INT, "messages_sent": 1,
        "bytes_received": 10 * INT + 20 * INT + 5 * DOUBLE + 3 * INT + 4 * INT, "messages_received": 5},
}
DEBIAN_MPIF90 = "/usr/bin/mpif90.openmpi"

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def read_catalogue(path=CATALOGUE):
    """{counter: (category, "MPI_Function")} of the SPC_CALL rows."""
    with open(path) as f:
        rows = re.findall(r'^SPC_CALL\(\s*(\w+)\s*,\s*(\w+)\s*,\s*"(\w+)"\s*\)', f.read(), re.M)
    if not rows:
        raise SystemExit(f"no SPC_CALL rows in {path}")
    return {name: (category, function) for name, category, function in rows}


def counter_prefix(path=NAMES_H):
    with open(path) as f:
        return re.search(r'^#define\s+SPC_COUNTER_PREFIX\s+"([^"]*)"', f.read(), re.M).group(1)


def read_csv(path, prefix):
    """{rank: {counter without prefix: value}} of a finalize CSV."""
    values = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            values.setdefault(int(row["rank"]), {})[row["counter"].removeprefix(prefix)] = int(row["value"])
    return values


def read_independent(prefix):
    """{rank: record} of the counting library's files PREFIX.<rank>.json,
    with "calls": the C and Fortran calls added."""
    records = {}
    for path in glob.glob(prefix + ".*.json"):
        with open(path) as f:
            record = json.load(f)
        calls = dict(record["calls_c"])
        for name, n in record["calls_fortran"].items():
            calls[name] = calls.get(name, 0) + n
        record["calls"] = calls
        records[record["rank"]] = record
    return records


def histogram_sum(ours, name):
    return sum(v for k, v in ours.items() if k.startswith(name + "_BIN"))


def compare(ours, mine, catalogue):
    """[(what, ours, independent)] of every compared quantity of one rank,
    and [problems]: counters ours holds for functions the library does not
    wrap, receives it could not follow."""
    pairs, problems = [], []
    wrapped = set(mine["functions"])
    for counter, (_, function) in sorted(catalogue.items()):
        if function in wrapped:
            pairs.append((counter, ours.get(counter, 0), mine["calls"].get(function, 0)))
        elif ours.get(counter, 0):
            problems.append(f"{counter} = {ours[counter]}, but the library does not wrap {function}")
    pairs.append(("BYTES_SENT_USER", ours.get("BYTES_SENT_USER", 0), mine["bytes_sent"]))
    pairs.append(("BYTES_RECEIVED_USER", ours.get("BYTES_RECEIVED_USER", 0), mine["bytes_received"]))
    if any(k.startswith("MESSAGE_SIZES_SENT_BIN") for k in ours):
        pairs.append(("MESSAGE_SIZES_SENT (sum of bins)", histogram_sum(ours, "MESSAGE_SIZES_SENT"),
                      mine["messages_sent"]))
    if any(k.startswith("MESSAGE_SIZES_RECEIVED_BIN") for k in ours):
        pairs.append(("MESSAGE_SIZES_RECEIVED (sum of bins)", histogram_sum(ours, "MESSAGE_SIZES_RECEIVED"),
                      mine["messages_received"]))
    if mine["receives_unknown"] or mine["pending_receives"]:
        problems.append(f"{mine['receives_unknown']} receive(s) freed before completion and "
                        f"{mine['pending_receives']} pending at MPI_Finalize: their bytes are not known here")
    return pairs, problems


def mismatches(pairs):
    return [(what, a, b) for what, a, b in pairs if a != b]


def same_result(reference, ours, tolerance):
    """The physical results agree: the same digits (tolerance 0) or within tolerance."""
    if reference is None or ours is None:
        return False
    if tolerance == 0:
        return reference == ours
    return abs(float(reference) - float(ours)) <= tolerance


def control(catalogue, sample=None):
    """The comparisons can fail: one count off by one in a copy of a rank's
    records (a real one when SAMPLE, else made up) is the one mismatch found,
    and a result one digit off is not the same result."""
    if sample is None:
        sample = ({"SEND": 3, "BYTES_SENT_USER": 24, "BYTES_RECEIVED_USER": 0},
                  {"functions": ["MPI_Send"], "calls": {"MPI_Send": 3}, "bytes_sent": 24, "bytes_received": 0,
                   "messages_sent": 3, "messages_received": 0, "receives_unknown": 0, "pending_receives": 0})
    ours, mine = sample
    pairs, _ = compare(ours, mine, catalogue)
    ok = check(not mismatches(pairs), f"control: the sample pair does not agree before planting: {mismatches(pairs)}")
    target = next(what for what, a, _ in pairs if a) if any(a for _, a, _ in pairs) else pairs[0][0]
    planted = copy.deepcopy(ours)
    planted[target] = planted.get(target, 0) + 1
    found = mismatches(compare(planted, mine, catalogue)[0])
    ok &= check([w for w, _, _ in found] == [target],
                f"control: a planted off-by-one in {target} gave mismatches {found}, expected exactly {target}")
    ok &= check(not same_result("-74.962946646705", "-74.962946646706", 0),
                "control: a result one digit off passed as the same")
    ok &= check(same_result("-74.962946646705", "-74.962946646705", 0), "control: equal results did not pass")
    print(f"control: a planted off-by-one in {target} is caught, and only it; a result one digit off is "
          f"caught: {'ok' if ok else 'FAILED'}", flush=True)
    return ok


def known_traffic(source, library, out, timeout):
    """The counting library counts known_traffic.f90 as predicted (KNOWN),
    under Debian's Open MPI: its own check, independent of our build."""
    folder = os.path.join(out, "known_traffic")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    program = os.path.join(folder, "known_traffic")
    built = subprocess.run([DEBIAN_MPIF90, "-O1", "-o", program, source], capture_output=True, text=True)
    if not check(built.returncode == 0, f"known_traffic.f90 did not compile with {DEBIAN_MPIF90}: "
                 f"{built.stderr[-2000:]}"):
        return
    count_prefix = os.path.join(folder, "pmpi_count")
    code, _, _ = run([DEBIAN_MPIRUN, "-np", str(RANKS), "-x", "LD_PRELOAD=" + library,
                      "-x", "PMPI_COUNT_PREFIX=" + count_prefix, program], folder, base_env(), timeout)
    counted = read_independent(count_prefix)
    ok = check(code == 0 and sorted(counted) == list(range(RANKS)), f"known_traffic: exit {code}, "
               f"counts of ranks {sorted(counted)}")
    for rank, expected in KNOWN.items():
        for key, value in expected.items():
            got = counted.get(rank, {}).get(key)
            ok &= check(got == value, f"known_traffic: rank {rank} {key} counted {got}, the program makes {value}")
    print(f"the counting library counts known_traffic.f90 as the program predicts: {'ok' if ok else 'FAILED'}",
          flush=True)


def run(command, folder, env, timeout):
    print("$", " ".join(command), flush=True)
    clock = time.monotonic()
    with open(os.path.join(folder, "stdout.txt"), "w") as out, open(os.path.join(folder, "stderr.txt"), "w") as err:
        result = subprocess.run(command, cwd=folder, env=env, stdout=out, stderr=err, timeout=timeout)
    seconds = time.monotonic() - clock
    with open(os.path.join(folder, "stdout.txt"), errors="replace") as f:
        stdout = f.read()
    with open(os.path.join(folder, "stderr.txt"), errors="replace") as f:
        stderr = f.read()
    print(f"-> exit {result.returncode} in {seconds:.1f} s", flush=True)
    if result.returncode != 0:
        print(stderr[-3000:], flush=True)
    return result.returncode, stdout, seconds


def base_env():
    """Ours minus any library path: Debian's mpirun must find Debian's libs."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}


def run_app(name, app, prefix, library, out, catalogue, spc_prefix, timeout, mpirun_args=()):
    program = shutil.which(app["program"])
    row = {"application": name, "package": app["package"], "program": program}
    if not check(program is not None, f"{name}: {app['program']} not on PATH (install {app['package']})"):
        return row
    xs = app_runs.exported_environment(app)

    folder = app_runs.fresh_folder(os.path.join(out, name, "debian"), app)
    code, stdout, seconds = run([DEBIAN_MPIRUN, "-np", str(RANKS)] + xs + [program] + app["args"],
                                folder, base_env(), timeout)
    reference, _ = app_runs.physical_result(app, folder, stdout)
    row["debian"] = {"exit": code, "seconds": round(seconds, 2), "result": reference}
    check(code == 0 and reference is not None, f"{name}: the run with Debian's Open MPI failed or printed no "
          f"{app['result']['name']} (exit {code})")

    folder = app_runs.fresh_folder(os.path.join(out, name, "ours"), app)
    lib = os.path.join(prefix, "lib")
    csv_path = os.path.join(folder, "spc.csv")
    count_prefix = os.path.join(folder, "pmpi_count")
    env = dict(base_env(), LD_LIBRARY_PATH=lib)
    code, stdout, seconds = run(
        [os.path.join(prefix, "bin", "mpirun"), "-np", str(RANKS), "--mca", "btl", "self,vader",
         "-x", "LD_LIBRARY_PATH=" + lib, "-x", "LD_PRELOAD=" + library, "-x", "PMPI_COUNT_PREFIX=" + count_prefix]
        + list(mpirun_args) + xs + ["--mca", "mpi_spc_attach", "all", "--mca", "mpi_spc_dump_enabled", "true",
                "--mca", "mpi_spc_dump_file", csv_path, program] + app["args"], folder, env, timeout)
    result, _ = app_runs.physical_result(app, folder, stdout)
    row["ours"] = {"exit": code, "seconds": round(seconds, 2), "result": result}
    if not check(code == 0, f"{name}: the run with our build failed (exit {code})"):
        return row
    tolerance = app["result"]["tolerance"]
    row["result"] = {"name": app["result"]["name"], "unit": app["result"]["unit"], "debian": reference,
                     "ours": result, "tolerance": tolerance, "same": same_result(reference, result, tolerance)}
    check(row["result"]["same"], f"{name}: {app['result']['name']} {result} with our build, {reference} with "
          f"Debian's (tolerance {tolerance})")
    loaded = subprocess.run(["ldd", program], env=env, capture_output=True, text=True).stdout
    row["libraries"] = sorted(line.split()[0] + " => " + line.split()[2] for line in loaded.splitlines()
                              if "libmpi" in line and "=>" in line)
    check(all(entry.split(" => ")[1].startswith(os.path.realpath(lib)) or entry.split(" => ")[1].startswith(lib)
              for entry in row["libraries"]) and row["libraries"],
          f"{name}: with our lib/ first, its MPI libraries are not all ours: {row['libraries']}")
    if not check(os.path.exists(csv_path), f"{name}: no finalize CSV"):
        return row
    ours = read_csv(csv_path, spc_prefix)
    mine = read_independent(count_prefix)
    if not check(sorted(mine) == list(range(RANKS)) and sorted(ours) == list(range(RANKS)),
                 f"{name}: ranks in the CSV {sorted(ours)}, in the independent count {sorted(mine)}"):
        return row
    row["ranks"] = {}
    for rank in range(RANKS):
        pairs, problems = compare(ours[rank], mine[rank], catalogue)
        for what, a, b in mismatches(pairs):
            check(False, f"{name}: rank {rank} {what}: ours {a}, independent {b}")
        for problem in problems:
            check(False, f"{name}: rank {rank}: {problem}")
        row["ranks"][rank] = {
            "compared": {what: [a, b] for what, a, b in pairs if a or b},
            "compared_zero": sorted(what for what, a, b in pairs if not a and not b),
            "independent": {k: v for k, v in mine[rank].items() if k != "functions"},
            "ours_nonzero": {k: v for k, v in ours[rank].items() if v},
        }
    row["agree"] = all(not mismatches(pairs) and not problems
                       for pairs, problems in (compare(ours[r], mine[r], catalogue) for r in range(RANKS)))
    return row


def summary(row, catalogue):
    """The table's figures, summed over ranks (ours; equal to the
    independent counts where the check passed)."""
    ranks = row.get("ranks")
    if not ranks:
        return None

    def ours(counter):
        return sum(r["ours_nonzero"].get(counter, 0) for r in ranks.values())

    def mine(function):
        return sum(r["independent"]["calls"].get(function, 0) for r in ranks.values())

    received = sum(r["independent"]["messages_received"] for r in ranks.values())
    unexpected = ours("UNEXPECTED")
    return {
        "sends": sum(ours(c) for c in SENDS), "receives": sum(ours(c) for c in RECEIVES),
        "collectives": sum(ours(c) for c, (cat, _) in catalogue.items() if cat in COLLECTIVE_CATEGORIES),
        "puts": sum(ours(c) for c in PUTS), "gets": sum(ours(c) for c in GETS),
        "accumulates": sum(ours(c) for c in ACCUMULATES),
        "bytes_sent_user": ours("BYTES_SENT_USER"), "bytes_received_user": ours("BYTES_RECEIVED_USER"),
        "bytes_sent_mpi": ours("BYTES_SENT_MPI"), "bytes_put": ours("BYTES_PUT"), "bytes_get": ours("BYTES_GET"),
        "rma_origin_bytes_independent": {k: sum(r["independent"]["rma_bytes"][k] for r in ranks.values())
                                         for k in ("put", "get", "accumulate")},
        "user_messages_received": received, "unexpected": unexpected,
        "unexpected_share": (unexpected / received) if received else None,
        "out_of_sequence": ours("OUT_OF_SEQUENCE"),
        "match_time_us": ours("MATCH_TIME"),
        "fortran_calls": sum(sum(r["independent"]["calls_fortran"].values()) for r in ranks.values()),
        "c_calls": sum(sum(r["independent"]["calls_c"].values()) for r in ranks.values()),
    }


# What the table's columns are, and what is not compared and why.
NOTES = """
Counts are summed over the 2 ranks; every counter compared was equal to the
independent count on each rank (last column: how many (rank, counter) pairs
were compared, zeros included). sends: MPI_Send, Bsend, Rsend, Ssend, their
I-forms, Sendrecv, Sendrecv_replace; receives: MPI_Recv, Irecv, Mrecv,
Imrecv, Sendrecv, Sendrecv_replace; collectives: every counter of the
catalogue's MPI_COLL, MPI_ICOLL and MPI_PCOLL categories; puts: PUT + RPUT;
gets: GET + RGET; accumulates: ACCUMULATE, RACCUMULATE, GET_ACCUMULATE,
RGET_ACCUMULATE, FETCH_AND_OP, COMPARE_AND_SWAP. User bytes: BYTES_SENT_USER and BYTES_RECEIVED_USER
(ob1's bytes of messages with tag >= 0), equal to count x type size of the
user's sends and to what their completed receives' statuses say.

Not compared, by definition:
- UNEXPECTED counts every message ob1 queued as unexpected, those of
  collectives (negative tags) included, and no counter, nor a PMPI library,
  counts every message ob1 received: the share is over the user's messages
  received, so above 1 where most unexpected messages were collectives'.
- BYTES_PUT and BYTES_GET count ob1's RDMA protocol (large messages the BTL
  writes or reads, collectives' included), not MPI_Put and MPI_Get: NWChem's
  one-sided operations go through osc rdma over vader, which ob1 never sees,
  or, under --mca osc pt2pt, over ob1 as MPI bytes (the origin bytes of its
  puts, gets and accumulates are in apps.json, rma_origin_bytes_independent).
- MATCH_TIME is a time; no second count of it exists.
"""


def markdown(rows):
    lines = ["| application | physical result, Debian's Open MPI / ours | sends | receives | collectives | puts | "
             "gets | accumulates | user bytes sent / received | UNEXPECTED / user messages received "
             "(share) | match time (µs) | counters equal to the independent count |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for row in rows:
        s = row.get("summary")
        if not s:
            lines.append(f"| {row['application']} | did not run: see apps.json | | | | | | | | | | no |")
            continue
        r = row["result"]
        share = f"{s['unexpected_share']:.2f}" if s["unexpected_share"] is not None else "n/a"
        compared = sum(len(x["compared"]) + len(x["compared_zero"]) for x in row["ranks"].values())
        lines.append(
            f"| {row['application']} | {r['name']} {r['debian']} / {r['ours']} {r['unit']} "
            f"({'DIFFERENT' if not r['same'] else 'same digits' if r['debian'] == r['ours'] else 'within ' + format(r['tolerance'], 'g')}) | {s['sends']:,} | {s['receives']:,} | "
            f"{s['collectives']:,} | {s['puts']:,} | {s['gets']:,} | {s['accumulates']:,} | "
            f"{s['bytes_sent_user']:,} / {s['bytes_received_user']:,} | {s['unexpected']:,} / "
            f"{s['user_messages_received']:,} ({share}) | {s['match_time_us']:,} | "
            f"{'all ' + str(compared) if row.get('agree') else 'NO'} |")
    return "\n".join(lines) + "\n" + NOTES


def pack(out, folders):
    """The runs' folders into OUT/raw.tar.xz, without what the applications
    wrote besides their output, the finalize CSV, the independent counts and
    the file holding the physical result (Elk alone writes 10 MB)."""
    keep = re.compile(r"^(stdout\.txt|stderr\.txt|spc\.csv|pmpi_count\.\d+\.json|INFO\.OUT|[^.]+\.(nw|abi|in|f90))$")
    members = []
    for folder in folders:
        for root, _, files in os.walk(os.path.join(out, folder)):
            members += [os.path.relpath(os.path.join(root, f), out) for f in sorted(files) if keep.match(f)]
    subprocess.run(["tar", "-C", out, "-cJf", os.path.join(out, "raw.tar.xz")] + members, check=True)
    for folder in folders:
        shutil.rmtree(os.path.join(out, folder), ignore_errors=True)


def configuration(prefix, library, apps):
    def sh(*command):
        return subprocess.run(command, capture_output=True, text=True).stdout.strip()

    info = {}
    try:
        with open(os.path.join(prefix, "build-info.json")) as f:
            info = json.load(f)
    except OSError:
        pass
    cpu = next((line.split(":", 1)[1].strip() for line in sh("lscpu").splitlines()
                if line.startswith("Model name")), "?")
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv), "prefix": prefix, "build_info": info, "library": library,
            "cpu": cpu, "cpus": os.cpu_count(), "kernel": os.uname().release,
            "commit": sh("git", "-C", REPO, "rev-parse", "HEAD"),
            "dirty": bool(sh("git", "-C", REPO, "status", "--porcelain", "--untracked-files=no")),
            "packages": {a["package"]: sh("dpkg-query", "-W", "-f=${Version}", a["package"]) for a in apps.values()}
            | {"openmpi-bin": sh("dpkg-query", "-W", "-f=${Version}", "openmpi-bin")},
            "ranks": RANKS, "apps": apps}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("prefix", help="our Open MPI build (build_ompi.sh --where spc)")
    parser.add_argument("library", help="the counting library, libpmpi_count.so")
    parser.add_argument("out", help="results folder (made; an application's folders are replaced)")
    parser.add_argument("--known", metavar="KNOWN_TRAFFIC_F90",
                        help="first check the counting library on this program (known_traffic.f90)")
    parser.add_argument("--apps", default=None, help="comma list of apps.json's applications (default: all)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per run (default 120)")
    parser.add_argument("--mpirun-arg", action="append", default=[], metavar="ARG",
                        help="an argument for our build's mpirun (repeatable), e.g. the PML's")
    args = parser.parse_args()
    apps = app_runs.applications()
    chosen = args.apps.split(",") if args.apps else list(apps)
    unknown = [a for a in chosen if a not in apps]
    if unknown:
        parser.error(f"unknown application(s) {unknown}; apps.json has {list(apps)}")
    # absolute: each run's working directory is its own folder
    prefix, library, args.out = os.path.realpath(args.prefix), os.path.realpath(args.library), os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    catalogue, spc_prefix = read_catalogue(), counter_prefix()
    if not control(catalogue):
        sys.exit("the comparison could not show a planted difference; nothing compared")

    if args.known:
        known_traffic(os.path.realpath(args.known), library, args.out, args.timeout)
    rows = []
    for name in chosen:
        print(f"== {name}", flush=True)
        row = run_app(name, apps[name], prefix, library, args.out, catalogue, spc_prefix, args.timeout,
                      args.mpirun_arg)
        if row.get("ranks"):
            # The control again, on this application's real records of rank 0.
            rank0 = row["ranks"][0]
            sample_ours = read_csv(os.path.join(args.out, name, "ours", "spc.csv"), spc_prefix)[0]
            sample_mine = read_independent(os.path.join(args.out, name, "ours", "pmpi_count"))[0]
            if row.get("agree"):
                control(catalogue, (sample_ours, sample_mine))
            row["summary"] = summary(row, catalogue)
        rows.append(row)

    with open(os.path.join(args.out, "apps.json"), "w") as f:
        json.dump(rows, f, indent=1)
    config = configuration(prefix, library, {k: apps[k] for k in chosen})
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    pack(args.out, chosen + (["known_traffic"] if args.known else []))
    table = (f"Unchanged Debian applications on {RANKS} ranks over vader, {config['date']}, {config['cpu']} "
             f"({config['cpus']} CPUs), our build {config['build_info'].get('variant', '?')} "
             f"{config['build_info'].get('content_hash', '?')}, packages "
             + ", ".join(f"{p} {v}" for p, v in config["packages"].items())
             + f"; command: {config['command']}\n\n" + markdown(rows))
    with open(os.path.join(args.out, "apps.md"), "w") as f:
        f.write(table)
    print(table)
    for failure in failures:
        print("FAIL:", failure)
    print("all checks passed" if not failures else f"{len(failures)} checks failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
