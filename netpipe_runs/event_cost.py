"""Callgrind instructions per 1-byte ping-pong message (bench/pingpong.c over
vader, the "spc" build, no counter on) with no MPI_T event handle, and with
bench/event_listener.c preloaded: a handle on every ob1 event of
MPI_COMM_WORLD with a THREAD_SAFE callback that does nothing.  Same build,
same program binary; only LD_PRELOAD differs.  Instructions are repeatable,
so one run of each suffices.

usage: python3 -m netpipe_runs.event_cost OUT_DIR [--messages N]"""
import argparse
import json
import os
import subprocess

from netpipe_runs import callgrind_counts, study

# Where events are raised, and none inside another (a nested --toggle-collect
# would switch collection off): the send, a receive's start (posted queue,
# unexpected queue), the arrival's match (arrival, out of sequence, posted
# and unexpected queues).  PMPI_Recv as a whole would count its polling.
FUNCTIONS = {"send": "PMPI_Send", "start": "mca_pml_ob1_recv_req_start",
             "match": "mca_pml_ob1_recv_frag_callback_match"}


def inclusive(path):
    return callgrind_counts.inclusive_instructions(path, FUNCTIONS)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    repo = study.REPO
    prefix = subprocess.run([os.path.join(repo, "ompi_patches", "build_ompi.sh"), "--cached", "spc"],
                            check=True, capture_output=True, text=True).stdout.strip()
    os.makedirs(args.out, exist_ok=True)
    mpicc = os.path.join(prefix, "bin", "mpicc")
    pingpong, listener = os.path.join(args.out, "pingpong"), os.path.join(args.out, "libevent_listener.so")
    subprocess.run([mpicc, "-O2", os.path.join(repo, "bench", "pingpong.c"), "-o", pingpong], check=True)
    subprocess.run([mpicc, "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
                    os.path.join(repo, "bench", "event_listener.c"), "-o", listener], check=True)
    results = {"messages": args.messages, "build": prefix, "machine": study.machine()}
    for name, preload in (("no handle", None), ("handles, no-op callbacks", listener)):
        tag = "listening" if preload else "plain"
        command = [os.path.join(prefix, "bin", "mpirun"), "-np", "2", "--bind-to", "core", "--mca", "btl",
                   "self,vader"]
        env = dict(os.environ, **study.MPI_ENV)
        if preload:
            env["LD_PRELOAD"] = preload
            command += ["-x", "LD_PRELOAD"]
        command += ["valgrind", "--tool=callgrind", "--smc-check=all", "--collect-atstart=no",
                    *(f"--toggle-collect={f}" for f in FUNCTIONS.values()),
                    f"--callgrind-out-file={args.out}/{tag}.rank%q{{OMPI_COMM_WORLD_RANK}}.callgrind",
                    pingpong, str(args.messages)]
        print("$ " + " ".join(command), flush=True)
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)
        per_rank = {rank: inclusive(f"{args.out}/{tag}.rank{rank}.callgrind") for rank in (0, 1)}
        results[name] = {key: sum(per_rank[r].get(key, 0) for r in per_rank) / (2 * args.messages)
                         for key in FUNCTIONS}
        results[name]["command"] = " ".join(command)
    with open(os.path.join(args.out, "event_cost.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"instructions per message ({args.messages} per rank, both ranks' mean):")
    for name in ("no handle", "handles, no-op callbacks"):
        r = results[name]
        print(f"  {name:26s} send {r['send']:8.1f}  receive start {r['start']:8.1f}  match {r['match']:8.1f}")


if __name__ == "__main__":
    main()
