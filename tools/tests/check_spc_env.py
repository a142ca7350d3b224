"""Tests spc-env: the copy installed in the build's bin/ prints exports that,
evaluated by bash, put the build's mpirun, mpicc, spc-check-binary, lib/ and
man pages first and keep what was there; a prefix with a space and a quote
in its path survives the quoting; outside a prefix, and with a bad argument,
it says why and exits 2.

usage: /usr/bin/python3 check_spc_env.py PREFIX SPC_ENV SCRATCH"""
import os
import shutil
import sys
import tempfile

from common import check, finish, run


def evaluated(spc_env, env=None):
    """{name: value} after eval "$(spc_env)" in bash, with where mpirun etc. are."""
    script = ('eval "$("$0")" || exit 1\n'
              'printf "%s\\n" "$SPC_PREFIX" "$PATH" "$LD_LIBRARY_PATH" "$MANPATH" '
              '"$(command -v mpirun)" "$(command -v mpicc)" "$(command -v spc-check-binary)"\n')
    result = run(["bash", "-c", script, spc_env], env=env)
    keys = ["SPC_PREFIX", "PATH", "LD_LIBRARY_PATH", "MANPATH", "mpirun", "mpicc", "spc-check-binary"]
    return dict(zip(keys, result.stdout.splitlines())) if result.returncode == 0 else {}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    prefix, source, scratch = sys.argv[1:]
    prefix = os.path.realpath(prefix)
    os.makedirs(scratch, exist_ok=True)
    installed = os.path.join(prefix, "bin", "spc-env")
    env = dict(os.environ, PATH="/usr/bin:/bin", LD_LIBRARY_PATH="/opt/other/lib")
    env.pop("MANPATH", None)
    got = evaluated(installed, env)
    check(got.get("SPC_PREFIX") == prefix, f"SPC_PREFIX is {got.get('SPC_PREFIX')}")
    check(got.get("PATH") == f"{prefix}/bin:/usr/bin:/bin", f"PATH is {got.get('PATH')}")
    check(got.get("LD_LIBRARY_PATH") == f"{prefix}/lib:/opt/other/lib",
          f"LD_LIBRARY_PATH is {got.get('LD_LIBRARY_PATH')}")
    check(got.get("MANPATH") == f"{prefix}/share/man:", f"MANPATH is {got.get('MANPATH')} (the trailing"
          " colon keeps the system's pages)")
    check(os.path.exists(f"{prefix}/share/man/man1/mpirun.1"), "the build has no mpirun(1) man page")
    for tool in ("mpirun", "mpicc", "spc-check-binary"):
        check(got.get(tool) == f"{prefix}/bin/{tool}", f"{tool} is {got.get(tool)}, not the build's")
    env.pop("LD_LIBRARY_PATH")
    got = evaluated(installed, env)
    check(got.get("LD_LIBRARY_PATH") == f"{prefix}/lib", f"LD_LIBRARY_PATH alone is {got.get('LD_LIBRARY_PATH')}")

    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        odd = os.path.join(folder, "it's a prefix")
        os.makedirs(os.path.join(odd, "bin"))
        os.symlink(os.path.join(prefix, "lib"), os.path.join(odd, "lib"))
        os.symlink(os.path.join(prefix, "bin", "mpirun"), os.path.join(odd, "bin", "mpirun"))
        shutil.copy(source, os.path.join(odd, "bin", "spc-env"))
        got = evaluated(os.path.join(odd, "bin", "spc-env"), env)
        check(got.get("SPC_PREFIX") == os.path.realpath(odd), f"odd prefix came back as {got.get('SPC_PREFIX')}")

        os.makedirs(os.path.join(folder, "nowhere", "bin"))
        stray = os.path.join(folder, "nowhere", "bin", "spc-env")
        shutil.copy(source, stray)
        result = run([stray])
        check(result.returncode == 2 and "is not an Open MPI build" in result.stderr and not result.stdout,
              "outside a prefix it does not refuse clearly")
    result = run([installed, "--bogus"])
    check(result.returncode == 2 and "unknown argument" in result.stderr, "a bad argument is not refused")
    result = run([installed, "--help"])
    check(result.returncode == 0 and "SYNOPSIS" in result.stdout, "no manual from --help")
    finish()


if __name__ == "__main__":
    main()
