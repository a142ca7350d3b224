#!/usr/bin/env python3
"""Disassembles the update probes of a shared library built against libspc.

usage: check_no_call.py OBJDUMP PROBE_LIBRARY

Every probe_* function must contain no call and no jump into the PLT, and
nothing in the library may call __tls_get_addr.  The only call allowed is the
once-per-thread spc_thread_shard_create, in a probe's cold part (.cold),
which the compiler places outside the function body.  probe_control calls
spc_read on purpose and must be reported as calling, which shows the check
sees calls."""
import re
import subprocess
import sys

CALL = re.compile(r"\b(call|jmp)\w*\s+\S+\s+<([^>]+)>")


def functions(objdump, library):
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", library],
                          check=True, capture_output=True, text=True).stdout
    bodies, name = {}, None
    for line in text.splitlines():
        header = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if header:
            name = header.group(1)
            bodies[name] = []
        elif name and line.strip():
            bodies[name].append(line.strip())
        else:
            name = None
    return bodies


def calls(body):
    """Targets of calls, and of jumps that leave for another function."""
    found = []
    for line in body:
        m = CALL.search(line)
        if m and (m.group(1).startswith("call") or "@plt" in m.group(2)):
            found.append(m.group(2))
    return found


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bodies = functions(*sys.argv[1:])
    probes = sorted(n for n in bodies if n.startswith("probe_") and "." not in n)
    ok = True
    if not probes or "probe_control" not in probes:
        print(f"FAIL: probes not found in {sys.argv[2]}")
        sys.exit(1)
    for name in probes:
        hot, cold = calls(bodies[name]), calls(bodies.get(name + ".cold", []))
        print(f"== {name}: {len(bodies[name])} instructions, calls {hot or 'none'}; "
              f"cold part calls {cold or 'none'}")
        print("   " + "\n   ".join(bodies[name]))
        if name == "probe_control":
            if not any("spc_read" in target for target in hot):
                print("FAIL: the checker did not see probe_control's call to spc_read")
                ok = False
            continue
        if hot:
            print(f"FAIL: {name} calls {hot} on its hot path")
            ok = False
        if any(not target.startswith("spc_thread_shard_create") for target in cold):
            print(f"FAIL: {name}'s cold part calls {cold}")
            ok = False
    tls = [n for n, body in bodies.items() if any("__tls_get_addr" in line for line in body)]
    if tls:
        print(f"FAIL: __tls_get_addr is called in {tls}")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
