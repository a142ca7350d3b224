/*
 * pmpi_count: an independent count of an unchanged MPI application's calls
 * and bytes, to hold our counters' finalize report against (tools/apps/,
 * run_apps.py).  Preloaded into the ranks (LD_PRELOAD); at MPI_Finalize each
 * rank writes its counts to "$PMPI_COUNT_PREFIX.<world rank>.json".
 *
 * It intercepts both entry points an application uses:
 *   - C:       MPI_Send, ...         then calls PMPI_Send, ...
 *   - Fortran: mpi_send_, ... (gfortran's names, mpif.h and `use mpi`) then
 *              calls pmpi_send_, ... of libmpi_mpifh, which reaches
 *              PMPI_Send without passing through MPI_Send.
 * Open MPI's Fortran library calls PMPI_* only, so a Fortran call is seen
 * once, here in mpi_*_, and never again in MPI_*: no double count.  Not
 * seen: `use mpi_f08` (its mpi_send_f08 reaches ompi_send_f directly) and
 * the other name forms (mpi_send, mpi_send__, MPI_SEND); the applications
 * of apps.json import only mpi_*_ (nm -D).
 *
 * Counted, per MPI function, by its C name: calls at entry (whatever the
 * arguments, as a counter at the top of the binding counts), and
 *   bytes_sent:        count x MPI_Type_size of every point-to-point send
 *                      whose destination is not MPI_PROC_NULL (user sends
 *                      always have tag >= 0);
 *   bytes_received, messages_received: from the status of every completed
 *                      user receive whose source is not MPI_PROC_NULL
 *                      (MPI_Get_count in MPI_BYTE: what arrived, not what
 *                      was posted).  Nonblocking receives are followed from
 *                      MPI_Irecv/MPI_Imrecv to their completion in the wait
 *                      and test functions (a status is substituted where
 *                      the caller ignores it); a receive request freed
 *                      before completion is counted in receives_unknown;
 *   rma_bytes:         origin count x type size of puts, gets, accumulates.
 * No MPI call the application could see is added: the wrappers use only
 * calls that move no data (type size, status conversion, get_count).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every function counted: X(C name suffix, Fortran name) */
#define COUNTED(X) \
    X(Send, send) X(Bsend, bsend) X(Rsend, rsend) X(Ssend, ssend) \
    X(Isend, isend) X(Ibsend, ibsend) X(Irsend, irsend) X(Issend, issend) \
    X(Recv, recv) X(Irecv, irecv) X(Mrecv, mrecv) X(Imrecv, imrecv) \
    X(Sendrecv, sendrecv) X(Sendrecv_replace, sendrecv_replace) \
    X(Probe, probe) X(Iprobe, iprobe) X(Mprobe, mprobe) X(Improbe, improbe) \
    X(Bcast, bcast) X(Reduce, reduce) X(Allreduce, allreduce) X(Allgather, allgather) \
    X(Allgatherv, allgatherv) X(Gather, gather) X(Gatherv, gatherv) X(Scatter, scatter) \
    X(Scatterv, scatterv) X(Alltoall, alltoall) X(Alltoallv, alltoallv) X(Barrier, barrier) \
    X(Reduce_scatter, reduce_scatter) X(Reduce_scatter_block, reduce_scatter_block) \
    X(Scan, scan) X(Exscan, exscan) \
    X(Ibcast, ibcast) X(Ireduce, ireduce) X(Iallreduce, iallreduce) X(Iallgather, iallgather) \
    X(Iallgatherv, iallgatherv) X(Igatherv, igatherv) X(Ialltoall, ialltoall) \
    X(Ialltoallv, ialltoallv) X(Ibarrier, ibarrier) \
    X(Put, put) X(Get, get) X(Rput, rput) X(Rget, rget) X(Accumulate, accumulate) \
    X(Raccumulate, raccumulate) X(Get_accumulate, get_accumulate) X(Rget_accumulate, rget_accumulate) \
    X(Fetch_and_op, fetch_and_op) X(Compare_and_swap, compare_and_swap) \
    X(Wait, wait) X(Waitall, waitall) X(Waitany, waitany) X(Waitsome, waitsome) \
    X(Test, test) X(Testall, testall) X(Testany, testany) X(Testsome, testsome) \
    X(Request_free, request_free) X(Cancel, cancel) X(Wtime, wtime) X(Comm_dup, comm_dup)

enum {
#define ID(c, f) F_##c,
    COUNTED(ID)
#undef ID
    F_COUNT
};
static const char *const names[F_COUNT] = {
#define NAME(c, f) "MPI_" #c,
    COUNTED(NAME)
#undef NAME
};

/* Per language, to show which entry points the application used. */
enum { LANG_C, LANG_F, LANGS };
static unsigned long long calls[LANGS][F_COUNT];
static unsigned long long bytes_sent, messages_sent, bytes_received, messages_received, receives_unknown;
static unsigned long long rma_bytes[3]; /* put, get, accumulate (origin side) */
static int written;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#define ADD(var, n) __atomic_fetch_add(&(var), (unsigned long long)(n), __ATOMIC_RELAXED)
#define CALL(lang, id) ADD(calls[lang][id], 1)

