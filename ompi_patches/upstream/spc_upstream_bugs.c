/* spc_upstream_bugs.c: shows, on 2 ranks, what Open MPI's own SPC (built
 * with --enable-spc) gets wrong through MPI_T, each reading beside the value
 * the traffic predicts.  It is evidence for the fixes in this folder and for
 * issue 21, not a test of our build (pvar_export/tests/ is that): it uses
 * MPI_T only, as a user would, and the counter names upstream has.
 *
 *   mpicc -O2 -pthread spc_upstream_bugs.c -o spc_upstream_bugs
 *   mpirun -np 2 --mca btl self,sm ./spc_upstream_bugs
 *
 * Every line is "rank R: WHAT: got X, predicted Y: ok|WRONG".  Exit status 0
 * whatever the readings (it shows, it does not judge); 2 if MPI_T fails. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "runtime_spc_OMPI_SPC_"

static int rank, peer;

static const char *class_name(int c)
{
    switch (c) {
    case MPI_T_PVAR_CLASS_STATE: return "STATE";
    case MPI_T_PVAR_CLASS_LEVEL: return "LEVEL";
    case MPI_T_PVAR_CLASS_SIZE: return "SIZE";
    case MPI_T_PVAR_CLASS_PERCENTAGE: return "PERCENTAGE";
    case MPI_T_PVAR_CLASS_HIGHWATERMARK: return "HIGHWATERMARK";
    case MPI_T_PVAR_CLASS_LOWWATERMARK: return "LOWWATERMARK";
    case MPI_T_PVAR_CLASS_COUNTER: return "COUNTER";
    case MPI_T_PVAR_CLASS_AGGREGATE: return "AGGREGATE";
    case MPI_T_PVAR_CLASS_TIMER: return "TIMER";
    case MPI_T_PVAR_CLASS_GENERIC: return "GENERIC";
    }
    return "?";
}

static void must(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: %s failed: rc %d\n", rank, what, rc);
        exit(2);
    }
}

/* The pvar index of counter NAME (without the prefix) and its class; -1 if none. */
static int find(const char *name, int *var_class)
{
    int num, i;
    char full[256];
    snprintf(full, sizeof full, PREFIX "%s", name);
    must(MPI_T_pvar_get_num(&num), "MPI_T_pvar_get_num");
    for (i = 0; i < num; i++) {
        char n[256], desc[1024];
        int nlen = sizeof n, dlen = sizeof desc, verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (MPI_T_pvar_get_info(i, n, &nlen, &verb, &cls, &dt, &et, desc, &dlen, &bind, &ro, &cont, &atomic) != MPI_SUCCESS)
            continue;
        if (strcmp(n, full) == 0) {
            if (var_class) *var_class = cls;
            return i;
        }
    }
    return -1;
}

static void report(const char *what, long long got, long long predicted)
{
    printf("rank %d: %s: got %lld, predicted %lld: %s\n", rank, what, got, predicted,
           got == predicted ? "ok" : "WRONG");
}

typedef struct { MPI_T_pvar_session session; MPI_T_pvar_handle handle; const char *name; } counter_t;

static counter_t start(MPI_T_pvar_session session, const char *name)
{
    counter_t c = { session, MPI_T_PVAR_HANDLE_NULL, name };
    int count, index = find(name, NULL);
    if (index < 0) { fprintf(stderr, "rank %d: no pvar %s%s\n", rank, PREFIX, name); exit(2); }
    must(MPI_T_pvar_handle_alloc(session, index, NULL, &c.handle, &count), "MPI_T_pvar_handle_alloc");
    must(MPI_T_pvar_start(session, c.handle), "MPI_T_pvar_start");
    return c;
}

static long long read_counter(counter_t c)
{
    unsigned long long value[4] = {0};
    must(MPI_T_pvar_read(c.session, c.handle, value), "MPI_T_pvar_read");
    return (long long)value[0];
}

