/*
 * The start-up check of the tools that load libmpi into an MPI process (the
 * event logger, libspc_fortran): one line that says why, instead of a job
 * that goes wrong.  Open MPI 4.1 and 5.0 both call their library
 * libmpi.so.40, so nothing stops a rank that Open MPI 5.0's mpirun (PRRTE)
 * started from loading a 4.1 libmpi: the program's own (Debian's, found by
 * the system's loader, or the one its run path names), or the one a tool
 * built by a 4.1 mpicc brings by its run path into a Python process.  Such
 * a rank does not join its job: Debian's 4.1.4 runs each rank alone (rank 0
 * of 1, exit 0), our 4.1.4 build fails in MPI_Init with pages of PMIx
 * errors.  (A 5.0 libmpi under 4.1's mpirun joins its job; a tool built
 * for one version over the other's libmpi records the same: nothing to say.)
 *
 * PRRTE tells each rank it started (PRTE_LAUNCHED) which Open MPI it is
 * (OMPI_VERSION) and where its lib/ is (OMPI_LIBDIR_LOC);
 * MPI_Get_library_version, callable before MPI_Init, names the libmpi that
 * runs.  Included by spc_event_logger.c and ../fortran/spc_fortran.c, each
 * compiled by the mpicc of the build it is for; needs _GNU_SOURCE (dladdr).
 */
#ifndef SPC_LAUNCHER_CHECK_H
#define SPC_LAUNCHER_CHECK_H

#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 with message set (one line, no newline) when this process was started by
 * Open MPI 5's mpirun but runs an Open MPI 4 (or older) libmpi; else 0. */
static inline int spc_launcher_mismatch(const char *tool, char *message, size_t size)
{
    const char *launched = getenv("PRTE_LAUNCHED"), *launcher = getenv("OMPI_VERSION");
    if (NULL == launched || NULL == launcher || atoi(launcher) < 5) {
        return 0;
    }
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int length = 0, major = 0, minor = 0, release = 0;
    if (MPI_SUCCESS != MPI_Get_library_version(version, &length) ||
        3 != sscanf(version, "Open MPI v%d.%d.%d", &major, &minor, &release) || major >= 5) {
        return 0;
    }
    Dl_info found;
    char library[PATH_MAX] = "libmpi.so.40";
    if (0 != dladdr((void *)MPI_Get_library_version, &found) && NULL != found.dli_fname &&
        NULL == realpath(found.dli_fname, library)) {
        snprintf(library, sizeof library, "%s", found.dli_fname);
    }
    /* that mpirun's build: the folder above its lib/ */
    char prefix[1024] = "PREFIX";
    const char *libdir = getenv("OMPI_LIBDIR_LOC");
    if (NULL != libdir && '\0' != libdir[0]) {
        snprintf(prefix, sizeof prefix, "%s", libdir);
        char *slash = strrchr(prefix, '/');
        if (NULL != slash && 0 == strcmp(slash, "/lib")) {
            *slash = '\0';
        }
    }
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    snprintf(message, size,
             "%s (rank %s; built for Open MPI %d.%d.%d): started by Open MPI %s's mpirun, but this process "
             "runs Open MPI %d.%d.%d's libmpi (%s), which does not join that job (each rank runs alone, or "
             "MPI_Init fails); put that build's lib/ first for the ranks: eval \"$(%s/bin/spc-env)\", then "
             "mpirun; this rank stops here",
             tool, NULL != rank ? rank : "?", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION, launcher,
             major, minor, release, library, prefix);
    return 1;
}

#endif