static unsigned long long type_bytes(long long count, MPI_Datatype type)
{
    int size = 0;
    if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return (unsigned long long)count * (unsigned long long)size;
}

static void sent(long long count, MPI_Datatype type, int dest)
{
    if (dest != MPI_PROC_NULL) {
        ADD(bytes_sent, type_bytes(count, type));
        ADD(messages_sent, 1);
    }
}

/* What a completed user receive brought. */
static void received(const MPI_Status *status)
{
    int n = 0;
    if (status->MPI_SOURCE == MPI_PROC_NULL)
        return;
    MPI_Status copy = *status;
    if (PMPI_Get_count(&copy, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED)
        n = 0;
    ADD(bytes_received, n);
    ADD(messages_received, 1);
}

/* The pending nonblocking user receives: an open-addressing set of C
 * request handles (Fortran handles are converted with MPI_Request_f2c). */
#define SLOTS 65536
static MPI_Request pending[SLOTS];
static char state[SLOTS]; /* 0 empty, 1 used, 2 deleted */
static size_t npending;

static size_t slot_of(MPI_Request r)
{
    return ((size_t)(uintptr_t)r >> 4) * 2654435761u % SLOTS;
}

static void track(MPI_Request r)
{
    if (r == MPI_REQUEST_NULL)
        return;
    pthread_mutex_lock(&lock);
    if (npending < SLOTS / 2) {
        size_t i = slot_of(r);
        while (state[i] == 1 && pending[i] != r)
            i = (i + 1) % SLOTS;
        if (state[i] != 1) {
            pending[i] = r;
            state[i] = 1;
            npending++;
        }
    } else {
        ADD(receives_unknown, 1); /* more than SLOTS/2 at once: say so, do not guess */
    }
    pthread_mutex_unlock(&lock);
}

/* Removes r from the set; 1 if it was a pending user receive. */
static int untrack(MPI_Request r)
{
    int found = 0;
    if (r == MPI_REQUEST_NULL)
        return 0;
    pthread_mutex_lock(&lock);
    for (size_t i = slot_of(r), n = 0; state[i] != 0 && n < SLOTS; i = (i + 1) % SLOTS, n++) {
        if (state[i] == 1 && pending[i] == r) {
            state[i] = 2;
            npending--;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

static int tracked(MPI_Request r)
{
    int found = 0;
    if (r == MPI_REQUEST_NULL)
        return 0;
    pthread_mutex_lock(&lock);
    for (size_t i = slot_of(r), n = 0; state[i] != 0 && n < SLOTS; i = (i + 1) % SLOTS, n++)
        if (state[i] == 1 && pending[i] == r) {
            found = 1;
            break;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

/* Request i of a completion call finished with status st. */
static void completed(MPI_Request before, const MPI_Status *st)
{
    if (untrack(before))
        received(st);
}

static void write_counts(void)
{
    int rank = -1, initialized = 0, finalized = 0;
    const char *prefix = getenv("PMPI_COUNT_PREFIX");
    if (__atomic_exchange_n(&written, 1, __ATOMIC_SEQ_CST) || !prefix)
        return;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized)
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    snprintf(path, sizeof path, "%s.%d.json", prefix, rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return;
    }
    fprintf(f, "{\"rank\": %d, \"pending_receives\": %zu, \"receives_unknown\": %llu,\n"
               " \"bytes_sent\": %llu, \"messages_sent\": %llu,\n"
               " \"bytes_received\": %llu, \"messages_received\": %llu,\n"
               " \"rma_bytes\": {\"put\": %llu, \"get\": %llu, \"accumulate\": %llu},\n",
            rank, npending, receives_unknown, bytes_sent, messages_sent, bytes_received, messages_received,
            rma_bytes[0], rma_bytes[1], rma_bytes[2]);
    fprintf(f, " \"functions\": [");
    for (int i = 0; i < F_COUNT; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", names[i]);
    fprintf(f, "],\n");
    static const char *const lang_names[LANGS] = {"c", "fortran"};
    for (int lang = 0; lang < LANGS; lang++) {
        fprintf(f, " \"calls_%s\": {", lang_names[lang]);
        const char *sep = "";
        for (int i = 0; i < F_COUNT; i++)
            if (calls[lang][i]) {
                fprintf(f, "%s\"%s\": %llu", sep, names[i], calls[lang][i]);
                sep = ", ";
            }
        fprintf(f, "}%s\n", lang == LANGS - 1 ? "" : ",");
    }
    fprintf(f, "}\n");
    fclose(f);
}

/* ---------------------------------------------------------------- C ---- */

#define C_SEND(name)                                                                          \
    int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) \
    {                                                                                         \
        CALL(LANG_C, F_##name);                                                               \
        sent(count, type, dest);                                                              \
        return PMPI_##name(buf, count, type, dest, tag, comm);                                \
    }
#define C_ISEND(name)                                                                         \
    int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, \
                   MPI_Request *request)                                                      \
    {                                                                                         \
        CALL(LANG_C, F_##name);                                                               \
        sent(count, type, dest);                                                              \
        return PMPI_##name(buf, count, type, dest, tag, comm, request);                       \
    }
C_SEND(Send) C_SEND(Bsend) C_SEND(Rsend) C_SEND(Ssend)
C_ISEND(Isend) C_ISEND(Ibsend) C_ISEND(Irsend) C_ISEND(Issend)

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Status mine;
    CALL(LANG_C, F_Recv);
    if (status == MPI_STATUS_IGNORE)
        status = &mine;
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
    if (rc == MPI_SUCCESS)
        received(status);
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *request)
{
    CALL(LANG_C, F_Irecv);
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, request);
    if (rc == MPI_SUCCESS)
        track(*request);
    return rc;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
    MPI_Status mine;
    CALL(LANG_C, F_Mrecv);
    if (status == MPI_STATUS_IGNORE)
        status = &mine;
    int rc = PMPI_Mrecv(buf, count, type, message, status);
    if (rc == MPI_SUCCESS)
        received(status);
    return rc;
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Request *request)
{
    CALL(LANG_C, F_Imrecv);
    int rc = PMPI_Imrecv(buf, count, type, message, request);
    if (rc == MPI_SUCCESS)
        track(*request);
    return rc;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    MPI_Status mine;
    CALL(LANG_C, F_Sendrecv);
    sent(sendcount, sendtype, dest);
    if (status == MPI_STATUS_IGNORE)
        status = &mine;
    int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                           source, recvtag, comm, status);
    if (rc == MPI_SUCCESS)
        received(status);
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                         int recvtag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Status mine;
    CALL(LANG_C, F_Sendrecv_replace);
    sent(count, type, dest);
    if (status == MPI_STATUS_IGNORE)
        status = &mine;
    int rc = PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
    if (rc == MPI_SUCCESS)
        received(status);
    return rc;
}

/* Calls only: X(ret, name, parameters, arguments) */
#define C_CALL(ret, name, params, args) \
    ret MPI_##name params { CALL(LANG_C, F_##name); return PMPI_##name args; }

C_CALL(int, Probe, (int s, int t, MPI_Comm c, MPI_Status *st), (s, t, c, st))
C_CALL(int, Iprobe, (int s, int t, MPI_Comm c, int *f, MPI_Status *st), (s, t, c, f, st))
C_CALL(int, Mprobe, (int s, int t, MPI_Comm c, MPI_Message *m, MPI_Status *st), (s, t, c, m, st))
C_CALL(int, Improbe, (int s, int t, MPI_Comm c, int *f, MPI_Message *m, MPI_Status *st), (s, t, c, f, m, st))
C_CALL(int, Bcast, (void *b, int n, MPI_Datatype d, int r, MPI_Comm c), (b, n, d, r, c))
C_CALL(int, Reduce, (const void *s, void *r, int n, MPI_Datatype d, MPI_Op o, int root, MPI_Comm c),
       (s, r, n, d, o, root, c))
C_CALL(int, Allreduce, (const void *s, void *r, int n, MPI_Datatype d, MPI_Op o, MPI_Comm c), (s, r, n, d, o, c))
C_CALL(int, Allgather, (const void *s, int sn, MPI_Datatype sd, void *r, int rn, MPI_Datatype rd, MPI_Comm c),
       (s, sn, sd, r, rn, rd, c))
C_CALL(int, Allgatherv, (const void *s, int sn, MPI_Datatype sd, void *r, const int rn[], const int di[],
                         MPI_Datatype rd, MPI_Comm c), (s, sn, sd, r, rn, di, rd, c))
C_CALL(int, Gather, (const void *s, int sn, MPI_Datatype sd, void *r, int rn, MPI_Datatype rd, int root,
                     MPI_Comm c), (s, sn, sd, r, rn, rd, root, c))
C_CALL(int, Gatherv, (const void *s, int sn, MPI_Datatype sd, void *r, const int rn[], const int di[],
                      MPI_Datatype rd, int root, MPI_Comm c), (s, sn, sd, r, rn, di, rd, root, c))
C_CALL(int, Scatter, (const void *s, int sn, MPI_Datatype sd, void *r, int rn, MPI_Datatype rd, int root,
                      MPI_Comm c), (s, sn, sd, r, rn, rd, root, c))
C_CALL(int, Scatterv, (const void *s, const int sn[], const int di[], MPI_Datatype sd, void *r, int rn,
                       MPI_Datatype rd, int root, MPI_Comm c), (s, sn, di, sd, r, rn, rd, root, c))
C_CALL(int, Alltoall, (const void *s, int sn, MPI_Datatype sd, void *r, int rn, MPI_Datatype rd, MPI_Comm c),
       (s, sn, sd, r, rn, rd, c))
C_CALL(int, Alltoallv, (const void *s, const int sn[], const int sdi[], MPI_Datatype sd, void *r,
                        const int rn[], const int rdi[], MPI_Datatype rd, MPI_Comm c),
       (s, sn, sdi, sd, r, rn, rdi, rd, c))
C_CALL(int, Barrier, (MPI_Comm c), (c))
C_CALL(int, Reduce_scatter, (const void *s, void *r, const int rn[], MPI_Datatype d, MPI_Op o, MPI_Comm c),
       (s, r, rn, d, o, c))
C_CALL(int, Reduce_scatter_block, (const void *s, void *r, int rn, MPI_Datatype d, MPI_Op o, MPI_Comm c),
       (s, r, rn, d, o, c))
C_CALL(int, Scan, (const void *s, void *r, int n, MPI_Datatype d, MPI_Op o, MPI_Comm c), (s, r, n, d, o, c))
C_CALL(int, Exscan, (const void *s, void *r, int n, MPI_Datatype d, MPI_Op o, MPI_Comm c), (s, r, n, d, o, c))
C_CALL(int, Ibcast, (void *b, int n, MPI_Datatype d, int r, MPI_Comm c, MPI_Request *q), (b, n, d, r, c, q))
C_CALL(int, Ireduce, (const void *s, void *r, int n, MPI_Datatype d, MPI_Op o, int root, MPI_Comm c,
                      MPI_Request *q), (s, r, n, d, o, root, c, q))
C_CALL(int, Iallreduce, (const void *s, void *r, int n, MPI_Datatype d, MPI_Op o, MPI_Comm c, MPI_Request *q),
       (s, r, n, d, o, c, q))
C_CALL(int, Iallgather, (const void *s, int sn, MPI_Datatype sd, void *r, int rn, MPI_Datatype rd, MPI_Comm c,
                         MPI_Request *q), (s, sn, sd, r, rn, rd, c, q))
C_CALL(int, Iallgatherv, (const void *s, int sn, MPI_Datatype sd, void *r, const int rn[], const int di[],
                          MPI_Datatype rd, MPI_Comm c, MPI_Request *q), (s, sn, sd, r, rn, di, rd, c, q))
C_CALL(int, Igatherv, (const void *s, int sn, MPI_Datatype sd, void *r, const int rn[], const int di[],
                       MPI_Datatype rd, int root, MPI_Comm c, MPI_Request *q), (s, sn, sd, r, rn, di, rd, root, c, q))
C_CALL(int, Ialltoall, (const void *s, int sn, MPI_Datatype sd, void *r, int rn, MPI_Datatype rd, MPI_Comm c,
                        MPI_Request *q), (s, sn, sd, r, rn, rd, c, q))
C_CALL(int, Ialltoallv, (const void *s, const int sn[], const int sdi[], MPI_Datatype sd, void *r,
                         const int rn[], const int rdi[], MPI_Datatype rd, MPI_Comm c, MPI_Request *q),
       (s, sn, sdi, sd, r, rn, rdi, rd, c, q))
C_CALL(int, Ibarrier, (MPI_Comm c, MPI_Request *q), (c, q))
C_CALL(int, Cancel, (MPI_Request *q), (q))
C_CALL(double, Wtime, (void), ())
C_CALL(int, Comm_dup, (MPI_Comm c, MPI_Comm *n), (c, n))

/* RMA: calls, and origin bytes by kind (information: no counter of ours holds them). */
#define C_RMA(name, kind, params, n, d, args) \
    int MPI_##name params { CALL(LANG_C, F_##name); ADD(rma_bytes[kind], type_bytes(n, d)); return PMPI_##name args; }
C_RMA(Put, 0, (const void *o, int on, MPI_Datatype od, int t, MPI_Aint disp, int tn, MPI_Datatype td, MPI_Win w),
      on, od, (o, on, od, t, disp, tn, td, w))
C_RMA(Get, 1, (void *o, int on, MPI_Datatype od, int t, MPI_Aint disp, int tn, MPI_Datatype td, MPI_Win w),
      on, od, (o, on, od, t, disp, tn, td, w))
C_RMA(Rput, 0, (const void *o, int on, MPI_Datatype od, int t, MPI_Aint disp, int tn, MPI_Datatype td, MPI_Win w,
                MPI_Request *q), on, od, (o, on, od, t, disp, tn, td, w, q))
C_RMA(Rget, 1, (void *o, int on, MPI_Datatype od, int t, MPI_Aint disp, int tn, MPI_Datatype td, MPI_Win w,
                MPI_Request *q), on, od, (o, on, od, t, disp, tn, td, w, q))
C_RMA(Accumulate, 2, (const void *o, int on, MPI_Datatype od, int t, MPI_Aint disp, int tn, MPI_Datatype td,
                      MPI_Op op, MPI_Win w), on, od, (o, on, od, t, disp, tn, td, op, w))
C_RMA(Raccumulate, 2, (const void *o, int on, MPI_Datatype od, int t, MPI_Aint disp, int tn, MPI_Datatype td,
                       MPI_Op op, MPI_Win w, MPI_Request *q), on, od, (o, on, od, t, disp, tn, td, op, w, q))
C_RMA(Get_accumulate, 2, (const void *o, int on, MPI_Datatype od, void *r, int rn, MPI_Datatype rd, int t,
                          MPI_Aint disp, int tn, MPI_Datatype td, MPI_Op op, MPI_Win w),
      on, od, (o, on, od, r, rn, rd, t, disp, tn, td, op, w))
C_RMA(Rget_accumulate, 2, (const void *o, int on, MPI_Datatype od, void *r, int rn, MPI_Datatype rd, int t,
                           MPI_Aint disp, int tn, MPI_Datatype td, MPI_Op op, MPI_Win w, MPI_Request *q),
      on, od, (o, on, od, r, rn, rd, t, disp, tn, td, op, w, q))
C_RMA(Fetch_and_op, 2, (const void *o, void *r, MPI_Datatype d, int t, MPI_Aint disp, MPI_Op op, MPI_Win w),
      1, d, (o, r, d, t, disp, op, w))
C_RMA(Compare_and_swap, 2, (const void *o, const void *cmp, void *r, MPI_Datatype d, int t, MPI_Aint disp,
                            MPI_Win w), 1, d, (o, cmp, r, d, t, disp, w))

/* Completion: the requests before the call, then each completed one. */
static MPI_Request *copy_requests(int n, const MPI_Request *r, MPI_Request *small, int nsmall)
{
    MPI_Request *copy = n <= nsmall ? small : malloc(sizeof *copy * (size_t)n);
    if (copy)
        memcpy(copy, r, sizeof *copy * (size_t)(n > 0 ? n : 0));
    return copy;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    MPI_Status mine;
    MPI_Request before = *request;
    CALL(LANG_C, F_Wait);
    if (status == MPI_STATUS_IGNORE && tracked(before))
        status = &mine;
    int rc = PMPI_Wait(request, status);
    if (rc == MPI_SUCCESS)
        completed(before, status);
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    MPI_Status mine;
    MPI_Request before = *request;
    CALL(LANG_C, F_Test);
    if (status == MPI_STATUS_IGNORE && tracked(before))
        status = &mine;
    int rc = PMPI_Test(request, flag, status);
    if (rc == MPI_SUCCESS && *flag)
        completed(before, status);
    return rc;
}

int MPI_Waitany(int n, MPI_Request requests[], int *index, MPI_Status *status)
{
    MPI_Status mine;
    MPI_Request small[64], *before = copy_requests(n, requests, small, 64);
    CALL(LANG_C, F_Waitany);
    if (status == MPI_STATUS_IGNORE)
        status = &mine;
    int rc = PMPI_Waitany(n, requests, index, status);
    if (rc == MPI_SUCCESS && before && *index != MPI_UNDEFINED)
        completed(before[*index], status);
    if (before != small)
        free(before);
    return rc;
}

int MPI_Testany(int n, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    MPI_Status mine;
    MPI_Request small[64], *before = copy_requests(n, requests, small, 64);
    CALL(LANG_C, F_Testany);
    if (status == MPI_STATUS_IGNORE)
        status = &mine;
    int rc = PMPI_Testany(n, requests, index, flag, status);
    if (rc == MPI_SUCCESS && before && *flag && *index != MPI_UNDEFINED)
        completed(before[*index], status);
    if (before != small)
        free(before);
    return rc;
}

/* Waitall/Testall: every request done (for Testall, when flag). */
static int all_c(int which, int n, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    MPI_Request small[64], *before = copy_requests(n, requests, small, 64);
    MPI_Status smalls[64], *st = statuses;
    if (statuses == MPI_STATUSES_IGNORE)
        st = n <= 64 ? smalls : malloc(sizeof *st * (size_t)n);
    int rc = which == F_Waitall ? PMPI_Waitall(n, requests, st) : PMPI_Testall(n, requests, flag, st);
    if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && before && st && (which == F_Waitall || *flag))
        for (int i = 0; i < n; i++)
            completed(before[i], &st[i]);
    if (before != small)
        free(before);
    if (st != statuses && st != smalls)
        free(st);
    return rc;
}

int MPI_Waitall(int n, MPI_Request requests[], MPI_Status statuses[])
{
    CALL(LANG_C, F_Waitall);
    return all_c(F_Waitall, n, requests, NULL, statuses);
}

int MPI_Testall(int n, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    CALL(LANG_C, F_Testall);
    return all_c(F_Testall, n, requests, flag, statuses);
}

static int some_c(int which, int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    MPI_Request small[64], *before = copy_requests(n, requests, small, 64);
    MPI_Status smalls[64], *st = statuses;
    if (statuses == MPI_STATUSES_IGNORE)
        st = n <= 64 ? smalls : malloc(sizeof *st * (size_t)n);
    int rc = which == F_Waitsome ? PMPI_Waitsome(n, requests, outcount, indices, st)
                                 : PMPI_Testsome(n, requests, outcount, indices, st);
    if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && before && st && *outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++)
            completed(before[indices[i]], &st[i]);
    if (before != small)
        free(before);
    if (st != statuses && st != smalls)
        free(st);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    CALL(LANG_C, F_Waitsome);
    return some_c(F_Waitsome, n, requests, outcount, indices, statuses);
}

int MPI_Testsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    CALL(LANG_C, F_Testsome);
    return some_c(F_Testsome, n, requests, outcount, indices, statuses);
}

