/*
 * spc_mpit_tool: an MPI_T tool as tools are written (issue 37), for the
 * tests of MPI_T around MPI's whole life.  Preloaded into an unchanged
 * program (LD_PRELOAD), it wraps PMPI_Init, PMPI_Init_thread and
 * PMPI_Finalize, which every binding reaches: C's MPI_Init (defined here
 * too, calling the same wrapper), Open MPI's Fortran bindings, which call
 * PMPI_Init themselves (ompi/mpi/fortran/mpif-h/init_f.c:84 in 4.1.4), and
 * mpi4py's MPI_Init_thread.  It
 *   - starts MPI_T before MPI starts (MPI_T_init_thread, then PMPI_Init);
 *   - once MPI has started, allocates and starts a handle on every SPC
 *     performance variable (runtime_spc_OMPI_SPC_<NAME>) in one session;
 *   - after MPI_Finalize has returned, reads every handle, frees them and
 *     the session and finalizes MPI_T: the order that crashed Open MPI
 *     4.1.4 in MPI_T_finalize (open-mpi/ompi#11485);
 *   - writes per rank to $SPC_MPIT_TOOL_OUTPUT.<rank> (standard error
 *     without it) one line per variable, "OMPI_SPC_<NAME> VALUE", or
 *     "OMPI_SPC_<NAME> error CALL RC" for a call that failed, then one line
 *     per MPI_T call of its own that can fail, "CALL RC" (0 is success),
 *     MPI_T_finalize's last, once it has returned.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spc/names.h"

#define PVAR_PREFIX SPC_PVAR_PREFIX SPC_COUNTER_PREFIX
/* The catalogue has fewer; a build with more is reported, not overrun. */
#define MAX_PVARS 512

struct pvar {
    char name[256]; /* without SPC_PVAR_PREFIX: OMPI_SPC_SEND */
    MPI_T_pvar_handle handle;
    int allocated;
    const char *failed; /* the first MPI_T call on it that failed, or NULL */
    int rc;             /* what that call returned */
    unsigned long long value;
};
static struct pvar pvars[MAX_PVARS];
static int num_pvars, skipped_pvars;
static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static int rank = -1;
/* The tool's own MPI_T calls that can fail, with what they returned. */
static int init_rc = -1, session_rc = -1, session_free_rc = -1;

/* The next definition of name after this library's: libmpi's. */
static void *real(const char *name)
{
    void *function = dlsym(RTLD_NEXT, name);
    if (NULL == function) {
        fprintf(stderr, "spc_mpit_tool: no %s after this library: is libmpi loaded?\n", name);
        abort();
    }
    return function;
}

static void before_init(void)
{
    int provided;
    init_rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
}

/* A started handle on every SPC variable. */
static void after_init(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (MPI_SUCCESS != init_rc || MPI_SUCCESS != (session_rc = MPI_T_pvar_session_create(&session))) {
        return;
    }
    int num;
    if (MPI_SUCCESS != MPI_T_pvar_get_num(&num)) {
        return;
    }
    for (int index = 0; index < num; ++index) {
        char name[256];
        int name_len = sizeof name, verbosity, var_class, bind, readonly, continuous, atomic, count;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(index, name, &name_len, &verbosity, &var_class, &datatype,
                                               &enumtype, NULL, NULL, &bind, &readonly, &continuous,
                                               &atomic) ||
            0 != strncmp(name, PVAR_PREFIX, strlen(PVAR_PREFIX))) {
            continue;
        }
        if (num_pvars == MAX_PVARS) {
            ++skipped_pvars;
            continue;
        }
        struct pvar *pvar = &pvars[num_pvars++];
        snprintf(pvar->name, sizeof pvar->name, "%s", name + strlen(SPC_PVAR_PREFIX));
        if (MPI_SUCCESS != (pvar->rc = MPI_T_pvar_handle_alloc(session, index, NULL, &pvar->handle, &count))) {
            pvar->failed = "MPI_T_pvar_handle_alloc";
            continue;
        }
        pvar->allocated = 1;
        if (1 != count) {
            pvar->failed = "count";
            pvar->rc = count;
        } else if (!continuous && MPI_SUCCESS != (pvar->rc = MPI_T_pvar_start(session, pvar->handle))) {
            pvar->failed = "MPI_T_pvar_start";
        }
    }
}

