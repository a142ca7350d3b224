"""With Debian's Open MPI installed beside ours (it must be: else this proves
nothing), the project's own MPI test programs must still be compiled against
our mpi.h, load our libmpi, and be started by our mpirun; our mpicc must
still compile against our headers and link our libmpi.  Asks the build
system and the loader, not the meson files: ninja's header dependencies of
each program's objects, ldd on each program, meson's list of tests.

usage: /usr/bin/python3 check_own_links.py PREFIX BUILD_DIR PROGRAM..."""
import json
import os
import re
import subprocess
import sys
import tempfile

from common import check, finish, run

DEBIAN_LIBMPI = "/usr/lib/x86_64-linux-gnu/libmpi.so.40"
DEBIAN_MPICC = "/usr/bin/mpicc.openmpi"


def loads_ours(program, prefix):
    """Checks with ldd, without LD_LIBRARY_PATH, that program loads prefix's libmpi."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    listed = run(["ldd", program], env=env).stdout
    found = re.search(r"libmpi\.so\.40 => (\S+)", listed)
    where = os.path.realpath(found.group(1)) if found else None
    ours = os.path.realpath(os.path.join(prefix, "lib", "libmpi.so.40"))
    check(where == ours, f"{program} loads libmpi.so.40 from {where}, not {ours}")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    prefix, build_dir, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
    prefix = os.path.realpath(prefix)
    check(os.path.exists(DEBIAN_LIBMPI) and os.path.exists(DEBIAN_MPICC),
          f"Debian's Open MPI is not installed ({DEBIAN_LIBMPI}, {DEBIAN_MPICC}): install_deps.sh installs it")
    our_header = os.path.realpath(os.path.join(prefix, "include", "mpi.h"))

    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        commands = json.load(f)
    for program in programs:
        loads_ours(program, prefix)
        # The objects of this program: meson names them <program>.p/<source>.o.
        name = os.path.relpath(os.path.abspath(program), os.path.abspath(build_dir))
        objects = [c["output"] for c in commands if c["output"].startswith(name + ".p/")]
        check(objects, f"no objects of {name} in compile_commands.json")
        for obj in objects:
            deps = subprocess.run(["ninja", "-C", build_dir, "-t", "deps", obj],
                                  capture_output=True, text=True).stdout
            headers = {os.path.realpath(os.path.join(build_dir, line.strip()))
                       for line in deps.splitlines()[1:] if line.strip().endswith("/mpi.h")}
            print(f"{obj}: mpi.h from {sorted(headers)}")
            check(headers == {our_header}, f"{obj} was compiled with mpi.h from {sorted(headers)}, not {our_header}")

    with open(os.path.join(build_dir, "meson-info", "intro-tests.json")) as f:
        launchers = {test["cmd"][0] for test in json.load(f) if os.path.basename(test["cmd"][0]) == "mpirun"}
    print("mpirun of the tests:", sorted(launchers))
    ours = os.path.realpath(os.path.join(prefix, "bin", "mpirun"))  # (mpirun links to orterun)
    check({os.path.realpath(launcher) for launcher in launchers} == {ours},
          f"the tests start ranks with {sorted(launchers)}, not only {prefix}/bin/mpirun")

    with tempfile.TemporaryDirectory() as folder:
        source, program = os.path.join(folder, "hello.c"), os.path.join(folder, "hello")
        with open(source, "w") as f:
            f.write("#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); return MPI_Finalize(); }\n")
        compiled = run([os.path.join(prefix, "bin", "mpicc"), "-H", "-o", program, source])
        check(compiled.returncode == 0, "our mpicc cannot compile an MPI program")
        included = re.findall(r"^\.+ (\S+/mpi\.h)$", compiled.stderr, re.M)
        check([os.path.realpath(h) for h in included[:1]] == [our_header],
              f"our mpicc included {included[:1]}, not {our_header}")
        if compiled.returncode == 0:
            loads_ours(program, prefix)
    finish()


if __name__ == "__main__":
    main()
