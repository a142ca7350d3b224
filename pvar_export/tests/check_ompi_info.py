#!/usr/bin/env python3
"""ompi_info tells a user enough to use every SPC parameter: mpi_spc_attach
names "all", every category and every counter of the catalogue, and how the
MPI_T variables are named; the others say what they do and their default
(the live counters' five: their programs, folder, file modes, cleaning and size).

usage: check_ompi_info.py OMPI_INFO CATALOGUE_LIST"""
import re
import subprocess
import sys

# parameter: words its description must hold
EXPECTED = {
    "mpi_spc_attach": ['"all"', "spc_matching", "runtime_spc_OMPI_SPC_<NAME>", "optional"],
    "mpi_spc_dump_enabled": ["MPI_Finalize", "min", "mean", "max", "mpi_spc_dump_file"],
    "mpi_spc_dump_file": ["CSV", "rank,counter,value,unit", "default"],
    "mpi_spc_timer_sampling": ["one interval in N", "scaled by N", "default"],
    "mpi_spc_live": ["spc-top", "spc-record", "spc-exporter", "mpi_spc_live_dir", "0600",
                     "mpi_spc_live_group", "mpi_spc_live_keep", "spc-top --clean", "Default false"],
    "mpi_spc_live_dir": ["default /dev/shm", "0700", "--dir"],
    "mpi_spc_live_keep": ["MPI_Finalize", "finalized", "spc-top --clean", "Default false"],
    "mpi_spc_live_group": ["group", "0640", "spc-exporter", "0600", "default"],
    "mpi_spc_live_threads": ["threads", "1 to 65536", "default 32", "128 KiB", "MPI_T, PAPI and the report"],
}


def descriptions(text):
    """{parameter: description} from ompi_info --param output."""
    found, current = {}, None
    for line in text.splitlines():
        header = re.search(r'parameter "(\w+)"', line)
        if header:
            current = header.group(1)
            found[current] = ""
        elif current and line.startswith(" " * 20):
            found[current] += " " + line.strip()
    return found


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ompi_info, catalogue_list = sys.argv[1:]
    text = subprocess.run([ompi_info, "--param", "mpi", "all", "--level", "9"], check=True,
                          capture_output=True, text=True, timeout=120).stdout
    found = descriptions(text)
    counters = [line.split("\t")[0][len("OMPI_SPC_"):] for line in
                subprocess.run([catalogue_list], check=True, capture_output=True,
                               text=True).stdout.splitlines()]
    failures = []
    for parameter, words in EXPECTED.items():
        description = found.get(parameter)
        print(f"{parameter}: {description}")
        if description is None:
            failures.append(f"ompi_info does not list {parameter}")
            continue
        failures += [f"{parameter}: no '{w}'" for w in words if w not in description]
    attach = found.get("mpi_spc_attach", "")
    failures += [f"mpi_spc_attach does not name {c}" for c in counters
                 if not re.search(rf"\b{c}\b", attach)]
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
