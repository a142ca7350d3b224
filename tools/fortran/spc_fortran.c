/*
 * libspc_fortran: SPC counters read through MPI_T from Fortran.  MPI_T has no
 * Fortran binding (MPI 3.1 section 14.3), so this small C layer does the
 * MPI_T work and hands Fortran plain integers: a counter is looked up by
 * name (SEND or OMPI_SPC_SEND), bound to a communicator given as a Fortran
 * handle if asked, started, and read as a 64-bit integer.  Every call
 * returns an error code (SPC_FORTRAN_* below, the same values as the
 * parameters of spc_counters.f90) and keeps a message saying what went wrong:
 * an unknown name is an error the program can print, not a crash.
 *
 * The Fortran interface is the module spc_counters (spc_counters.f90);
 * tools/fortran/install.sh builds both into libspc_fortran.so.  Names come
 * from <spc/names.h>, and the search over MPI_T variables is the one every
 * MPI_T reader of ours shares (<spc/spc_mpit_client.h>).
 *
 * Loaded with the program, before main: a rank that Open MPI 5's mpirun
 * started on an Open MPI 4 libmpi (a program built by a 4.1 mpifort, its
 * lib/ not first) would run alone or fail in MPI_Init; it stops there with
 * one line saying so (../events/spc_launcher_check.h), exit status 1.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../events/spc_launcher_check.h"
#include "spc/names.h"
#include "spc/spc_mpit_client.h"

enum {
    SPC_FORTRAN_OK = 0,
    SPC_FORTRAN_UNKNOWN_COUNTER = 1, /* no such variable in this Open MPI */
    SPC_FORTRAN_NOT_PER_COMM = 2,    /* the counter is not kept per communicator */
    SPC_FORTRAN_BAD_HANDLE = 3,      /* not a handle this library gave out, or freed */
    SPC_FORTRAN_NOT_SCALAR = 4,      /* an array variable (per peer, histogram) */
    SPC_FORTRAN_MPI_T = 5,           /* an MPI_T call failed; the message names it */
    SPC_FORTRAN_NO_MPI = 6,          /* a bound counter before MPI_Init or after MPI_Finalize */
};

static char last_error[1536] = "no error";
static int mpit_up;
static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle *handles;
static int handle_count, handle_capacity;

/* At load time, before the program's MPI_Init (spc_launcher_check.h). */
__attribute__((constructor)) static void check_launcher(void)
{
    char message[2048];
    if (spc_launcher_mismatch("spc_counters", message, sizeof message)) {
        fprintf(stderr, "%s\n", message);
        exit(1);
    }
}

static int fail(int code, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return code;
}

/* The MPI_T error string of rc, for messages. */
static const char *mpit_error(int rc)
{
    static char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_SUCCESS != MPI_Error_string(rc, text, &len)) {
        snprintf(text, sizeof text, "MPI error %d", rc);
    }
    return text;
}

static int ensure_session(void)
{
    if (mpit_up) {
        return SPC_FORTRAN_OK;
    }
    int provided, rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (MPI_SUCCESS != rc) {
        return fail(SPC_FORTRAN_MPI_T, "spc_counters: MPI_T_init_thread failed: %s", mpit_error(rc));
    }
    rc = MPI_T_pvar_session_create(&session);
    if (MPI_SUCCESS != rc) {
        MPI_T_finalize();
        return fail(SPC_FORTRAN_MPI_T, "spc_counters: MPI_T_pvar_session_create failed: %s", mpit_error(rc));
    }
    mpit_up = 1;
    return SPC_FORTRAN_OK;
}

struct search {
    const char *name;
    int index;
    char names[1024]; /* the counters there are, for the message when none matches */
};

static void match(const struct spc_pvar_info *pvar, void *context)
{
    struct search *search = context;
    if (0 == strcasecmp(pvar->name, search->name)) {
        search->index = pvar->index;
    }
    size_t used = strlen(search->names);
    snprintf(search->names + used, sizeof search->names - used, "%s%s", used ? " " : "", pvar->name);
}

/* The counter's name without OMPI_SPC_ (either spelling is accepted). */
static const char *bare(const char *name)
{
    return 0 == strncasecmp(name, SPC_COUNTER_PREFIX, strlen(SPC_COUNTER_PREFIX))
               ? name + strlen(SPC_COUNTER_PREFIX)
               : name;
}

/* Starts the counter name (NUL-terminated; bound to the communicator whose
 * Fortran handle is comm if bound is nonzero) and gives its handle, a
 * number from 1, in *handle. */
