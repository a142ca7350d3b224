"""Our three Fortran libraries as drop-ins for Debian's (libopenmpi3 4.1.4):
`ompi_info --all`'s Fortran lines (every "Fort ..." line, the MPI extensions
and MPI1 compatibility, which decide the names the libraries hold) of our
prefix/bin/ompi_info and /usr/bin/ompi_info, and of libmpi_mpifh.so.40,
libmpi_usempi_ignore_tkr.so.40 and libmpi_usempif08.so.40 the exported
names with their symbol types (`nm -D --defined-only`), sonames and needed
libraries: each must be equal, and every difference is named.  And every
name Debian's three import is defined by our libmpi, libopen-pal, Fortran
libraries or libc, so Debian's Fortran layer binds to our libmpi.  The
control: a name list with one name taken out and one put in must show both.

usage: /usr/bin/python3 check_dropin.py PREFIX"""
import os
import subprocess
import sys

# tools/tests/common.py, on PYTHONPATH (tools/fortran/meson.build sets it)
from common import check, finish, mpirun_env


def quiet(command, env=None):
    """Runs command; its output is long, so only the command is shown."""
    print("$", " ".join(command), flush=True)
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)

DEBIAN_OMPI_INFO = "/usr/bin/ompi_info"
DEBIAN_LIBDIR = "/usr/lib/x86_64-linux-gnu"
FORTRAN_LIBRARIES = ("libmpi_mpifh.so.40", "libmpi_usempi_ignore_tkr.so.40", "libmpi_usempif08.so.40")
OTHER_KEYS = ("MPI extensions", "MPI1 compatibility")


def fortran_lines(ompi_info, prefix):
    """{key: value} of ompi_info --all's Fortran lines."""
    env = mpirun_env(prefix)  # the run-as-root lines; our lib/ first (ignored by Debian's, which has a run path)
    if not ompi_info.startswith(prefix):
        env.pop("LD_LIBRARY_PATH", None)
    result = quiet([ompi_info, "--all"], env=env)
    check(result.returncode == 0, f"{ompi_info} --all failed")
    lines = {}
    for line in result.stdout.splitlines():
        key, colon, value = line.strip().partition(":")
        if colon and (key.startswith("Fort ") or key in OTHER_KEYS):
            lines[key] = value.strip()
            print(f"  {key}: {lines[key]}")
    return lines


def exported(library):
    """"TYPE NAME" of each name library exports (its defined dynamic symbols)."""
    result = quiet(["nm", "-D", "--defined-only", library])
    check(result.returncode == 0, f"nm -D {library} failed")
    return {" ".join(line.split()[-2:]) for line in result.stdout.splitlines() if len(line.split()) >= 3}


def imported(library):
    """The names library needs defined elsewhere (undefined, not weak)."""
    result = quiet(["nm", "-D", "--undefined-only", library])
    check(result.returncode == 0, f"nm -D {library} failed")
    return {line.split()[-1].split("@")[0] for line in result.stdout.splitlines()
            if len(line.split()) == 2 and line.split()[0] == "U"}


def dynamic_entries(library):
    """Its SONAME and NEEDED entries."""
    result = quiet(["readelf", "-dW", library])
    return [line.split(None, 2)[-1] for line in result.stdout.splitlines() if "(SONAME)" in line or "(NEEDED)" in line]


def differences(ours, theirs):
    """(only ours, only Debian's): sorted."""
    return sorted(ours - theirs), sorted(theirs - ours)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    prefix = os.path.realpath(sys.argv[1])

    ours = fortran_lines(os.path.join(prefix, "bin", "ompi_info"), prefix)
    debian = fortran_lines(DEBIAN_OMPI_INFO, prefix)
    check(len(debian) >= 70, f"only {len(debian)} Fortran lines from Debian's ompi_info")
    for key in sorted(set(ours) | set(debian)):
        check(ours.get(key) == debian.get(key),
              f"ompi_info '{key}': ours {ours.get(key)!r}, Debian's {debian.get(key)!r}")
    print(f"ompi_info: {len(debian)} Fortran lines of Debian's, {len(ours)} of ours compared")

    for name in FORTRAN_LIBRARIES:
        our_names = exported(os.path.join(prefix, "lib", name))
        debian_names = exported(os.path.join(DEBIAN_LIBDIR, name))
        only_ours, only_debian = differences(our_names, debian_names)
        print(f"{name}: {len(debian_names)} names in Debian's, {len(our_names)} in ours")
        check(not only_ours, f"{name}: only ours exports {len(only_ours)} names: {' '.join(only_ours)}")
        check(not only_debian, f"{name}: only Debian's exports {len(only_debian)} names: {' '.join(only_debian)}")
        if name == FORTRAN_LIBRARIES[0]:
            # control: the comparison sees one name gone and one added
            planted = (debian_names - {"W mpi_send_"}) | {"W mpi_planted_"}
            check(differences(planted, debian_names) == (["W mpi_planted_"], ["W mpi_send_"]),
                  "control: a planted difference of the name lists was not seen")
        ours_dynamic = dynamic_entries(os.path.join(prefix, "lib", name))
        debian_dynamic = dynamic_entries(os.path.join(DEBIAN_LIBDIR, name))
        check(ours_dynamic == debian_dynamic and debian_dynamic,
              f"{name}: soname and needed libraries: ours {ours_dynamic}, Debian's {debian_dynamic}")

    # What Debian's Fortran libraries import, against what ours and libc define.
    defined = set()
    for library in [os.path.join(prefix, "lib", n) for n in ("libmpi.so.40", "libopen-pal.so.40") + FORTRAN_LIBRARIES] \
            + [os.path.join(DEBIAN_LIBDIR, "libc.so.6")]:
        defined |= {entry.split()[-1].split("@")[0] for entry in exported(library)}
    for name in FORTRAN_LIBRARIES:
        missing = sorted(imported(os.path.join(DEBIAN_LIBDIR, name)) - defined)
        print(f"{name}: Debian's imports {len(imported(os.path.join(DEBIAN_LIBDIR, name)))} names")
        check(not missing, f"Debian's {name} imports {len(missing)} names ours do not define: {' '.join(missing)}")
    finish()


if __name__ == "__main__":
    main()
