/*
 * A tool that listens to every ob1 MPI_T event on MPI_COMM_WORLD with a
 * callback that does nothing, loaded with LD_PRELOAD into an unchanged
 * program: what events cost a message when somebody listens, apart from
 * what a real tool does with them (netpipe_runs/event_cost.py runs it).
 * SPC_LISTEN_EVENT=NAME listens to that one event only (its MPI_T name,
 * e.g. ompi_pml_ob1_unexpected_insert); a name MPI_T does not know, or a
 * handle it refuses, is an error at MPI_Init.  Each rank says on stderr
 * how many handles it holds.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void ignore(MPI_T_event_instance instance, MPI_T_event_registration registration,
                   MPI_T_cb_safety safety, void *user_data)
{
    (void)instance, (void)registration, (void)safety, (void)user_data;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv), provided, num = 0, first = 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_event_get_num(&num);
    const char *only = getenv("SPC_LISTEN_EVENT");
    if (NULL != only && '\0' != only[0]) {
        if (MPI_SUCCESS != MPI_T_event_get_index(only, &first)) {
            fprintf(stderr, "event_listener: SPC_LISTEN_EVENT=%s: no such MPI_T event\n", only);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        num = first + 1;
    }
    MPI_Comm world = MPI_COMM_WORLD;
    int handles = 0;
    for (int event = first; event < num; ++event) {
        MPI_T_event_registration registration;
        if (MPI_SUCCESS == MPI_T_event_handle_alloc(event, &world, MPI_INFO_NULL, &registration) &&
            MPI_SUCCESS == MPI_T_event_register_callback(registration, MPI_T_CB_REQUIRE_THREAD_SAFE,
                                                         MPI_INFO_NULL, NULL, ignore)) {
            ++handles;
        }
    }
    if (NULL != only && '\0' != only[0] && 1 != handles) {
        fprintf(stderr, "event_listener: SPC_LISTEN_EVENT=%s: no handle on MPI_COMM_WORLD\n", only);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* what a run that listens can check it measured */
    fprintf(stderr, "event_listener: %d handle(s) with a callback\n", handles);
    return rc;
}