int spc_fortran_start(const char *name, MPI_Fint comm, int bound, int *handle)
{
    *handle = 0;
    int rc = ensure_session();
    if (SPC_FORTRAN_OK != rc) {
        return rc;
    }
    int started = 0, finished = 0;
    MPI_Initialized(&started);
    MPI_Finalized(&finished);
    if (bound && (!started || finished)) {
        return fail(SPC_FORTRAN_NO_MPI, "spc_counters: counter %s bound to a communicator needs MPI "
                    "initialised (between MPI_Init and MPI_Finalize)", name);
    }
    struct search search = {bare(name), -1, ""};
    const char *prefix = bound ? SPC_COMM_PVAR_PREFIX SPC_COUNTER_PREFIX : SPC_PVAR_PREFIX SPC_COUNTER_PREFIX;
    spc_for_each_pvar_named(prefix, match, &search);
    if (search.index < 0) {
        if (bound && spc_pvar_find(search.name) >= 0) {
            return fail(SPC_FORTRAN_NOT_PER_COMM, "spc_counters: counter %s is not kept per communicator "
                        "(no MPI_T variable %s%s); those that are: %s", name, prefix, search.name,
                        search.names);
        }
        return fail(SPC_FORTRAN_UNKNOWN_COUNTER, "spc_counters: unknown counter %s (no MPI_T variable %s%s "
                    "in this Open MPI; is it built with SPC?)", name, prefix, search.name);
    }
    MPI_Comm c_comm = bound ? MPI_Comm_f2c(comm) : MPI_COMM_NULL;
    if (bound && MPI_COMM_NULL == c_comm) {
        return fail(SPC_FORTRAN_MPI_T, "spc_counters: counter %s: Fortran handle %d is no communicator",
                    name, (int)comm);
    }
    MPI_T_pvar_handle new_handle;
    int count = 0;
    rc = MPI_T_pvar_handle_alloc(session, search.index, bound ? (void *)&c_comm : NULL, &new_handle, &count);
    if (MPI_SUCCESS != rc) {
        return fail(SPC_FORTRAN_MPI_T, "spc_counters: MPI_T_pvar_handle_alloc of %s%s failed: %s", prefix,
                    search.name, mpit_error(rc));
    }
    if (1 != count) {
        MPI_T_pvar_handle_free(session, &new_handle);
        return fail(SPC_FORTRAN_NOT_SCALAR, "spc_counters: %s%s holds %d values, not one", prefix,
                    search.name, count);
    }
    rc = MPI_T_pvar_start(session, new_handle);
    if (MPI_SUCCESS != rc) {
        MPI_T_pvar_handle_free(session, &new_handle);
        return fail(SPC_FORTRAN_MPI_T, "spc_counters: MPI_T_pvar_start of %s%s failed: %s", prefix,
                    search.name, mpit_error(rc));
    }
    if (handle_count == handle_capacity) {
        int capacity = handle_capacity ? 2 * handle_capacity : 16;
        MPI_T_pvar_handle *grown = realloc(handles, (size_t)capacity * sizeof *grown);
        if (NULL == grown) {
            MPI_T_pvar_handle_free(session, &new_handle);
            return fail(SPC_FORTRAN_MPI_T, "spc_counters: out of memory");
        }
        handles = grown;
        handle_capacity = capacity;
    }
    handles[handle_count++] = new_handle;
    *handle = handle_count;
    return SPC_FORTRAN_OK;
}

static int handle_of(int handle, MPI_T_pvar_handle **found)
{
    if (handle < 1 || handle > handle_count || MPI_T_PVAR_HANDLE_NULL == handles[handle - 1]) {
        return fail(SPC_FORTRAN_BAD_HANDLE, "spc_counters: %d is not a started counter's handle", handle);
    }
    *found = &handles[handle - 1];
    return SPC_FORTRAN_OK;
}

/* What the counter counted since its start (MPI_T's delta of a started handle). */
int spc_fortran_read(int handle, int64_t *value)
{
    MPI_T_pvar_handle *found = NULL;
    int rc = handle_of(handle, &found);
    if (SPC_FORTRAN_OK != rc) {
        return rc;
    }
    unsigned long long read = 0;
    rc = MPI_T_pvar_read(session, *found, &read);
    if (MPI_SUCCESS != rc) {
        return fail(SPC_FORTRAN_MPI_T, "spc_counters: MPI_T_pvar_read of handle %d failed: %s", handle,
                    mpit_error(rc));
    }
    *value = (int64_t)read;
    return SPC_FORTRAN_OK;
}

/* Stops and frees one counter's handle. */
int spc_fortran_free(int handle)
{
    MPI_T_pvar_handle *found = NULL;
    int rc = handle_of(handle, &found);
    if (SPC_FORTRAN_OK != rc) {
        return rc;
    }
    rc = MPI_T_pvar_handle_free(session, found); /* stops it (patch "mpit: performance variables with the standard's semantics") */
    *found = MPI_T_PVAR_HANDLE_NULL;
    if (MPI_SUCCESS != rc) {
        return fail(SPC_FORTRAN_MPI_T, "spc_counters: MPI_T_pvar_handle_free of handle %d failed: %s", handle,
                    mpit_error(rc));
    }
    return SPC_FORTRAN_OK;
}

/* Frees every handle and the session, and leaves MPI_T; call it before
 * freeing a communicator a counter is bound to, and before MPI_Finalize. */
int spc_fortran_finalize(void)
{
    if (!mpit_up) {
        return SPC_FORTRAN_OK;
    }
    int rc = MPI_T_pvar_session_free(&session); /* frees the session's handles */
    free(handles);
    handles = NULL;
    handle_count = handle_capacity = 0;
    mpit_up = 0;
    MPI_T_finalize();
    if (MPI_SUCCESS != rc) {
        return fail(SPC_FORTRAN_MPI_T, "spc_counters: MPI_T_pvar_session_free failed: %s", mpit_error(rc));
    }
    return SPC_FORTRAN_OK;
}

/* The last error's message into message (size bytes, NUL-terminated); its length. */
int spc_fortran_error_message(char *message, int size)
{
    if (size > 0) {
        snprintf(message, (size_t)size, "%s", last_error);
    }
    return (int)strlen(last_error);
}
