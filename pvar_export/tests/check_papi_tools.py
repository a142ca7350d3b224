#!/usr/bin/env python3
"""PAPI's own tools see the SPC events of libspc_papi:
- `papi_native_avail -sde LIBRARY` lists exactly the catalogue's counters as
  sde:::ompi_spc::<NAME>, each with the catalogue's description;
- `papi_command_line` in a process where the library is loaded reads a level
  that the preloaded fixture set to 3 (the fixture registers the counters
  that wait for a PML, as MPI_Init does);
- without the fixture, in a process that never runs MPI_Init, such a counter
  is not registered and reads -1, PAPI's value for an event no library
  registered, not a 0 that would look like a measurement.

usage: check_papi_tools.py CATALOGUE_LIST LIBRARY FIXTURE
  CATALOGUE_LIST  the spc_catalogue_list program
  LIBRARY         libspc_papi.so (or a library that depends on it, e.g. libmpi)
  FIXTURE         papi_fixture.so"""
import os
import re
import subprocess
import sys


def run(command, **kwargs):
    print("$", " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, **kwargs)
    if result.returncode != 0:
        print(result.stdout + result.stderr)
        sys.exit(f"FAIL: exit {result.returncode}")
    return result.stdout


def listed_events(text):
    """{event: description} from papi_native_avail's table, whose rows are
    '| NAME' followed by '|  description' continuation lines."""
    events, current = {}, None
    for line in text.splitlines():
        match = re.match(r"\|\s+(sde:::\S+)\s*\|?\s*$", line)
        if match:
            current = match.group(1)
            events[current] = ""
            continue
        if current and line.startswith("|") and not line.startswith("|--"):
            events[current] = (events[current] + " " + line.strip("| \t")).strip()
        elif line.startswith("---") or not line.strip():
            current = None
    return events


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    catalogue_list, library, fixture = sys.argv[1:]
    catalogue = dict(line.split("\t", 1) for line in run([catalogue_list, "--papi-events"]).splitlines())
    prefix = run([catalogue_list, "--papi-prefix"]).strip()
    failures = []

    listed = {name: text for name, text in listed_events(run(["papi_native_avail", "-sde", library])).items()
              if name.startswith(prefix)}
    expected = {prefix + name for name in catalogue}
    for missing in sorted(expected - set(listed)):
        failures.append(f"papi_native_avail does not list {missing}")
    for extra in sorted(set(listed) - expected):
        failures.append(f"papi_native_avail lists {extra}, which is not in the catalogue")
    for name in sorted(expected & set(listed)):
        # the table wraps descriptions anywhere, even inside a word
        if "".join(listed[name].split()) != "".join(catalogue[name[len(prefix):]].split()):
            failures.append(f"{name}: described as '{listed[name]}'")
    print(f"papi_native_avail -sde: {len(listed)} of {len(catalogue)} catalogue counters listed")

    event = prefix + "OMPI_SPC_UNEXPECTED_IN_QUEUE"
    env = dict(os.environ, LD_PRELOAD=f"{os.path.abspath(library)} {os.path.abspath(fixture)}")
    output = run(["papi_command_line", event], env=env)
    value = re.search(re.escape(event) + r" :\s+(-?\d+)", output)
    if not value or int(value.group(1)) != 3:
        failures.append(f"papi_command_line read {value.group(1) if value else 'nothing'} of {event}, "
                        "expected the fixture's 3:\n" + output)
    else:
        print(f"papi_command_line: {event} = 3, as the fixture set it")

    waiting = prefix + "OMPI_SPC_OUT_OF_SEQUENCE"
    output = run(["papi_command_line", waiting], env=dict(os.environ, LD_PRELOAD=os.path.abspath(library)))
    value = re.search(re.escape(waiting) + r" :\s+(-?\d+)", output)
    if not value or int(value.group(1)) != -1:
        failures.append(f"papi_command_line read {value.group(1) if value else 'nothing'} of {waiting} "
                        "before any PML was chosen, expected PAPI's -1 for an unregistered event:\n" + output)
    else:
        print(f"papi_command_line: {waiting} = -1 with no PML chosen, not registered")

    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
