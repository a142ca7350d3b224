/*
 * Traffic whose communication matrix is known, for check_matrix.py, which
 * runs it on 4 ranks with the finalize report's matrix on and predicts
 * every cell.  One pattern a run:
 *
 *   bcast  BCASTS broadcasts of BCAST_BYTES from rank 0 on MPI_COMM_WORLD
 *          (with coll tuned's linear broadcast forced, rank 0 sends each
 *          peer one internal message a broadcast), then USER_SENDS user
 *          messages of USER_BYTES from rank 0 to rank 1;
 *   ring   rank r sends r + 1 messages of 8 (r + 1) bytes to rank r + 1
 *          (mod size) and receives from rank r - 1;
 *   split  MPI_COMM_WORLD split by rank parity, ranks in reverse order, so
 *          that a rank of the split is not the world's: each rank sends
 *          SPLIT_SENDS messages of SPLIT_BYTES to the next rank of its
 *          split (mod its size), whose matrix cells are in world ranks;
 *          the split is freed before MPI_Finalize.
 *   one-sided  on a window over MPI_COMM_WORLD in reverse rank order
 *          (window rank w is world rank size - 1 - w), each rank w, in
 *          fence epochs: PUTS puts of w + 1 ints to w + 1 (mod size), a get
 *          of 3 ints from w + 2, an accumulate of 2 ints to w + 3, a
 *          get-accumulate of 2 ints (2 back) to w + 1, a fetch-and-op to
 *          w + 1, a compare-and-swap to w + 2, a put to MPI_PROC_NULL; then
 *          under lock_all an Rput of 4 ints to w + 2 and an Rget of 5 ints
 *          from w + 3.  An MPI_T handle bound to the window reads its
 *          one-sided arrays, which this program predicts itself, and fails
 *          once the window is freed;
 *   one-sided-kept  the same, the window left to MPI_Finalize (which
 *          frees it): its cells are the same.
 *   collectives  on MPI_COMM_WORLD, then on a split of it by rank parity
 *          in reverse rank order named "collectives split" (freed before
 *          MPI_Finalize), every blocking and nonblocking collective of
 *          collective_calls() below with rank-dependent roots and counts,
 *          and a broadcast of 0 elements (which runs nothing).  MPI_T
 *          handles bound to each communicator read its COLL_<KIND> counters,
 *          which this program predicts itself.
 *   neighbours  every neighbourhood collective, blocking and nonblocking,
 *          on three topologies of MPI_COMM_WORLD's ranks: "neighbours
 *          ring", a periodic line of ranks 0 to 2; "neighbours grid", 2 x 2,
 *          the first dimension not periodic (MPI_PROC_NULL neighbours), the
 *          second periodic of 2 (both neighbours the same rank);
 *          "neighbours dist graph", in which rank r sends to the r + 1
 *          ranks after it (rank 3 to itself too); and "neighbours graph",
 *          edges 0-1, 0-2, 1-2, 2-3.  Each call's bytes are the blocks to
 *          the neighbours MPI_Cart_shift, MPI_Dist_graph_neighbors and
 *          MPI_Graph_neighbors name, but MPI_PROC_NULL and the rank
 *          itself; MPI_T handles bound to each topology read them.
 *   neighbours-ring  the ring alone (the topology seed 003's monitoring
 *          reads right, for check_matrix.py --monitoring).
 *
 * No other call communicates between MPI_Init and MPI_Finalize.
 *
 * With --hold DIR (check_live_matrix.py), each rank, once its traffic is
 * done, writes its pid to DIR/ready.RANK and waits to be killed, never
 * reaching MPI_Finalize: the live readers then see what it counted.
 *
 * usage: comm_matrix bcast|ring|split|one-sided|one-sided-kept|collectives|neighbours|neighbours-ring
 *                    [--hold DIR]
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mpit_util.h"

enum { BCASTS = 10, BCAST_BYTES = 64, USER_SENDS = 5, USER_BYTES = 16, SPLIT_SENDS = 3, SPLIT_BYTES = 100,
       PUTS = 2, MAX_RANKS = 16 };

/* count messages of bytes bytes each to next and from previous on comm */
static void exchange(MPI_Comm comm, int next, int previous, int count, int bytes)
{
    char out[1024] = {0}, in[1024];
    MPI_Request requests[2];
    for (int i = 0; i < count; ++i) {
        MPI_Irecv(in, bytes, MPI_BYTE, previous, i, comm, &requests[0]);
        MPI_Isend(out, bytes, MPI_BYTE, next, i, comm, &requests[1]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    }
}

/* A started handle on one-sided array name bound to win, of size elements. */
static MPI_T_pvar_handle started_window_array(MPI_T_pvar_session session, const char *name, MPI_Win win,
                                              int size)
{
    MPI_T_pvar_handle handle;
    int count;
    MPI_OK(MPI_T_pvar_handle_alloc(session, spc_pvar_named(SPC_WIN_PVAR_PREFIX, name), &win, &handle, &count));
    CHECK(count == size, "%s bound to a window: count %d, expected %d", name, count, size);
    MPI_OK(MPI_T_pvar_start(session, handle));
    return handle;
}

/* The one-sided pattern; what this rank's window arrays must read, by
 * window rank: operations and bytes sent, operations and bytes back.  A
 * kept window is left to MPI_Finalize. */
static void one_sided(int size, bool keep)
{
    if (size > MAX_RANKS) {
        spc_client_die("one-sided: at most %d ranks", MAX_RANKS);
    }
    MPI_Comm reversed;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -test_rank, &reversed));
    int w, *base;
    MPI_OK(MPI_Comm_rank(reversed, &w));
    MPI_Win win;
    MPI_OK(MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, reversed, &base, &win));
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    static const char *const names[] = {"PEER_ONE_SIDED_MESSAGES_SENT", "PEER_ONE_SIDED_BYTES_SENT",
                                        "PEER_ONE_SIDED_MESSAGES_RECEIVED", "PEER_ONE_SIDED_BYTES_RECEIVED"};
    MPI_T_pvar_handle handles[4];
    for (int i = 0; i < 4; ++i) {
        handles[i] = started_window_array(session, names[i], win, size);
    }
    unsigned long long expected[4][MAX_RANKS] = {{0}};
    const int I = (int)sizeof(int);
