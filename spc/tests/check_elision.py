#!/usr/bin/env python3
"""Checks that objects compiled with SPC_ENABLE 0 reference no SPC symbol.

usage: check_elision.py NM OFF_ARCHIVE ON_ARCHIVE
The ON archive (the same source with SPC compiled in) must reference SPC
symbols, which shows the check can see them."""
import subprocess
import sys


def spc_references(nm, archive):
    out = subprocess.run([nm, "--undefined-only", "--format=just-symbols", archive],
                         check=True, capture_output=True, text=True).stdout
    return sorted({s for s in out.split() if "spc" in s.lower()})


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    nm, off, on = sys.argv[1:]
    off_refs, on_refs = spc_references(nm, off), spc_references(nm, on)
    print(f"compiled out: {off_refs or 'no SPC symbols'}")
    print(f"compiled in:  {on_refs}")
    ok = True
    if off_refs:
        print("FAIL: the compiled-out object references SPC symbols")
        ok = False
    if not on_refs:
        print("FAIL: the compiled-in control references no SPC symbol: the check is blind")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
