/*
 * Stands in, in the SPC build's lib/, for an Open MPI library that build does
 * not have (the Fortran bindings: it is configured with --disable-mpi-fortran).
 * A Fortran program built against another Open MPI 4.1, started with this
 * build's lib/ first in LD_LIBRARY_PATH, would otherwise load the system's
 * copy, which stops at start with "symbol lookup error: ... undefined symbol:
 * mpi_conversion_fn_null_" (it needs Fortran parts of libmpi that ours lacks).
 * The loader takes this file instead and its constructor, which runs before
 * main and before any lazily bound MPI call, says what is wrong.  A program
 * linked with -z now fails in the loader first, naming the missing symbol.
 *
 * Built once per library name: -DSPC_LIBRARY_NAME="libmpi_mpifh.so.40".
 */
#include <errno.h> /* program_invocation_short_name (_GNU_SOURCE) */
#include <stdio.h>
#include <unistd.h>

#ifndef SPC_LIBRARY_NAME
#error "define SPC_LIBRARY_NAME, the soname this file stands in for"
#endif

/* spc-check-binary tells this file from a real library by this symbol. */
__attribute__((visibility("default"))) const char spc_missing_bindings_stub[] = SPC_LIBRARY_NAME;

__attribute__((constructor)) static void refuse_to_start(void)
{
    fprintf(stderr,
            "%s needs " SPC_LIBRARY_NAME ", Open MPI's Fortran bindings, which this Open MPI\n"
            "build with SPC counters does not have (configured with --disable-mpi-fortran).\n"
            "Run it with the Open MPI it was built with. spc-check-binary PROGRAM tells which\n"
            "programs can run with this build.\n",
            program_invocation_short_name);
    _exit(127); /* what the loader returns when a program cannot start */
}
