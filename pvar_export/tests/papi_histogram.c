/*
 * The message-size histograms through PAPI alone, on 2 ranks: rank 0 sends
 * 0, 1, 2, 3, 4, 1023, 1024 and 16384 B to rank 1, so the events
 * sde:::ompi_spc::OMPI_SPC_MESSAGE_SIZES_SENT_BIN<k> of rank 0 and
 * ..._RECEIVED_BIN<k> of rank 1 read 1, 1, 2, 1, 1, 1, 1 in bins 0, 1, 2, 3,
 * 10, 11, 15 (8 messages) and 0 elsewhere; the other direction reads 0.  No
 * MPI_T call: the first PAPI read turns the histograms on.
 *
 * The same under ob1, ucx and cm: each counts a user message in the bin of
 * count times the datatype's size when sent and of the length received, and
 * MPI's own traffic (the barrier's negative tags) in none.  The 16 KiB
 * message is over ob1's eager limit over shared memory (4 KiB), so one
 * message leaves the eager path there.
 *
 * usage: papi_histogram [PML, the job's: ob1 (default), ucx or cm]
 */
#include <papi.h>

#include "mpit_util.h"

#include "spc/spc.h"

/* The test's sizes fill bins 0 to 15: 32 events in one set; PAPI's sde
 * component refused 44 ("cannot be counted due to hardware resource limits"). */
enum { BINS = 16, LARGE = 16384 };

#define PAPI_OK_OR_DIE(call)                                                                  \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        if (rc_ != PAPI_OK) {                                                                 \
            spc_client_die("%s:%d: %s: %s", __FILE__, __LINE__, #call, PAPI_strerror(rc_));   \
        }                                                                                     \
    } while (0)

int main(int argc, char **argv)
{
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    take_pml_argument(argc, argv);
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) {
        spc_client_die("PAPI_library_init failed");
    }
    int event_set = PAPI_NULL;
    PAPI_OK_OR_DIE(PAPI_create_eventset(&event_set));
    for (int id = 0; id < SPC_NUM_HISTOGRAMS; ++id) {
        for (int bin = 0; bin < BINS; ++bin) {
            char name[64], event[128];
            spc_histogram_bin_name(id, bin, name, sizeof name);
            snprintf(event, sizeof event, SPC_PAPI_EVENT_PREFIX "%s", name);
            PAPI_OK_OR_DIE(PAPI_add_named_event(event_set, event));
        }
    }
    PAPI_OK_OR_DIE(PAPI_start(event_set));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));

    static const int sizes[] = {0, 1, 2, 3, 4, 1023, 1024, LARGE};
    static char buffer[LARGE];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        if (test_rank == 0) {
            MPI_OK(MPI_Send(buffer, sizes[i], MPI_CHAR, 1, 1, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Recv(buffer, sizes[i], MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    }
    long long values[SPC_NUM_HISTOGRAMS * BINS];
    PAPI_OK_OR_DIE(PAPI_read(event_set, values));

    const long long filled[BINS] = {[0] = 1, [1] = 1, [2] = 2, [3] = 1, [10] = 1, [11] = 1, [15] = 1};
    const int mine = test_rank == 0 ? SPC_HISTOGRAM_MESSAGE_SIZES_SENT : SPC_HISTOGRAM_MESSAGE_SIZES_RECEIVED;
    for (int id = 0; id < SPC_NUM_HISTOGRAMS; ++id) {
        long long sum = 0;
        for (int bin = 0; bin < BINS; ++bin) {
            char what[128];
            spc_histogram_bin_name(id, bin, what, sizeof what);
            CHECK_EQ_U64(values[id * BINS + bin], id == mine ? filled[bin] : 0, what);
            sum += values[id * BINS + bin];
        }
        CHECK_EQ_U64(sum, id == mine ? 8 : 0, spc_histogram_infos[id].name);
    }
    PAPI_OK_OR_DIE(PAPI_stop(event_set, values));
    MPI_OK(MPI_Finalize());
    printf("rank %d: under pml %s\n", test_rank, test_pml);
    return finish("papi_histogram");
}
