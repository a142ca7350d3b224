/*
 * Stands in, in the SPC build's lib/, for MPICH's libraries (soname 12).
 * A program built with MPICH's mpicc or mpif90, started with this build's
 * lib/ first in LD_LIBRARY_PATH (spc-env) and under its mpirun, would load
 * MPICH, find no launcher of its own and run as N unrelated one-rank jobs:
 * every rank 0 of 1, no error, nothing counted.  The loader takes this file
 * instead; its constructor, which runs before main and before any lazily
 * bound MPI call, says in one line what is wrong.  Each MPICH library gets
 * its own copy (MPICH's Fortran library binds data of its C library at load
 * time, so the system's copy of one beside this copy of the other would stop
 * in the loader with an undefined symbol instead).
 *
 * Built once per library name: -DSPC_LIBRARY_NAME="libmpich.so.12"; for
 * MPICH's Fortran library also -DSPC_MPICH_FORTRAN_OBJECTS.
 */
#include <dlfcn.h>
#include <errno.h> /* program_invocation_short_name (_GNU_SOURCE) */
#include <libgen.h>
#include <stdio.h>
#include <unistd.h>

#ifndef SPC_LIBRARY_NAME
#error "define SPC_LIBRARY_NAME, the soname this file stands in for"
#endif

#ifdef SPC_MPICH_FORTRAN_OBJECTS
/* The objects of MPICH's Fortran library that a `use mpi_f08` program itself
 * refers to (its MPI_STATUS_IGNORE, MPI_IN_PLACE, ...): the loader binds
 * those before any constructor runs and would stop, naming one, if they were
 * missing.  One byte each, less than the program's copy, so the loader
 * copies without a warning; nothing reads them. */
#define SPC_PLACEHOLDER __attribute__((visibility("default"))) char
SPC_PLACEHOLDER MPIR_F08_MPI_STATUS_IGNORE_OBJ[1], MPIR_F08_MPI_STATUSES_IGNORE_OBJ[1];
SPC_PLACEHOLDER MPIR_F08_MPI_IN_PLACE[1], MPIR_F08_MPI_BOTTOM[1];
#endif

__attribute__((constructor)) static void refuse_to_start(void)
{
    Dl_info self;
    char here[4096] = "this build's lib/";
    if (dladdr((void *)refuse_to_start, &self) && self.dli_fname) {
        snprintf(here, sizeof here, "%s", self.dli_fname);
        dirname(here);
    }
    fprintf(stderr,
            "%s was built with MPICH (it needs " SPC_LIBRARY_NAME "), not Open MPI, and %s"
            " (Open MPI with SPC counters) is first in LD_LIBRARY_PATH: run it with MPICH's mpiexec"
            " outside spc-env's environment, or rebuild it with this build's mpicc or mpifort to"
            " count it\n",
            program_invocation_short_name, here);
    _exit(127); /* what the loader returns when a program cannot start */
}