#define EXPECT(target, sent_bytes, back, back_bytes)                                    \
    do {                                                                                \
        expected[0][(target) % size] += 1;                                              \
        expected[1][(target) % size] += (sent_bytes);                                   \
        expected[2][(target) % size] += (back);                                         \
        expected[3][(target) % size] += (back_bytes);                                   \
    } while (0)
    int out[8] = {1, 2, 3, 4, 5, 6, 7, 8}, in[8], old;
    MPI_OK(MPI_Win_fence(0, win));
    for (int i = 0; i < PUTS; ++i) {
        MPI_OK(MPI_Put(out, w + 1, MPI_INT, (w + 1) % size, 8 * i, w + 1, MPI_INT, win));
        EXPECT(w + 1, (w + 1) * I, 0, 0);
    }
    MPI_OK(MPI_Get(in, 3, MPI_INT, (w + 2) % size, 32, 3, MPI_INT, win));
    EXPECT(w + 2, 0, 1, 3 * I);
    MPI_OK(MPI_Put(out, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Accumulate(out, 2, MPI_INT, (w + 3) % size, 40, 2, MPI_INT, MPI_SUM, win));
    EXPECT(w + 3, 2 * I, 0, 0);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Get_accumulate(out, 2, MPI_INT, in, 2, MPI_INT, (w + 1) % size, 44, 2, MPI_INT, MPI_SUM, win));
    EXPECT(w + 1, 2 * I, 1, 2 * I);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Fetch_and_op(out, &old, MPI_INT, (w + 1) % size, 48, MPI_SUM, win));
    EXPECT(w + 1, I, 1, I);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Compare_and_swap(out, in, &old, MPI_INT, (w + 2) % size, 50, win));
    EXPECT(w + 2, I, 1, I);
    MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    MPI_Request requests[2];
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Rput(out, 4, MPI_INT, (w + 2) % size, 52, 4, MPI_INT, win, &requests[0]));
    EXPECT(w + 2, 4 * I, 0, 0);
    MPI_OK(MPI_Rget(in, 5, MPI_INT, (w + 3) % size, 56, 5, MPI_INT, win, &requests[1]));
    EXPECT(w + 3, 0, 1, 5 * I);
    MPI_OK(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
    MPI_OK(MPI_Win_unlock_all(win));
#undef EXPECT
    for (int i = 0; i < 4; ++i) {
        unsigned long long got[MAX_RANKS] = {0};
        MPI_OK(MPI_T_pvar_read(session, handles[i], got));
        for (int t = 0; t < size; ++t) {
            CHECK(got[t] == expected[i][t], "%s bound to the window, window rank %d: %llu, expected %llu", names[i],
                  t, got[t], expected[i][t]);
        }
    }
    MPI_OK(MPI_Barrier(reversed));  /* every rank read before any frees */
    if (!keep) {
        MPI_OK(MPI_Win_free(&win));
        unsigned long long after[MAX_RANKS];
        const int rc = MPI_T_pvar_read(session, handles[1], after);
        CHECK(MPI_T_ERR_INVALID_HANDLE == rc, "a read of a handle bound to a freed window returned %d, not "
              "MPI_T_ERR_INVALID_HANDLE (%d)", rc, MPI_T_ERR_INVALID_HANDLE);
    }
    for (int i = 0; i < 4; ++i) {
        MPI_OK(MPI_T_pvar_handle_free(session, &handles[i]));
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    if (!keep) {
        MPI_OK(MPI_Comm_free(&reversed));
    }
}

/* The collectives pattern on comm (n ranks, this one r): each call and
 * what it adds to this rank's counters of the three kinds, in calls and
 * bytes (ints of 4 bytes; the one-to-all and all-to-one kinds at the root
 * only, never a rank's data to itself). */
enum { ONE_TO_ALL, ALL_TO_ONE, ALL_TO_ALL, KINDS };
static const char *const kind_names[KINDS] = {"COLL_ONE_TO_ALL", "COLL_ALL_TO_ONE", "COLL_ALL_TO_ALL"};

/* The bytes of counts[i] ints for every rank i of n but skip. */
static unsigned long long ints_but(const int *counts, int n, int skip)
{
    unsigned long long bytes = 0;
    for (int i = 0; i < n; ++i) {
        bytes += i == skip ? 0 : (unsigned long long)counts[i] * sizeof(int);
    }
    return bytes;
}

static void collective_calls(MPI_Comm comm, unsigned long long expected[KINDS][2])
{
    int n, r;
    MPI_OK(MPI_Comm_size(comm, &n));
    MPI_OK(MPI_Comm_rank(comm, &r));
    if (n > MAX_RANKS) {
        spc_client_die("collectives: at most %d ranks", MAX_RANKS);
    }
    const unsigned long long I = sizeof(int), others = (unsigned long long)(n - 1);
    int out[4 * MAX_RANKS * MAX_RANKS] = {0}, in[4 * MAX_RANKS * MAX_RANKS];
    int counts[MAX_RANKS], displs[MAX_RANKS], recvcounts[MAX_RANKS], rdispls[MAX_RANKS];
    MPI_Datatype types[MAX_RANKS], recvtypes[MAX_RANKS];
    MPI_Request request;
#define ADD(kind, bytes) (expected[kind][0] += 1, expected[kind][1] += (bytes))
    const int root_of[] = {1 % n, 0, 2 % n, 3 % n};

    MPI_OK(MPI_Bcast(out, 10, MPI_INT, root_of[0], comm));
    if (r == root_of[0]) ADD(ONE_TO_ALL, 10 * I * others);
    MPI_OK(MPI_Ibcast(out, 3, MPI_INT, 0, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    if (r == 0) ADD(ONE_TO_ALL, 3 * I * others);
    MPI_OK(MPI_Bcast(out, 0, MPI_INT, 0, comm)); /* runs nothing, counts nothing */
    MPI_OK(MPI_Scatter(out, 2, MPI_INT, in, 2, MPI_INT, root_of[2], comm));
    if (r == root_of[2]) ADD(ONE_TO_ALL, 2 * I * others);
    for (int i = 0; i < n; ++i) {
        counts[i] = i + 1;
        displs[i] = 4 * i;
    }
    MPI_OK(MPI_Scatterv(out, counts, displs, MPI_INT, in, r + 1, MPI_INT, root_of[3], comm));
    if (r == root_of[3]) ADD(ONE_TO_ALL, ints_but(counts, n, root_of[3]));
    MPI_OK(MPI_Iscatterv(out, counts, displs, MPI_INT, in, r + 1, MPI_INT, 0, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    if (r == 0) ADD(ONE_TO_ALL, ints_but(counts, n, 0));

    MPI_OK(MPI_Gather(out, 5, MPI_INT, in, 5, MPI_INT, 0, comm));
    if (r == 0) ADD(ALL_TO_ONE, 5 * I * others);
    for (int i = 0; i < n; ++i) {
        recvcounts[i] = 2 * i + 1;
        rdispls[i] = 2 * MAX_RANKS * i;
    }
    MPI_OK(MPI_Gatherv(out, 2 * r + 1, MPI_INT, in, recvcounts, rdispls, MPI_INT, root_of[0], comm));
    if (r == root_of[0]) ADD(ALL_TO_ONE, ints_but(recvcounts, n, root_of[0]));
    MPI_OK(MPI_Reduce(out, in, 6, MPI_INT, MPI_SUM, root_of[2], comm));
    if (r == root_of[2]) ADD(ALL_TO_ONE, 6 * I * others);
    MPI_OK(MPI_Ireduce(out, in, 1, MPI_INT, MPI_SUM, root_of[3], comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    if (r == root_of[3]) ADD(ALL_TO_ONE, I * others);

    MPI_OK(MPI_Allreduce(out, in, 7, MPI_INT, MPI_SUM, comm));
    ADD(ALL_TO_ALL, 7 * I * others);
    MPI_OK(MPI_Iallreduce(out, in, 1, MPI_INT, MPI_SUM, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(ALL_TO_ALL, I * others);
    MPI_OK(MPI_Allgather(out, 1, MPI_INT, in, 1, MPI_INT, comm));
    ADD(ALL_TO_ALL, I * others);
    MPI_OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in, 2, MPI_INT, comm));
    ADD(ALL_TO_ALL, 2 * I * others);
    for (int i = 0; i < n; ++i) {
        recvcounts[i] = i + 1;
        rdispls[i] = 2 * MAX_RANKS * i;
    }
    MPI_OK(MPI_Allgatherv(out, r + 1, MPI_INT, in, recvcounts, rdispls, MPI_INT, comm));
    ADD(ALL_TO_ALL, (unsigned long long)(r + 1) * I * others);
    MPI_OK(MPI_Alltoall(out, 2, MPI_INT, in, 2, MPI_INT, comm));
    ADD(ALL_TO_ALL, 2 * I * others);
    MPI_OK(MPI_Ialltoall(out, 1, MPI_INT, in, 1, MPI_INT, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(ALL_TO_ALL, I * others);
    unsigned long long alltoallw = 0;
    for (int i = 0; i < n; ++i) {
        counts[i] = i + r;  /* what rank i receives from this one is recvcounts[r] there: r + i */
        recvcounts[i] = i + r;
        displs[i] = rdispls[i] = 2 * MAX_RANKS * i;
    }
    MPI_OK(MPI_Alltoallv(out, counts, displs, MPI_INT, in, recvcounts, rdispls, MPI_INT, comm));
    ADD(ALL_TO_ALL, ints_but(counts, n, r));
    for (int i = 0; i < n; ++i) {
        /* one element each way, a double between ranks of different parity,
         * an int between the others; displacements in bytes */
        types[i] = recvtypes[i] = (i + r) % 2 ? MPI_DOUBLE : MPI_INT;
        counts[i] = recvcounts[i] = 1;
        displs[i] = rdispls[i] = 8 * i;
        alltoallw += i == r ? 0 : ((i + r) % 2 ? sizeof(double) : sizeof(int));
    }
    MPI_OK(MPI_Alltoallw(out, counts, displs, types, in, recvcounts, rdispls, recvtypes, comm));
    ADD(ALL_TO_ALL, alltoallw);
    MPI_OK(MPI_Barrier(comm));
    ADD(ALL_TO_ALL, 0);
    MPI_OK(MPI_Ibarrier(comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(ALL_TO_ALL, 0);
    for (int i = 0; i < n; ++i) {
        recvcounts[i] = i + 1;
    }
    MPI_OK(MPI_Reduce_scatter(out, in, recvcounts, MPI_INT, MPI_SUM, comm));
    ADD(ALL_TO_ALL, ints_but(recvcounts, n, r));
    MPI_OK(MPI_Reduce_scatter_block(out, in, 3, MPI_INT, MPI_SUM, comm));
    ADD(ALL_TO_ALL, 3 * I * others);
    MPI_OK(MPI_Scan(out, in, 2, MPI_INT, MPI_SUM, comm));
    ADD(ALL_TO_ALL, 2 * I * (unsigned long long)(n - 1 - r));
    MPI_OK(MPI_Iexscan(out, in, 3, MPI_INT, MPI_SUM, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(ALL_TO_ALL, 3 * I * (unsigned long long)(n - 1 - r));
#undef ADD
}

/* The neighbourhood collectives on comm, a communicator with a topology:
 * each call with its blocks, counts[slot] of type to the slot-th
 * neighbour and from the slot-th source (MPI_Dist_graph_neighbors's
 * order, which is MPI_Cart_shift's for a Cartesian topology), and what it
 * adds to this rank's all-to-all kind: the blocks to neighbours other
 * than MPI_PROC_NULL and the rank itself.  A block's count is its pair's
 * (pair_count), so that each side of a pair agrees on it. */
static int pair_count(int from, int to)
{
    return 1 + (from + 2 * to) % 3;
}

static void neighbourhood_calls(MPI_Comm comm, unsigned long long expected[KINDS][2])
{
    int me, sources = 0, destinations = 0, weighted;
    int source[2 * MAX_RANKS], destination[2 * MAX_RANKS];
    MPI_OK(MPI_Comm_rank(comm, &me));
    int topology;
    MPI_OK(MPI_Topo_test(comm, &topology));
    if (MPI_CART == topology) {
        int dims;
        MPI_OK(MPI_Cartdim_get(comm, &dims));
        for (int dim = 0; dim < dims; ++dim, sources += 2, destinations += 2) {
            MPI_OK(MPI_Cart_shift(comm, dim, 1, &source[sources], &destination[destinations + 1]));
            source[sources + 1] = destination[destinations + 1];
            destination[destinations] = source[sources];
        }
    } else if (MPI_GRAPH == topology) {
        MPI_OK(MPI_Graph_neighbors_count(comm, me, &sources));
        MPI_OK(MPI_Graph_neighbors(comm, me, 2 * MAX_RANKS, source));
        destinations = sources;
        memcpy(destination, source, sizeof source);
    } else {
        MPI_OK(MPI_Dist_graph_neighbors_count(comm, &sources, &destinations, &weighted));
        int weights[2][2 * MAX_RANKS];  /* not MPI_UNWEIGHTED, which GCC takes for an array of size 0 */
        MPI_OK(MPI_Dist_graph_neighbors(comm, sources, source, weights[0], destinations, destination, weights[1]));
    }
    const unsigned long long I = sizeof(int);
    int out[8 * MAX_RANKS] = {0}, in[8 * MAX_RANKS];
    int counts[2 * MAX_RANKS], displs[2 * MAX_RANKS], recvcounts[2 * MAX_RANKS], rdispls[2 * MAX_RANKS];
    MPI_Datatype types[2 * MAX_RANKS], recvtypes[2 * MAX_RANKS];
    int same[2 * MAX_RANKS];
    unsigned long long blocks = 0, counted = 0, typed = 0;
    for (int i = 0; i < destinations; ++i) {
        const int to = destination[i];
        const int other = MPI_PROC_NULL != to && me != to;
        counts[i] = MPI_PROC_NULL == to ? 7 : pair_count(me, to);  /* MPI reads no count of MPI_PROC_NULL's */
        types[i] = MPI_PROC_NULL != to && (me + to) % 2 ? MPI_DOUBLE : MPI_INT;
        displs[i] = 4 * i;
        blocks += other;
        counted += other ? (unsigned long long)counts[i] * I : 0;
        typed += other ? (unsigned long long)counts[i] * (MPI_DOUBLE == types[i] ? sizeof(double) : sizeof(int)) : 0;
    }
    for (int i = 0; i < sources; ++i) {
        const int from = source[i];
        recvcounts[i] = MPI_PROC_NULL == from ? 0 : pair_count(from, me);
        recvtypes[i] = MPI_PROC_NULL != from && (me + from) % 2 ? MPI_DOUBLE : MPI_INT;
        rdispls[i] = 4 * i;
        same[i] = 3;
    }
    MPI_Request request;
#define ADD(bytes) (expected[ALL_TO_ALL][0] += 1, expected[ALL_TO_ALL][1] += (bytes))
    MPI_OK(MPI_Neighbor_allgather(out, 3, MPI_INT, in, 3, MPI_INT, comm));
    ADD(3 * I * blocks);
    MPI_OK(MPI_Ineighbor_allgather(out, 1, MPI_INT, in, 1, MPI_INT, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(I * blocks);
    MPI_OK(MPI_Neighbor_allgatherv(out, 3, MPI_INT, in, same, rdispls, MPI_INT, comm));
    ADD(3 * I * blocks);
    MPI_OK(MPI_Ineighbor_allgatherv(out, 3, MPI_INT, in, same, rdispls, MPI_INT, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(3 * I * blocks);
    MPI_OK(MPI_Neighbor_alltoall(out, 2, MPI_INT, in, 2, MPI_INT, comm));
    ADD(2 * I * blocks);
    MPI_OK(MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(I * blocks);
    MPI_OK(MPI_Neighbor_alltoallv(out, counts, displs, MPI_INT, in, recvcounts, rdispls, MPI_INT, comm));
    ADD(counted);
    MPI_OK(MPI_Ineighbor_alltoallv(out, counts, displs, MPI_INT, in, recvcounts, rdispls, MPI_INT, comm, &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(counted);
    MPI_Aint wdispls[2 * MAX_RANKS], wrdispls[2 * MAX_RANKS];
    for (int i = 0; i < 2 * MAX_RANKS; ++i) {
        wdispls[i] = wrdispls[i] = 32 * i;  /* bytes */
    }
    MPI_OK(MPI_Neighbor_alltoallw(out, counts, wdispls, types, in, recvcounts, wrdispls, recvtypes, comm));
    ADD(typed);
    MPI_OK(MPI_Ineighbor_alltoallw(out, counts, wdispls, types, in, recvcounts, wrdispls, recvtypes, comm,
                                   &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    ADD(typed);
#undef ADD
}

/* The collectives pattern on comm, read through MPI_T handles bound to it:
 * calls makes the collectives and predicts what each kind counts. */
static void collectives_on(MPI_Comm comm, void (*calls)(MPI_Comm, unsigned long long[KINDS][2]))
{
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle handles[KINDS][2];
    char name[64];
    for (int k = 0; k < KINDS; ++k) {
        handles[k][0] = started_comm_handle(session, kind_names[k], comm);
        snprintf(name, sizeof name, "%s_BYTES", kind_names[k]);
        handles[k][1] = started_comm_handle(session, name, comm);
    }
    unsigned long long expected[KINDS][2] = {{0}};
    calls(comm, expected);
    for (int k = 0; k < KINDS; ++k) {
        for (int b = 0; b < 2; ++b) {
            unsigned long long got;
            MPI_OK(MPI_T_pvar_read(session, handles[k][b], &got));
            CHECK(got == expected[k][b], "%s%s bound to the communicator: %llu, expected %llu", kind_names[k],
                  b ? "_BYTES" : "", got, expected[k][b]);
            MPI_OK(MPI_T_pvar_handle_free(session, &handles[k][b]));
        }
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* The neighbours pattern (4 ranks; ring_only: its ring alone). */
static void neighbourhoods(int rank, int size, int ring_only)
{
    if (4 != size) {
        spc_client_die("neighbours: 4 ranks, not %d", size);
    }
    MPI_Comm ring, grid, graph;
    MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, (int[]){3}, (int[]){1}, 0, &ring));
    if (MPI_COMM_NULL != ring) {
        MPI_OK(MPI_Comm_set_name(ring, "neighbours ring"));
        collectives_on(ring, neighbourhood_calls);
        MPI_OK(MPI_Comm_free(&ring));
    }
    if (ring_only) {
        return;
    }
    MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, (int[]){2, 2}, (int[]){0, 1}, 0, &grid));
    MPI_OK(MPI_Comm_set_name(grid, "neighbours grid"));
    collectives_on(grid, neighbourhood_calls);
    MPI_OK(MPI_Comm_free(&grid));
    /* rank r sends to r + 1, ..., r + r + 1 (mod 4): each source names r */
    int sources[4], destinations[4], n_sources = 0;
    for (int r = 0; r < size; ++r) {
        for (int j = 1; j <= r + 1; ++j) {
            if ((r + j) % size == rank) {
                sources[n_sources++] = r;
            }
        }
    }
    for (int j = 1; j <= rank + 1; ++j) {
        destinations[j - 1] = (rank + j) % size;
    }
    const int ones[4] = {1, 1, 1, 1};  /* weights, not MPI_UNWEIGHTED: as above */
    MPI_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, n_sources, sources, ones, rank + 1, destinations, ones,
                                          MPI_INFO_NULL, 0, &graph));
    MPI_OK(MPI_Comm_set_name(graph, "neighbours dist graph"));
    collectives_on(graph, neighbourhood_calls);
    MPI_OK(MPI_Comm_free(&graph));
    /* edges 0-1, 0-2, 1-2, 2-3, each both ways */
    MPI_OK(MPI_Graph_create(MPI_COMM_WORLD, 4, (int[]){2, 4, 7, 8}, (int[]){1, 2, 0, 2, 0, 1, 3, 2}, 0, &graph));
    MPI_OK(MPI_Comm_set_name(graph, "neighbours graph"));
    collectives_on(graph, neighbourhood_calls);
    MPI_OK(MPI_Comm_free(&graph));
}

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    const char *pattern = 2 == argc || (4 == argc && 0 == strcmp(argv[2], "--hold")) ? argv[1] : "";
    const char *hold = 4 == argc ? argv[3] : NULL;
    if (0 == strcmp(pattern, "bcast")) {
        char data[BCAST_BYTES] = {0};
        for (int i = 0; i < BCASTS; ++i) {
            MPI_Bcast(data, BCAST_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
        }
        for (int i = 0; i < USER_SENDS && size > 1; ++i) {
            if (0 == rank) {
                MPI_Send(data, USER_BYTES, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            } else if (1 == rank) {
                MPI_Recv(data, USER_BYTES, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
    } else if (0 == strcmp(pattern, "ring")) {
        /* rank r receives what rank r - 1 sends: r messages of 8 r bytes (rank 0: size's) */
        const int previous = (rank + size - 1) % size, next = (rank + 1) % size;
        char out[1024] = {0}, in[1024];
        MPI_Request requests[2 * 1024 / 8];
        int n = 0;
        for (int i = 0; i < previous + 1; ++i) {
            MPI_Irecv(in, 8 * (previous + 1), MPI_BYTE, previous, i, MPI_COMM_WORLD, &requests[n++]);
        }
        for (int i = 0; i < rank + 1; ++i) {
            MPI_Isend(out, 8 * (rank + 1), MPI_BYTE, next, i, MPI_COMM_WORLD, &requests[n++]);
        }
        MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
    } else if (0 == strcmp(pattern, "split")) {
        MPI_Comm split;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split);
        int split_rank, split_size;
        MPI_Comm_rank(split, &split_rank);
        MPI_Comm_size(split, &split_size);
        exchange(split, (split_rank + 1) % split_size, (split_rank + split_size - 1) % split_size, SPLIT_SENDS,
                 SPLIT_BYTES);
        MPI_Comm_free(&split);
    } else if (0 == strcmp(pattern, "one-sided") || 0 == strcmp(pattern, "one-sided-kept")) {
        one_sided(size, 0 == strcmp(pattern, "one-sided-kept"));
    } else if (0 == strcmp(pattern, "collectives")) {
        collectives_on(MPI_COMM_WORLD, collective_calls);
        MPI_Comm split;
        MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split));
        MPI_OK(MPI_Comm_set_name(split, "collectives split"));
        collectives_on(split, collective_calls);
        MPI_OK(MPI_Comm_free(&split));
    } else if (0 == strcmp(pattern, "neighbours") || 0 == strcmp(pattern, "neighbours-ring")) {
        neighbourhoods(rank, size, 0 == strcmp(pattern, "neighbours-ring"));
    } else {
        if (0 == rank) {
            fprintf(stderr, "usage: comm_matrix bcast|ring|split|one-sided|one-sided-kept|collectives|"
                    "neighbours|neighbours-ring [--hold DIR]\n");
        }
        MPI_T_finalize();
        MPI_Finalize();
        return 2;
    }
    if (NULL != hold) {
        /* no barrier: it would be traffic the matrix does not predict */
        char path[4096], ready[4096];
        snprintf(path, sizeof path, "%s/.ready.%d", hold, rank);
        snprintf(ready, sizeof ready, "%s/ready.%d", hold, rank);
        FILE *f = fopen(path, "w");
        if (NULL == f || fprintf(f, "%ld\n", (long)getpid()) < 0 || 0 != fclose(f) || 0 != rename(path, ready)) {
            fprintf(stderr, "comm_matrix: rank %d cannot write %s\n", rank, ready);
            return 1;
        }
        for (;;) {
            pause();  /* until killed */
        }
    }
    /* MPI_T ends first: Open MPI 4.1.4's vader warns of its segments'
     * unlink when MPI_T_finalize comes after MPI_Finalize */
    MPI_OK(MPI_T_finalize());
    MPI_Finalize();
    return 0 == test_failures ? 0 : 1;
}