/* --- out of sequence: threads paired by tag, both ways ------------------- */
enum { THREADS = 4, WINDOW = 128, ROUNDS = 20 };
static int oos_size;
static void *pair(void *arg)
{
    int tag = (int)(long)arg, r, i;
    char *out = calloc(WINDOW, oos_size), *in = calloc(WINDOW, oos_size);
    MPI_Request req[2 * WINDOW];
    for (r = 0; r < ROUNDS; r++) {
        for (i = 0; i < WINDOW; i++)
            MPI_Irecv(in + (size_t)i * oos_size, oos_size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[i]);
        for (i = 0; i < WINDOW; i++)
            MPI_Isend(out + (size_t)i * oos_size, oos_size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[WINDOW + i]);
        MPI_Waitall(2 * WINDOW, req, MPI_STATUSES_IGNORE);
    }
    free(out);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, i, rc, cls;
    char buf[16384] = {0};
    MPI_T_pvar_session a, b;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    must(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided), "MPI_T_init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;

    /* 1. Classes: what each counter is, as MPI_T says it. */
    {
        static const struct { const char *name; int predicted; } rows[] = {
            {"SEND", MPI_T_PVAR_CLASS_COUNTER}, {"BYTES_SENT_USER", MPI_T_PVAR_CLASS_AGGREGATE},
            {"UNEXPECTED_IN_QUEUE", MPI_T_PVAR_CLASS_LEVEL}, {"OOS_IN_QUEUE", MPI_T_PVAR_CLASS_LEVEL},
            {"MAX_UNEXPECTED_IN_QUEUE", MPI_T_PVAR_CLASS_HIGHWATERMARK},
            {"MAX_OOS_IN_QUEUE", MPI_T_PVAR_CLASS_HIGHWATERMARK},
            {"MATCH_TIME", MPI_T_PVAR_CLASS_TIMER}, {"OOS_MATCH_TIME", MPI_T_PVAR_CLASS_TIMER},
        };
        if (rank == 0) {
            for (i = 0; i < (int)(sizeof rows / sizeof rows[0]); i++) {
                cls = -1;
                if (find(rows[i].name, &cls) < 0)
                    printf("rank 0: class of %s: no such pvar, predicted %s: WRONG\n", rows[i].name,
                           class_name(rows[i].predicted));
                else
                    printf("rank 0: class of %s: %s, predicted %s: %s\n", rows[i].name, class_name(cls),
                           class_name(rows[i].predicted), cls == rows[i].predicted ? "ok" : "WRONG");
            }
        }
    }

    must(MPI_T_pvar_session_create(&a), "MPI_T_pvar_session_create");
    counter_t send = start(a, "SEND");
    counter_t sent_user = start(a, "BYTES_SENT_USER"), sent_mpi = start(a, "BYTES_SENT_MPI");
    counter_t recv_user = start(a, "BYTES_RECEIVED_USER"), recv_mpi = start(a, "BYTES_RECEIVED_MPI");
    counter_t unexpected = start(a, "UNEXPECTED_IN_QUEUE"), max_unexpected = start(a, "MAX_UNEXPECTED_IN_QUEUE");
    counter_t oos = start(a, "OUT_OF_SEQUENCE"), oos_level = start(a, "OOS_IN_QUEUE");
    counter_t max_oos = start(a, "MAX_OOS_IN_QUEUE");

    /* 2. Watermark: rank 0 sends 10 messages (tag 20), then one (tag 21),
     * which rank 1 receives first: the 10 wait in its unexpected queue
     * together, then leave it.  Rank 0 then waits for a 0-byte reply (tag
     * 22), so that nothing else (a barrier's message) reaches rank 1 before
     * it has read. */
    if (rank == 0) {
        for (i = 0; i < 10; i++) MPI_Send(buf, 8, MPI_BYTE, 1, 20, MPI_COMM_WORLD);
        MPI_Send(buf, 8, MPI_BYTE, 1, 21, MPI_COMM_WORLD);
        MPI_Recv(buf, 0, MPI_BYTE, 1, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, 8, MPI_BYTE, 0, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        report("UNEXPECTED_IN_QUEUE while the 10 wait", read_counter(unexpected), 10);
        for (i = 0; i < 10; i++) MPI_Recv(buf, 8, MPI_BYTE, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        report("MAX_UNEXPECTED_IN_QUEUE after 10 messages waited together", read_counter(max_unexpected), 10);
        report("UNEXPECTED_IN_QUEUE once they are received", read_counter(unexpected), 0);
        MPI_Send(buf, 0, MPI_BYTE, 0, 22, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. User bytes: 100 sends of 64 bytes, tag 7, received with tag 7; a
     * 0-byte reply (tag 8) says they arrived.  Barriers move 0 bytes. */
    {
        long long su = read_counter(sent_user), sm = read_counter(sent_mpi);
        long long ru = read_counter(recv_user), rm = read_counter(recv_mpi);
        if (rank == 0) {
            for (i = 0; i < 100; i++) MPI_Send(buf, 64, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, 0, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            report("BYTES_SENT_USER for 100 sends of 64 bytes", read_counter(sent_user) - su, 6400);
            report("BYTES_SENT_MPI for them", read_counter(sent_mpi) - sm, 0);
        } else {
            for (i = 0; i < 100; i++) MPI_Recv(buf, 64, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 0, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
            report("BYTES_RECEIVED_USER for 100 receives of 64 bytes", read_counter(recv_user) - ru, 6400);
            report("BYTES_RECEIVED_MPI for them", read_counter(recv_mpi) - rm, 0);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3b. Synchronous sends take ob1's request path (no inline send): 100
     * MPI_Ssend of 64 bytes, tag 7. */
    {
        long long su = read_counter(sent_user), sm = read_counter(sent_mpi);
        if (rank == 0) {
            for (i = 0; i < 100; i++) MPI_Ssend(buf, 64, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            report("BYTES_SENT_USER for 100 MPI_Ssend of 64 bytes", read_counter(sent_user) - su, 6400);
            report("BYTES_SENT_MPI for them", read_counter(sent_mpi) - sm, 0);
        } else {
            for (i = 0; i < 100; i++) MPI_Recv(buf, 64, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3c. Large messages (rendezvous, single copy where the BTL can):
     * 10 of 1 MiB, received with MPI_ANY_TAG; a 0-byte reply says they
     * arrived. */
    {
        enum { BIG = 1 << 20 };
        char *big = calloc(1, BIG);
        long long su = read_counter(sent_user), sm = read_counter(sent_mpi);
        long long ru = read_counter(recv_user), rm = read_counter(recv_mpi);
        if (rank == 0) {
            for (i = 0; i < 10; i++) MPI_Send(big, BIG, MPI_BYTE, 1, 40, MPI_COMM_WORLD);
            MPI_Recv(buf, 0, MPI_BYTE, 1, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            report("BYTES_SENT_USER for 10 sends of 1 MiB", read_counter(sent_user) - su, 10LL * BIG);
            report("BYTES_SENT_MPI for them", read_counter(sent_mpi) - sm, 0);
        } else {
            for (i = 0; i < 10; i++) MPI_Recv(big, BIG, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 0, MPI_BYTE, 0, 41, MPI_COMM_WORLD);
            report("BYTES_RECEIVED_USER for 10 MPI_ANY_TAG receives of 1 MiB", read_counter(recv_user) - ru, 10LL * BIG);
            report("BYTES_RECEIVED_MPI for them", read_counter(recv_mpi) - rm, 0);
        }
        free(big);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. The same with MPI_ANY_TAG on the receiving side: 100 of 20 bytes. */
    {
        long long ru = read_counter(recv_user), rm = read_counter(recv_mpi);
        if (rank == 0) {
            for (i = 0; i < 100; i++) MPI_Send(buf, 20, MPI_BYTE, 1, 9, MPI_COMM_WORLD);
        } else {
            for (i = 0; i < 100; i++) MPI_Recv(buf, 20, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            report("BYTES_RECEIVED_USER for 100 MPI_ANY_TAG receives of 20 bytes", read_counter(recv_user) - ru, 2000);
            report("BYTES_RECEIVED_MPI for them", read_counter(recv_mpi) - rm, 0);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 5. Reset of a started counter, then 10 sends seen by it and by a
     * second session started now. */
    rc = MPI_T_pvar_reset(a, send.handle);
    report("MPI_T_pvar_reset of a started SEND handle, its rc", rc, MPI_SUCCESS);
    must(MPI_T_pvar_session_create(&b), "MPI_T_pvar_session_create");
    counter_t send_b = start(b, "SEND");
    if (rank == 0)
        for (i = 0; i < 10; i++) MPI_Send(buf, 1, MPI_BYTE, 1, 30, MPI_COMM_WORLD);
    else
        for (i = 0; i < 10; i++) MPI_Recv(buf, 1, MPI_BYTE, 0, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) {
        report("SEND in session A after its reset and 10 sends", read_counter(send), 10);
        report("SEND in session B, started before those 10 sends", read_counter(send_b), 10);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 6. Out of sequence: 4 threads a rank, paired by tag, each 20 rounds
     * of 128 Irecv and 128 Isend both ways; eager (64 bytes), then
     * rendezvous (16 KiB). Once all is received nothing is queued. */
    {
        static const int sizes[2] = {64, 16384};
        int s;
        if (provided < MPI_THREAD_MULTIPLE) {
            printf("rank %d: no MPI_THREAD_MULTIPLE: the out-of-sequence part is left out\n", rank);
        } else for (s = 0; s < 2; s++) {
            pthread_t t[THREADS];
            long long before = read_counter(oos);
            oos_size = sizes[s];
            for (i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, pair, (void *)(long)(100 + i));
            for (i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
            MPI_Barrier(MPI_COMM_WORLD);
            printf("rank %d: %d-byte messages: OUT_OF_SEQUENCE %lld of %d received\n", rank, oos_size,
                   read_counter(oos) - before, THREADS * WINDOW * ROUNDS);
            report(s == 0 ? "OOS_IN_QUEUE after the eager ones"
                          : "OOS_IN_QUEUE after the rendezvous ones", read_counter(oos_level), 0);
        }
        /* A high watermark of a level that rose: at least 1 if anything
         * arrived out of sequence (reported as got >= 1: predicted 1). */
        long long seen = read_counter(oos), max = read_counter(max_oos);
        if (seen > 0)
            report("MAX_OOS_IN_QUEUE is at least 1 (1 = yes)", max >= 1, 1);
        else
            printf("rank %d: nothing arrived out of sequence this time\n", rank);
    }

    MPI_T_pvar_session_free(&b);
    MPI_T_pvar_session_free(&a);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
