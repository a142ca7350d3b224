#!/usr/bin/env python3
"""Checks the update sites as they land in another shared library (as in libmpi).

usage: check_fast_path.py OBJDUMP NM SITE_DUMP PROBE_LIBRARY

1. In the file: no probe_* function calls anything but the once-per-thread
   spc_thread_shard_create and the sampled timer's spc_timer_next_gap_, none
   jumps into the PLT, and nothing calls __tls_get_addr.  probe_control calls
   spc_read on purpose and must be seen calling.
2. Loaded, with every counter off, the hot body (entry to the first ret) of
   each site probe is its sites alone: one 5-byte no-op per site, then ret.
   The control half: the same bytes in the file are jumps, and loaded with
   SPC_SITES=flag they stay jumps, so the check sees what is not a no-op."""
import os
import re
import subprocess
import sys
import tempfile

CALL = re.compile(r"\b(call|jmp)\w*\s+\S+\s+<([^>]+)>")
ALLOWED_CALLS = ("spc_thread_shard_create", "spc_timer_next_gap_")
# probe: its number of sites
SITE_PROBES = {"probe_record": 1, "probe_user_or_mpi": 1, "probe_timer": 2, "probe_hook": 1}
NOP5 = "nopl   0x0(%rax,%rax,1)"
# Besides its sites, a hot body may hold only ret, the timer's "= 0" (one
# zeroing instruction) and, in a probe as small as probe_timer, the frame the
# compiler keeps for its out-of-line update code.
FRAME = re.compile(r"^(ret|push\s|pop\s|(sub|add)\s+\$0x[0-9a-f]+,%rsp)")
ZEROING = re.compile(r"^(xor\s+(%\w+),\2|movq?\s+\$0x0,)")


def disassemble(objdump, args):
    return subprocess.run([objdump, *args], check=True, capture_output=True, text=True).stdout


def functions(text):
    """{name: [instruction text, ...]} from objdump -d output."""
    bodies, name = {}, None
    for line in text.splitlines():
        header = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if header:
            name = header.group(1)
            bodies[name] = []
        elif name and "\t" in line:
            bodies[name].append(line.split("\t")[-1].strip())
        elif not line.strip():
            name = None
    return bodies


def calls(body):
    found = []
    for line in body:
        m = CALL.search(line)
        if m and (m.group(1).startswith("call") or "@plt" in m.group(2)):
            found.append(m.group(2))
    return found


def hot_body(instructions):
    """Instructions from the entry to the first ret, ret included."""
    hot = []
    for line in instructions:
        hot.append(line)
        if line.startswith("ret"):
            break
    return hot


def loaded_bodies(objdump, site_dump, library, sizes, env):
    """The probes' bytes in memory after loading, disassembled."""
    args = [f"{name}:{sizes[name]}" for name in SITE_PROBES]
    out = subprocess.run([site_dump, library, *args], check=True, capture_output=True, text=True,
                         env=env).stdout
    bodies = {}
    for line in out.splitlines():
        name, hex_bytes = line.split()
        with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
            f.write(bytes.fromhex(hex_bytes))
        try:
            text = disassemble(objdump, ["-D", "-b", "binary", "-m", "i386:x86-64", f.name])
        finally:
            os.unlink(f.name)
        bodies[name] = [l.split("\t")[-1].strip() for l in text.splitlines()
                        if re.match(r"^\s+[0-9a-f]+:\t", l)]
    return bodies


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    objdump, nm, site_dump, library = sys.argv[1:]
    ok = True

    bodies = functions(disassemble(objdump, ["-d", "--no-show-raw-insn", library]))
    probes = sorted(n for n in bodies if n.startswith("probe_") and "." not in n)
    if "probe_control" not in probes or not set(SITE_PROBES) <= set(probes):
        sys.exit(f"FAIL: probes not found in {library}")
    for name in probes:
        found = calls(bodies[name]) + calls(bodies.get(name + ".cold", []))
        print(f"== {name}: calls {found or 'none'}")
        if name == "probe_control":
            if not any("spc_read" in target for target in found):
                print("FAIL: the checker did not see probe_control's call to spc_read")
                ok = False
        elif any(not target.startswith(ALLOWED_CALLS) for target in found):
            print(f"FAIL: {name} calls {found}")
            ok = False
    tls = [n for n, body in bodies.items() if any("__tls_get_addr" in line for line in body)]
    if tls:
        print(f"FAIL: __tls_get_addr is called in {tls}")
        ok = False

    sizes = {}
    for line in subprocess.run([nm, "-S", "--defined-only", library], check=True,
                               capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] in SITE_PROBES:
            sizes[parts[3]] = int(parts[1], 16)
    patched = loaded_bodies(objdump, site_dump, library, sizes, dict(os.environ))
    flagged = loaded_bodies(objdump, site_dump, library, sizes, dict(os.environ, SPC_SITES="flag"))
    for name, sites in SITE_PROBES.items():
        hot = hot_body(patched[name])
        print(f"== {name} loaded, counters off: {hot}")
        others = [line for line in hot if line != NOP5 and not FRAME.match(line)]
        zeroing_allowed = 1 if name == "probe_timer" else 0
        if hot.count(NOP5) != sites or len(others) > zeroing_allowed or \
                any(not ZEROING.match(line) for line in others):
            print(f"FAIL: {name}'s hot body is not {sites} 5-byte no-op(s) (and frame, ret)")
            ok = False
        for control, what in ((hot_body(bodies[name]), "in the file"),
                              (hot_body(flagged[name]), "loaded with SPC_SITES=flag")):
            if NOP5 in control or not any(line.startswith("jmp") for line in control):
                print(f"FAIL: {name} {what} should hold jumps, not no-ops: {control}")
                ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
