/* MPI_T around MPI's life (open-mpi/ompi#11485): runs the steps of its
 * argument in order, asks MPI_T what it has after each (variable and
 * category counts, the value of an integer control variable), and prints
 * per rank a line for each step that failed and one at the end.  Steps:
 * T MPI_T_init_thread, t MPI_T_finalize, I MPI_Init, J MPI_Init_thread,
 * F MPI_Finalize.  Exit status 0 if every step and question succeeded.
 *
 * mpicc -o mpit_after_finalize mpit_after_finalize.c
 * mpirun -np 2 ./mpit_after_finalize TIFt   # MPI_T_finalize after MPI_Finalize
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int tool_starts; /* MPI_T_init_thread calls not yet finalized */

/* What a tool asks at any time: how many variables and categories, and the
 * value of the first integer control variable. */
static int ask(void)
{
    int pvars, cvars, categories, rc;
    if (0 == tool_starts) {
        return MPI_T_pvar_get_num(&pvars) == MPI_T_ERR_NOT_INITIALIZED ? MPI_SUCCESS : MPI_ERR_OTHER;
    }
    if (MPI_SUCCESS != (rc = MPI_T_pvar_get_num(&pvars)) ||
        MPI_SUCCESS != (rc = MPI_T_cvar_get_num(&cvars)) ||
        MPI_SUCCESS != (rc = MPI_T_category_get_num(&categories))) {
        return rc;
    }
    for (int i = 0; i < cvars; ++i) {
        char name[256];
        int name_len = sizeof name, verbosity, bind, scope, count, value;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        MPI_T_cvar_handle handle;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype,
                                               NULL, NULL, &bind, &scope) ||
            MPI_INT != type || MPI_T_BIND_NO_OBJECT != bind) {
            continue;
        }
        if (MPI_SUCCESS != (rc = MPI_T_cvar_handle_alloc(i, NULL, &handle, &count)) ||
            MPI_SUCCESS != (rc = MPI_T_cvar_read(handle, &value)) ||
            MPI_SUCCESS != (rc = MPI_T_cvar_handle_free(&handle))) {
            return rc;
        }
        break;
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int rank = -1, provided, failures = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: %s STEPS (T, t, I, J, F: e.g. TIFt)\n", argv[0]);
        return 2;
    }
    for (const char *step = argv[1]; *step; ++step) {
        int rc = MPI_SUCCESS;
        switch (*step) {
        case 'T':
            rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
            tool_starts += MPI_SUCCESS == rc;
            break;
        case 't':
            rc = MPI_T_finalize();
            tool_starts -= MPI_SUCCESS == rc;
            break;
        case 'I': rc = MPI_Init(&argc, &argv); break;
        case 'J': rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided); break;
        case 'F': rc = MPI_Finalize(); break;
        default: fprintf(stderr, "unknown step %c\n", *step); return 2;
        }
        if (-1 == rank && ('I' == *step || 'J' == *step)) {
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        }
        int asked = MPI_SUCCESS == rc ? ask() : MPI_SUCCESS;
        if (MPI_SUCCESS != rc || MPI_SUCCESS != asked) {
            printf("rank %d: %.*s[%c]%s: the step returned %d, MPI_T's answers %d\n", rank,
                   (int)(step - argv[1]), argv[1], *step, step + 1, rc, asked);
            ++failures;
        }
    }
    printf("rank %d: %s: %d steps, %d failed\n", rank, argv[1], (int)strlen(argv[1]), failures);
    return 0 == failures ? 0 : 1;
}