int MPI_Request_free(MPI_Request *request)
{
    CALL(LANG_C, F_Request_free);
    if (untrack(*request))
        ADD(receives_unknown, 1);
    return PMPI_Request_free(request);
}

int MPI_Finalize(void)
{
    write_counts();
    return PMPI_Finalize();
}

/* ---------------------------------------------------------- Fortran ---- */
/* mpif.h / `use mpi` with gfortran: every argument by reference, MPI_Fint
 * handles, the error code last.  The pmpi_*_ functions are libmpi_mpifh's. */
typedef MPI_Fint F;
#define STATUS_INTS ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

static MPI_Datatype ftype(const F *t) { return PMPI_Type_f2c(*t); }

static void freceived(F *fstatus)
{
    MPI_Status st;
    if (PMPI_Status_f2c(fstatus, &st) == MPI_SUCCESS)
        received(&st);
}

static MPI_Request freq(const F *r) { return PMPI_Request_f2c(*r); }

#define F_SEND(c, f)                                                                   \
    void pmpi_##f##_(void *, F *, F *, F *, F *, F *, F *);                            \
    void mpi_##f##_(void *b, F *n, F *t, F *d, F *g, F *c_, F *e)                       \
    {                                                                                  \
        CALL(LANG_F, F_##c);                                                           \
        sent(*n, ftype(t), *d);                                                        \
        pmpi_##f##_(b, n, t, d, g, c_, e);                                             \
    }
#define F_ISEND(c, f)                                                                  \
    void pmpi_##f##_(void *, F *, F *, F *, F *, F *, F *, F *);                       \
    void mpi_##f##_(void *b, F *n, F *t, F *d, F *g, F *c_, F *q, F *e)                 \
    {                                                                                  \
        CALL(LANG_F, F_##c);                                                           \
        sent(*n, ftype(t), *d);                                                        \
        pmpi_##f##_(b, n, t, d, g, c_, q, e);                                          \
    }
F_SEND(Send, send) F_SEND(Bsend, bsend) F_SEND(Rsend, rsend) F_SEND(Ssend, ssend)
F_ISEND(Isend, isend) F_ISEND(Ibsend, ibsend) F_ISEND(Irsend, irsend) F_ISEND(Issend, issend)

void pmpi_recv_(void *, F *, F *, F *, F *, F *, F *, F *);
void mpi_recv_(void *b, F *n, F *t, F *s, F *g, F *c, F *st, F *e)
{
    F mine[STATUS_INTS];
    CALL(LANG_F, F_Recv);
    if (st == MPI_F_STATUS_IGNORE)
        st = mine;
    pmpi_recv_(b, n, t, s, g, c, st, e);
    if (*e == MPI_SUCCESS)
        freceived(st);
}

void pmpi_irecv_(void *, F *, F *, F *, F *, F *, F *, F *);
void mpi_irecv_(void *b, F *n, F *t, F *s, F *g, F *c, F *q, F *e)
{
    CALL(LANG_F, F_Irecv);
    pmpi_irecv_(b, n, t, s, g, c, q, e);
    if (*e == MPI_SUCCESS)
        track(freq(q));
}

void pmpi_mrecv_(void *, F *, F *, F *, F *, F *);
void mpi_mrecv_(void *b, F *n, F *t, F *m, F *st, F *e)
{
    F mine[STATUS_INTS];
    CALL(LANG_F, F_Mrecv);
    if (st == MPI_F_STATUS_IGNORE)
        st = mine;
    pmpi_mrecv_(b, n, t, m, st, e);
    if (*e == MPI_SUCCESS)
        freceived(st);
}

void pmpi_imrecv_(void *, F *, F *, F *, F *, F *);
void mpi_imrecv_(void *b, F *n, F *t, F *m, F *q, F *e)
{
    CALL(LANG_F, F_Imrecv);
    pmpi_imrecv_(b, n, t, m, q, e);
    if (*e == MPI_SUCCESS)
        track(freq(q));
}

void pmpi_sendrecv_(void *, F *, F *, F *, F *, void *, F *, F *, F *, F *, F *, F *, F *);
void mpi_sendrecv_(void *sb, F *sn, F *stype, F *d, F *sg, void *rb, F *rn, F *rt, F *s, F *rg, F *c, F *st, F *e)
{
    F mine[STATUS_INTS];
    CALL(LANG_F, F_Sendrecv);
    sent(*sn, ftype(stype), *d);
    if (st == MPI_F_STATUS_IGNORE)
        st = mine;
    pmpi_sendrecv_(sb, sn, stype, d, sg, rb, rn, rt, s, rg, c, st, e);
    if (*e == MPI_SUCCESS)
        freceived(st);
}

void pmpi_sendrecv_replace_(void *, F *, F *, F *, F *, F *, F *, F *, F *, F *);
void mpi_sendrecv_replace_(void *b, F *n, F *t, F *d, F *sg, F *s, F *rg, F *c, F *st, F *e)
{
    F mine[STATUS_INTS];
    CALL(LANG_F, F_Sendrecv_replace);
    sent(*n, ftype(t), *d);
    if (st == MPI_F_STATUS_IGNORE)
        st = mine;
    pmpi_sendrecv_replace_(b, n, t, d, sg, s, rg, c, st, e);
    if (*e == MPI_SUCCESS)
        freceived(st);
}

/* Calls only, by the number of (pointer) arguments, the error code included. */
#define P1 void *a1
#define P2 P1, void *a2
#define P3 P2, void *a3
#define P4 P3, void *a4
#define P5 P4, void *a5
#define P6 P5, void *a6
#define P7 P6, void *a7
#define P8 P7, void *a8
#define P9 P8, void *a9
#define P10 P9, void *a10
#define P11 P10, void *a11
#define P12 P11, void *a12
#define P13 P12, void *a13
#define P14 P13, void *a14
#define A1 a1
#define A2 A1, a2
#define A3 A2, a3
#define A4 A3, a4
#define A5 A4, a5
#define A6 A5, a6
#define A7 A6, a7
#define A8 A7, a8
#define A9 A8, a9
#define A10 A9, a10
#define A11 A10, a11
#define A12 A11, a12
#define A13 A12, a13
#define A14 A13, a14
#define F_CALL(c, f, n)                          \
    void pmpi_##f##_(P##n);                      \
    void mpi_##f##_(P##n)                        \
    {                                            \
        CALL(LANG_F, F_##c);                     \
        pmpi_##f##_(A##n);                       \
    }
F_CALL(Probe, probe, 5) F_CALL(Iprobe, iprobe, 6) F_CALL(Mprobe, mprobe, 6) F_CALL(Improbe, improbe, 7)
F_CALL(Bcast, bcast, 6) F_CALL(Reduce, reduce, 8) F_CALL(Allreduce, allreduce, 7)
F_CALL(Allgather, allgather, 8) F_CALL(Allgatherv, allgatherv, 9) F_CALL(Gather, gather, 9)
F_CALL(Gatherv, gatherv, 10) F_CALL(Scatter, scatter, 9) F_CALL(Scatterv, scatterv, 10)
F_CALL(Alltoall, alltoall, 8) F_CALL(Alltoallv, alltoallv, 10) F_CALL(Barrier, barrier, 2)
F_CALL(Reduce_scatter, reduce_scatter, 7) F_CALL(Reduce_scatter_block, reduce_scatter_block, 7)
F_CALL(Scan, scan, 7) F_CALL(Exscan, exscan, 7)
F_CALL(Ibcast, ibcast, 7) F_CALL(Ireduce, ireduce, 9) F_CALL(Iallreduce, iallreduce, 8)
F_CALL(Iallgather, iallgather, 9) F_CALL(Iallgatherv, iallgatherv, 10) F_CALL(Igatherv, igatherv, 11)
F_CALL(Ialltoall, ialltoall, 9) F_CALL(Ialltoallv, ialltoallv, 11) F_CALL(Ibarrier, ibarrier, 3)
F_CALL(Cancel, cancel, 2) F_CALL(Comm_dup, comm_dup, 3)

double pmpi_wtime_(void);
double mpi_wtime_(void)
{
    CALL(LANG_F, F_Wtime);
    return pmpi_wtime_();
}

/* RMA: target_disp is INTEGER(KIND=MPI_ADDRESS_KIND), by reference too. */
#define F_RMA(c, f, kind, n, on, od)                 \
    void pmpi_##f##_(P##n);                          \
    void mpi_##f##_(P##n)                            \
    {                                                \
        CALL(LANG_F, F_##c);                         \
        ADD(rma_bytes[kind], type_bytes(on, ftype(od))); \
        pmpi_##f##_(A##n);                           \
    }
F_RMA(Put, put, 0, 9, *(F *)a2, a3) F_RMA(Get, get, 1, 9, *(F *)a2, a3)
F_RMA(Rput, rput, 0, 10, *(F *)a2, a3) F_RMA(Rget, rget, 1, 10, *(F *)a2, a3)
F_RMA(Accumulate, accumulate, 2, 10, *(F *)a2, a3) F_RMA(Raccumulate, raccumulate, 2, 11, *(F *)a2, a3)
F_RMA(Get_accumulate, get_accumulate, 2, 13, *(F *)a2, a3)
F_RMA(Rget_accumulate, rget_accumulate, 2, 14, *(F *)a2, a3)
F_RMA(Fetch_and_op, fetch_and_op, 2, 8, 1, a3) F_RMA(Compare_and_swap, compare_and_swap, 2, 8, 1, a4)

void pmpi_wait_(F *, F *, F *);
void mpi_wait_(F *q, F *st, F *e)
{
    F mine[STATUS_INTS];
    MPI_Request before = freq(q);
    CALL(LANG_F, F_Wait);
    if (st == MPI_F_STATUS_IGNORE)
        st = mine;
    pmpi_wait_(q, st, e);
    if (*e == MPI_SUCCESS && untrack(before))
        freceived(st);
}

void pmpi_test_(F *, F *, F *, F *);
void mpi_test_(F *q, F *flag, F *st, F *e)
{
    F mine[STATUS_INTS];
    MPI_Request before = freq(q);
    CALL(LANG_F, F_Test);
    if (st == MPI_F_STATUS_IGNORE)
        st = mine;
    pmpi_test_(q, flag, st, e);
    if (*e == MPI_SUCCESS && *flag && untrack(before))
        freceived(st);
}

/* The C requests of n Fortran handles (before the call frees them). */
static MPI_Request *fbefore(int n, const F *q, MPI_Request *small, int nsmall)
{
    MPI_Request *r = n <= nsmall ? small : malloc(sizeof *r * (size_t)n);
    for (int i = 0; r && i < n; i++)
        r[i] = freq(&q[i]);
    return r;
}

void pmpi_waitany_(F *, F *, F *, F *, F *);
void mpi_waitany_(F *n, F *q, F *index, F *st, F *e)
{
    F mine[STATUS_INTS];
    MPI_Request small[64], *before = fbefore(*n, q, small, 64);
    CALL(LANG_F, F_Waitany);
    if (st == MPI_F_STATUS_IGNORE)
        st = mine;
    pmpi_waitany_(n, q, index, st, e);
    /* Fortran's index is 1-based */
    if (*e == MPI_SUCCESS && before && *index != MPI_UNDEFINED && untrack(before[*index - 1]))
        freceived(st);
    if (before != small)
        free(before);
}

void pmpi_testany_(F *, F *, F *, F *, F *, F *);
void mpi_testany_(F *n, F *q, F *index, F *flag, F *st, F *e)
{
    F mine[STATUS_INTS];
    MPI_Request small[64], *before = fbefore(*n, q, small, 64);
    CALL(LANG_F, F_Testany);
    if (st == MPI_F_STATUS_IGNORE)
        st = mine;
    pmpi_testany_(n, q, index, flag, st, e);
    if (*e == MPI_SUCCESS && before && *flag && *index != MPI_UNDEFINED && untrack(before[*index - 1]))
        freceived(st);
    if (before != small)
        free(before);
}

static F *fstatuses(int n, F *st, F *small, int nsmall)
{
    if (st != MPI_F_STATUSES_IGNORE)
        return st;
    return n <= nsmall ? small : malloc(sizeof *st * (size_t)n * STATUS_INTS);
}

void pmpi_waitall_(F *, F *, F *, F *);
void pmpi_testall_(F *, F *, F *, F *, F *);
static void fall(int which, F *n, F *q, F *flag, F *statuses, F *e)
{
    MPI_Request small[64], *before = fbefore(*n, q, small, 64);
    F smalls[64 * 8], *st = fstatuses(*n, statuses, smalls, 64 * 8 / STATUS_INTS);
    if (which == F_Waitall)
        pmpi_waitall_(n, q, st, e);
    else
        pmpi_testall_(n, q, flag, st, e);
    if ((*e == MPI_SUCCESS || *e == MPI_ERR_IN_STATUS) && before && st && (which == F_Waitall || *flag))
        for (int i = 0; i < *n; i++)
            if (untrack(before[i]))
                freceived(st + i * STATUS_INTS);
    if (before != small)
        free(before);
    if (st != statuses && st != smalls)
        free(st);
}

void mpi_waitall_(F *n, F *q, F *st, F *e)
{
    CALL(LANG_F, F_Waitall);
    fall(F_Waitall, n, q, NULL, st, e);
}

void mpi_testall_(F *n, F *q, F *flag, F *st, F *e)
{
    CALL(LANG_F, F_Testall);
    fall(F_Testall, n, q, flag, st, e);
}

void pmpi_waitsome_(F *, F *, F *, F *, F *, F *);
void pmpi_testsome_(F *, F *, F *, F *, F *, F *);
static void fsome(int which, F *n, F *q, F *outcount, F *indices, F *statuses, F *e)
{
    MPI_Request small[64], *before = fbefore(*n, q, small, 64);
    F smalls[64 * 8], *st = fstatuses(*n, statuses, smalls, 64 * 8 / STATUS_INTS);
    (which == F_Waitsome ? pmpi_waitsome_ : pmpi_testsome_)(n, q, outcount, indices, st, e);
    if ((*e == MPI_SUCCESS || *e == MPI_ERR_IN_STATUS) && before && st && *outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++)
            if (untrack(before[indices[i] - 1]))
                freceived(st + i * STATUS_INTS);
    if (before != small)
        free(before);
    if (st != statuses && st != smalls)
        free(st);
}

void mpi_waitsome_(F *n, F *q, F *outcount, F *indices, F *st, F *e)
{
    CALL(LANG_F, F_Waitsome);
    fsome(F_Waitsome, n, q, outcount, indices, st, e);
}

void mpi_testsome_(F *n, F *q, F *outcount, F *indices, F *st, F *e)
{
    CALL(LANG_F, F_Testsome);
    fsome(F_Testsome, n, q, outcount, indices, st, e);
}

void pmpi_request_free_(F *, F *);
void mpi_request_free_(F *q, F *e)
{
    CALL(LANG_F, F_Request_free);
    if (untrack(freq(q)))
        ADD(receives_unknown, 1);
    pmpi_request_free_(q, e);
}

void pmpi_finalize_(F *);
void mpi_finalize_(F *e)
{
    write_counts();
    pmpi_finalize_(e);
}
