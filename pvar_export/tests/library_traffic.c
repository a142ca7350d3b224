/*
 * Open MPI's own point-to-point traffic is MPI traffic, whatever its tags
 * (issue 36): one-sided operations that osc pt2pt carries over the PML on
 * a communicator of its own with tags >= 0, and collective file I/O whose
 * aggregators exchange data over the file's communicator with tags >= 0.
 * On 2 ranks: rank 0 sends USER_SENDS messages of USER_BYTES bytes to
 * rank 1, which sends BACK_BYTES back; the test sums those itself.  Then a
 * window (fence, put, get, accumulate, fence) and a collective write of
 * FILE_BYTES a rank.  BYTES_SENT_USER and BYTES_RECEIVED_USER, process-wide
 * and bound to MPI_COMM_WORLD, must read exactly the user's sends.
 *
 * The control half: with --osc-through-pml (a job run with --mca osc
 * pt2pt) the one-sided phase must have moved at least the put's bytes as
 * MPI bytes on rank 0, and with --file-through-pml the interleaved write
 * at least FILE_BYTES / 2 on the two ranks together; so the test sees
 * library traffic pass the PML, and that the user counters ignored it.
 * In each phase, the MPI bytes one rank sent the other received: the two
 * ranks' sums are equal (pml cm counted a persistent send's start from a
 * request osc pt2pt had freed and reused: 8,020 sent against 2,020).
 *
 * usage: library_traffic FILE [--osc-through-pml] [--file-through-pml] [--pml PML]
 */
#include "mpit_util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { USER_SENDS = 3, USER_BYTES = 100, BACK_BYTES = 7, TAG = 5 };
enum { WINDOW_INTS = 4096, PUT_INTS = 1000, GET_INTS = 500, ACCUMULATE_INTS = 200 };
enum { FILE_BYTES = 1 << 16, FILE_BLOCK = 512 };

static const char *const counters[] = {"BYTES_SENT_USER", "BYTES_RECEIVED_USER", "BYTES_SENT_MPI",
                                       "BYTES_RECEIVED_MPI"};
enum { SENT_USER, RECEIVED_USER, SENT_MPI, RECEIVED_MPI, NUM_COUNTERS };

struct reading {
    unsigned long long value[NUM_COUNTERS];
};

static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[NUM_COUNTERS], world_handles[2];

static struct reading read_all(void)
{
    struct reading r;
    for (int i = 0; i < NUM_COUNTERS; ++i) {
        r.value[i] = read_handle(session, handles[i]);
    }
    return r;
}

/* What each counter moved from before to after. */
static struct reading moved(struct reading before, struct reading after)
{
    struct reading d;
    for (int i = 0; i < NUM_COUNTERS; ++i) {
        d.value[i] = after.value[i] - before.value[i];
    }
    return d;
}

