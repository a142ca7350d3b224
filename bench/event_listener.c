/*
 * A tool that listens to every ob1 MPI_T event on MPI_COMM_WORLD with a
 * callback that does nothing, loaded with LD_PRELOAD into an unchanged
 * program: what events cost a message when somebody listens, apart from
 * what a real tool does with them (netpipe_runs/event_cost.py runs it).
 */
#include <mpi.h>

static void ignore(MPI_T_event_instance instance, MPI_T_event_registration registration,
                   MPI_T_cb_safety safety, void *user_data)
{
    (void)instance, (void)registration, (void)safety, (void)user_data;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv), provided, num = 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_event_get_num(&num);
    MPI_Comm world = MPI_COMM_WORLD;
    for (int event = 0; event < num; ++event) {
        MPI_T_event_registration registration;
        if (MPI_SUCCESS == MPI_T_event_handle_alloc(event, &world, MPI_INFO_NULL, &registration)) {
            MPI_T_event_register_callback(registration, MPI_T_CB_REQUIRE_THREAD_SAFE, MPI_INFO_NULL, NULL,
                                          ignore);
        }
    }
    return rc;
}