/* After MPI_Finalize: every value, then the handles and session freed. */
static void after_finalize(void)
{
    for (int i = 0; i < num_pvars; ++i) {
        if (NULL == pvars[i].failed &&
            MPI_SUCCESS != (pvars[i].rc = MPI_T_pvar_read(session, pvars[i].handle, &pvars[i].value))) {
            pvars[i].failed = "MPI_T_pvar_read";
        }
    }
    for (int i = 0; i < num_pvars; ++i) {
        int rc = pvars[i].allocated ? MPI_T_pvar_handle_free(session, &pvars[i].handle) : MPI_SUCCESS;
        if (MPI_SUCCESS != rc && NULL == pvars[i].failed) {
            pvars[i].failed = "MPI_T_pvar_handle_free";
            pvars[i].rc = rc;
        }
    }
    if (MPI_SUCCESS == session_rc) {
        session_free_rc = MPI_T_pvar_session_free(&session);
    }
}

/* Where this rank's lines go: $SPC_MPIT_TOOL_OUTPUT.<rank>, created by the
 * first call, or standard error. */
static FILE *output(const char *mode)
{
    const char *prefix = getenv("SPC_MPIT_TOOL_OUTPUT");
    char path[4096];
    if (NULL == prefix) {
        return stderr;
    }
    snprintf(path, sizeof path, "%s.%d", prefix, rank);
    FILE *out = fopen(path, mode);
    if (NULL == out) {
        perror(path);
    }
    return out;
}

static void done_with(FILE *out)
{
    if (NULL != out && stderr != out) {
        fclose(out);
    }
}

/* Before MPI_T_finalize, so that its crash (open-mpi/ompi#11485) leaves
 * the values written. */
static void write_values(void)
{
    FILE *out = output("w");
    if (NULL == out) {
        return;
    }
    for (int i = 0; i < num_pvars; ++i) {
        if (NULL == pvars[i].failed) {
            fprintf(out, "%s %llu\n", pvars[i].name, pvars[i].value);
        } else {
            fprintf(out, "%s error %s %d\n", pvars[i].name, pvars[i].failed, pvars[i].rc);
        }
    }
    fprintf(out, "skipped %d\nMPI_T_init_thread %d\nMPI_T_pvar_session_create %d\n"
                 "MPI_T_pvar_session_free %d\n",
            skipped_pvars, init_rc, session_rc, session_free_rc);
    done_with(out);
}

/* MPI_T's end, after MPI_Finalize: the order that crashed. */
static void finalize_tool(void)
{
    if (MPI_SUCCESS == init_rc) {
        int rc = MPI_T_finalize();
        FILE *out = output("a");
        if (NULL != out) {
            fprintf(out, "MPI_T_finalize %d\n", rc);
            done_with(out);
        }
    }
}

int PMPI_Init(int *argc, char ***argv)
{
    static int (*init)(int *, char ***);
    if (NULL == init) {
        init = (int (*)(int *, char ***))real("PMPI_Init");
    }
    before_init();
    int rc = init(argc, argv);
    if (MPI_SUCCESS == rc) {
        after_init();
    }
    return rc;
}

int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    static int (*init_thread)(int *, char ***, int, int *);
    if (NULL == init_thread) {
        init_thread = (int (*)(int *, char ***, int, int *))real("PMPI_Init_thread");
    }
    before_init();
    int rc = init_thread(argc, argv, required, provided);
    if (MPI_SUCCESS == rc) {
        after_init();
    }
    return rc;
}

int PMPI_Finalize(void)
{
    static int (*finalize)(void);
    if (NULL == finalize) {
        finalize = (int (*)(void))real("PMPI_Finalize");
    }
    int rc = finalize();
    after_finalize();
    write_values();
    finalize_tool();
    return rc;
}

/* C programs call these, which in libmpi are other names of the PMPI_ code
 * (weak symbols): they do not pass through the PMPI_ wrappers above. */
int MPI_Init(int *argc, char ***argv) { return PMPI_Init(argc, argv); }

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return PMPI_Init_thread(argc, argv, required, provided);
}

int MPI_Finalize(void) { return PMPI_Finalize(); }