static void user_traffic(int rank)
{
    char buffer[USER_BYTES] = {0};
    for (int i = 0; i < USER_SENDS; ++i) {
        if (rank == 0) {
            MPI_OK(MPI_Send(buffer, USER_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Recv(buffer, USER_BYTES, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    }
    if (rank == 1) {
        MPI_OK(MPI_Send(buffer, BACK_BYTES, MPI_BYTE, 0, TAG, MPI_COMM_WORLD));
    } else {
        MPI_OK(MPI_Recv(buffer, BACK_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
}

static void one_sided(int rank)
{
    int *memory;
    MPI_Win window;
    MPI_OK(MPI_Win_allocate(WINDOW_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &memory,
                            &window));
    int *mine = calloc(WINDOW_INTS, sizeof(int));
    MPI_OK(MPI_Win_fence(0, window));
    if (rank == 0) {
        MPI_OK(MPI_Put(mine, PUT_INTS, MPI_INT, 1, 0, PUT_INTS, MPI_INT, window));
        MPI_OK(MPI_Get(mine + PUT_INTS, GET_INTS, MPI_INT, 1, PUT_INTS, GET_INTS, MPI_INT, window));
        MPI_OK(MPI_Accumulate(mine, ACCUMULATE_INTS, MPI_INT, 1, 2 * PUT_INTS, ACCUMULATE_INTS, MPI_INT,
                              MPI_SUM, window));
    }
    MPI_OK(MPI_Win_fence(0, window));
    MPI_OK(MPI_Win_free(&window));
    free(mine);
}

/* Blocks of the two ranks interleaved in the file: an aggregator writes a
 * contiguous part, so half of each rank's data goes to the other rank. */
static void file_write(int rank, const char *path)
{
    MPI_File file;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                         MPI_INFO_NULL, &file));
    MPI_Datatype every_other_block;
    MPI_OK(MPI_Type_vector(FILE_BYTES / FILE_BLOCK, FILE_BLOCK, 2 * FILE_BLOCK, MPI_BYTE, &every_other_block));
    MPI_OK(MPI_Type_commit(&every_other_block));
    MPI_OK(MPI_File_set_view(file, (MPI_Offset)rank * FILE_BLOCK, MPI_BYTE, every_other_block, "native",
                             MPI_INFO_NULL));
    char *data = calloc(FILE_BYTES, 1);
    MPI_OK(MPI_File_write_all(file, data, FILE_BYTES, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_close(&file));
    MPI_OK(MPI_Type_free(&every_other_block));
    free(data);
}

int main(int argc, char **argv)
{
    take_pml_option(&argc, argv);
    bool osc_through_pml = false, file_through_pml = false;
    const char *path = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--osc-through-pml") == 0) {
            osc_through_pml = true;
        } else if (strcmp(argv[i], "--file-through-pml") == 0) {
            file_through_pml = true;
        } else if (path == NULL && argv[i][0] != '-') {
            path = argv[i];
        } else {
            spc_client_die("usage: %s FILE [--osc-through-pml] [--file-through-pml] [--pml PML]", argv[0]);
        }
    }
    if (path == NULL) {
        spc_client_die("usage: %s FILE [--osc-through-pml] [--file-through-pml] [--pml PML]", argv[0]);
    }
    const int rank = start_mpi_t_and_mpi(&argc, &argv, 2);
    MPI_OK(MPI_T_pvar_session_create(&session));
    for (int i = 0; i < NUM_COUNTERS; ++i) {
        handles[i] = started_handle(session, counters[i]);
    }
    world_handles[0] = started_comm_handle(session, "BYTES_SENT_USER", MPI_COMM_WORLD);
    world_handles[1] = started_comm_handle(session, "BYTES_RECEIVED_USER", MPI_COMM_WORLD);

    user_traffic(rank);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    const struct reading after_user = read_all();
    one_sided(rank);
    const struct reading after_osc = read_all();
    file_write(rank, path);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    const struct reading after_file = read_all();

    const unsigned long long user_sent = rank == 0 ? USER_SENDS * USER_BYTES : BACK_BYTES;
    const unsigned long long user_received = rank == 0 ? BACK_BYTES : USER_SENDS * USER_BYTES;
    CHECK_EQ_U64(after_user.value[SENT_USER], user_sent, "BYTES_SENT_USER after the user's sends");
    CHECK_EQ_U64(after_file.value[SENT_USER], user_sent, "BYTES_SENT_USER after one-sided and file I/O");
    CHECK_EQ_U64(after_file.value[RECEIVED_USER], user_received,
                 "BYTES_RECEIVED_USER after one-sided and file I/O");
    CHECK_EQ_U64(read_handle(session, world_handles[0]), user_sent, "BYTES_SENT_USER of MPI_COMM_WORLD");
    CHECK_EQ_U64(read_handle(session, world_handles[1]), user_received, "BYTES_RECEIVED_USER of MPI_COMM_WORLD");

    const struct reading osc = moved(after_user, after_osc), file = moved(after_osc, after_file);
    const unsigned long long osc_mpi = osc.value[SENT_MPI] + osc.value[RECEIVED_MPI];
    const unsigned long long file_mpi = file.value[SENT_MPI] + file.value[RECEIVED_MPI];
    printf("rank %d: MPI bytes sent, received during one-sided %llu, %llu; during the write %llu, %llu\n", rank,
           osc.value[SENT_MPI], osc.value[RECEIVED_MPI], file.value[SENT_MPI], file.value[RECEIVED_MPI]);
    const struct reading phases[] = {osc, file};
    const char *const phase_names[] = {"MPI bytes the ranks sent (expected: received) in the one-sided phase",
                                       "MPI bytes the ranks sent (expected: received) in the write"};
    for (int p = 0; p < 2; ++p) {
        unsigned long long sent, received;
        MPI_OK(MPI_Allreduce(&phases[p].value[SENT_MPI], &sent, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
        MPI_OK(MPI_Allreduce(&phases[p].value[RECEIVED_MPI], &received, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                             MPI_COMM_WORLD));
        CHECK_EQ_U64(sent, received, phase_names[p]);
    }
    if (osc_through_pml && rank == 0) {
        CHECK(osc_mpi >= PUT_INTS * sizeof(int), "one-sided moved %llu MPI bytes through the PML, expected >= %zu",
              osc_mpi, PUT_INTS * sizeof(int));
    }
    if (file_through_pml) {
        unsigned long long both;
        MPI_OK(MPI_Allreduce(&file_mpi, &both, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
        CHECK(2 * both >= FILE_BYTES, "the write moved %llu MPI bytes through the PML on both ranks, expected >= %d",
              both, FILE_BYTES / 2);
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_Finalize());
    MPI_OK(MPI_T_finalize());
    return finish("library_traffic");
}
