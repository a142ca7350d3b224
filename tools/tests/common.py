"""Helpers shared by the tests of tools/: run a command and show it, read the
finalize CSV, collect failures and end with one exit status."""
import csv
import os
import subprocess
import sys

failures = []


def check(condition, message):
    """Records a failure (printed at the end) unless condition holds."""
    if not condition:
        failures.append(message)
    return condition


def run(command, timeout=300, **kwargs):
    """Runs command, prints it with its exit status and output, returns the result."""
    print("$", " ".join(str(part) for part in command), flush=True)
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                            timeout=timeout, **kwargs)
    print(f"-> exit {result.returncode}")
    print(result.stdout + result.stderr, flush=True)
    return result


def mpirun_env(prefix):
    """The environment for our mpirun: the test's (run-as-root lines from
    ompi_patches/run_as_root.env, passed by meson) with prefix/lib first."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(prefix, "lib")
    return env


def read_counters(path):
    """{(rank, counter without OMPI_SPC_): value} from a mpi_spc_dump_file CSV."""
    with open(path) as f:
        return {(int(row["rank"]), row["counter"].removeprefix("OMPI_SPC_")): int(row["value"])
                for row in csv.DictReader(f)}


def expect_counters(values, expected, what):
    """Each (rank, counter): value of expected must be in values exactly."""
    for key, value in sorted(expected.items()):
        check(values.get(key, 0) == value,
              f"{what}: rank {key[0]} {key[1]} = {values.get(key, 0)}, predicted {value}")


def finish():
    for failure in failures:
        print("FAIL:", failure)
    print("all checks passed" if not failures else f"{len(failures)} checks failed")
    sys.exit(1 if failures else 0)
