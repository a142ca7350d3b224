/*
 * Which algorithm coll tuned ran (issue 35), on 4 ranks: each collective
 * tuned serves is called CALLS times on MPI_COMM_WORLD with 8 ints a block,
 * and its counters TUNED_<COLL>_<ALGORITHM> and TUNED_<COLL>_BYTES read
 * through MPI_T before and after.  The algorithms and their names are Open
 * MPI's own: the control variable coll_tuned_<coll>_algorithm, its value
 * and its enumeration's names (so a counter our catalogue names otherwise
 * than Open MPI ends the test).
 *
 *  - with coll_tuned_use_dynamic_rules 1 and an algorithm forced (mpirun's
 *    --mca coll_tuned_<coll>_algorithm N): that algorithm's counter is
 *    exactly CALLS, every other 0;
 *  - without: the fixed decision chose one algorithm for all CALLS calls of
 *    one size (one counter is CALLS, the others 0); scan and exscan, which
 *    tuned serves only with dynamic rules, count nothing.
 * The bytes, each call's block as the fixed decisions weigh it, are
 * predicted here: BLOCK ints, or a rank's whole receive buffer (SIZE x
 * BLOCK) for the vector collectives and reduce_scatter.
 */
#include "mpit_util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum { SIZE = 4, BLOCK = 8, CALLS = 5, MAX_ALGORITHMS = 16 };

static MPI_T_pvar_session session;

struct collective {
    const char *name;  /* coll_tuned_<name>_algorithm; TUNED_<NAME>_* */
    int bytes;         /* per call, predicted; -1: no bytes counter */
};

static const struct collective collectives[] = {
    {"allgather", BLOCK * 4},       {"allgatherv", SIZE * BLOCK * 4},     {"allreduce", BLOCK * 4},
    {"alltoall", BLOCK * 4},        {"alltoallv", SIZE * BLOCK * 4},      {"barrier", -1},
    {"bcast", BLOCK * 4},           {"exscan", BLOCK * 4},                {"gather", BLOCK * 4},
    {"reduce", BLOCK * 4},          {"reduce_scatter", SIZE * BLOCK * 4}, {"reduce_scatter_block", BLOCK * 4},
    {"scan", BLOCK * 4},            {"scatter", BLOCK * 4},
};

static int send_buffer[SIZE * BLOCK], receive_buffer[SIZE * BLOCK];
static int counts[SIZE], displacements[SIZE];

static void run(const char *name)
{
    MPI_Comm w = MPI_COMM_WORLD;
    for (int i = 0; i < CALLS; ++i) {
        if (!strcmp(name, "allgather")) {
            MPI_OK(MPI_Allgather(send_buffer, BLOCK, MPI_INT, receive_buffer, BLOCK, MPI_INT, w));
        } else if (!strcmp(name, "allgatherv")) {
            MPI_OK(MPI_Allgatherv(send_buffer, BLOCK, MPI_INT, receive_buffer, counts, displacements, MPI_INT, w));
        } else if (!strcmp(name, "allreduce")) {
            MPI_OK(MPI_Allreduce(send_buffer, receive_buffer, BLOCK, MPI_INT, MPI_SUM, w));
        } else if (!strcmp(name, "alltoall")) {
            MPI_OK(MPI_Alltoall(send_buffer, BLOCK, MPI_INT, receive_buffer, BLOCK, MPI_INT, w));
        } else if (!strcmp(name, "alltoallv")) {
            MPI_OK(MPI_Alltoallv(send_buffer, counts, displacements, MPI_INT, receive_buffer, counts,
                                 displacements, MPI_INT, w));
        } else if (!strcmp(name, "barrier")) {
            MPI_OK(MPI_Barrier(w));
        } else if (!strcmp(name, "bcast")) {
            MPI_OK(MPI_Bcast(send_buffer, BLOCK, MPI_INT, 0, w));
        } else if (!strcmp(name, "exscan")) {
            MPI_OK(MPI_Exscan(send_buffer, receive_buffer, BLOCK, MPI_INT, MPI_SUM, w));
        } else if (!strcmp(name, "gather")) {
            MPI_OK(MPI_Gather(send_buffer, BLOCK, MPI_INT, receive_buffer, BLOCK, MPI_INT, 0, w));
        } else if (!strcmp(name, "reduce")) {
            MPI_OK(MPI_Reduce(send_buffer, receive_buffer, BLOCK, MPI_INT, MPI_SUM, 0, w));
        } else if (!strcmp(name, "reduce_scatter")) {
            MPI_OK(MPI_Reduce_scatter(send_buffer, receive_buffer, counts, MPI_INT, MPI_SUM, w));
        } else if (!strcmp(name, "reduce_scatter_block")) {
            MPI_OK(MPI_Reduce_scatter_block(send_buffer, receive_buffer, BLOCK, MPI_INT, MPI_SUM, w));
        } else if (!strcmp(name, "scan")) {
            MPI_OK(MPI_Scan(send_buffer, receive_buffer, BLOCK, MPI_INT, MPI_SUM, w));
        } else if (!strcmp(name, "scatter")) {
            MPI_OK(MPI_Scatter(send_buffer, BLOCK, MPI_INT, receive_buffer, BLOCK, MPI_INT, 0, w));
        } else {
            spc_client_die("no collective %s", name);
        }
    }
}

/* Control variable name's value (an int, or a bool as 0 or 1), and its
 * enumeration (or MPI_T_ENUM_NULL) in *enumtype.  A bool's read writes one
 * byte (MPI_C_BOOL: ompi/mpi/tool/mpit_common.c:106, cvar_read.c:81-82 in
 * 4.1.4): read into an int, the other three were the stack's. */
static int cvar_value(const char *name, MPI_T_enum *enumtype)
{
    int num;
    MPI_OK(MPI_T_cvar_get_num(&num));
    for (int index = 0; index < num; ++index) {
        char found[256], description[1024];
        int found_len = sizeof found, description_len = sizeof description, verbosity, bind, scope;
        MPI_Datatype datatype;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(index, found, &found_len, &verbosity, &datatype, enumtype,
                                               description, &description_len, &bind, &scope) ||
            strcmp(found, name)) {
            continue;
        }
        MPI_T_cvar_handle handle;
        int count, value = 0;
        bool flag = false;
        MPI_OK(MPI_T_cvar_handle_alloc(index, NULL, &handle, &count));
        MPI_OK(MPI_T_cvar_read(handle, MPI_C_BOOL == datatype ? (void *)&flag : (void *)&value));
        MPI_OK(MPI_T_cvar_handle_free(&handle));
        return MPI_C_BOOL == datatype ? (int)flag : value;
    }
    spc_client_die("no control variable %s", name);
}

/* "TUNED_<COLL>_<ALGORITHM>" of Open MPI's names, upper case, '-' as '_'. */
static void counter_name(const char *coll, const char *algorithm, char *name, size_t size)
{
    int used = snprintf(name, size, "TUNED_%s_%s", coll, algorithm);
    for (int i = 0; i < used && (size_t)i < size; ++i) {
        name[i] = '-' == name[i] ? '_' : (char)toupper((unsigned char)name[i]);
    }
}

static void check_collective(const struct collective *c, bool dynamic)
{
    char cvar[128], name[256];
    MPI_T_enum algorithms_enum;
    snprintf(cvar, sizeof cvar, "coll_tuned_%s_algorithm", c->name);
    const int setting = cvar_value(cvar, &algorithms_enum);
    const int forced = dynamic ? setting : 0;
    CHECK(!dynamic || forced > 0, "%s: the job forces no algorithm", cvar);
    int items;
    char enum_name[256];
    int enum_name_len = sizeof enum_name;
    MPI_OK(MPI_T_enum_get_info(algorithms_enum, &items, enum_name, &enum_name_len));
    MPI_T_pvar_handle handles[MAX_ALGORITHMS], bytes_handle = MPI_T_PVAR_HANDLE_NULL;
    int numbers[MAX_ALGORITHMS], num = 0;
    unsigned long long before[MAX_ALGORITHMS], bytes_before = 0;
    for (int item = 0; item < items && num < MAX_ALGORITHMS; ++item) {
        int value;
        char algorithm[128];
        int algorithm_len = sizeof algorithm;
        MPI_OK(MPI_T_enum_get_item(algorithms_enum, item, &value, algorithm, &algorithm_len));
        if (0 == value) {
            continue;  /* "ignore": let the decision choose */
        }
        counter_name(c->name, algorithm, name, sizeof name);
        numbers[num] = value;
        handles[num] = started_handle(session, name);
        before[num] = read_handle(session, handles[num]);
        ++num;
    }
    if (c->bytes >= 0) {
        counter_name(c->name, "bytes", name, sizeof name);
        bytes_handle = started_handle(session, name);
        bytes_before = read_handle(session, bytes_handle);
    }
    run(c->name);
    const bool served = dynamic || (strcmp(c->name, "scan") && strcmp(c->name, "exscan"));
    int chosen = 0, nonzero = 0;
    for (int i = 0; i < num; ++i) {
        const unsigned long long ran = read_handle(session, handles[i]) - before[i];
        if (0 != ran) {
            ++nonzero;
            chosen = numbers[i];
            CHECK(CALLS == ran, "%s: algorithm %d ran %llu of %d calls", c->name, numbers[i], ran, CALLS);
        }
        MPI_OK(MPI_T_pvar_handle_free(session, &handles[i]));
    }
    if (dynamic) {
        CHECK(1 == nonzero && chosen == forced, "%s: forced %d, counted %d algorithms (the last %d)", c->name,
              forced, nonzero, chosen);
    } else {
        CHECK(nonzero == (served ? 1 : 0), "%s: %d algorithms counted, expected %d", c->name, nonzero,
              served ? 1 : 0);
    }
    if (c->bytes >= 0) {
        CHECK_EQ_U64(read_handle(session, bytes_handle) - bytes_before, served ? CALLS * c->bytes : 0, c->name);
        MPI_OK(MPI_T_pvar_handle_free(session, &bytes_handle));
    }
    if (0 == test_rank) {
        printf("%s: %s %d\n", c->name, dynamic ? "forced" : "chosen", chosen);
    }
}

int main(int argc, char **argv)
{
    start_mpi_t_and_mpi(&argc, &argv, SIZE);
    for (int r = 0; r < SIZE; ++r) {
        counts[r] = BLOCK;
        displacements[r] = r * BLOCK;
    }
    MPI_T_enum unused;
    const bool dynamic = 0 != cvar_value("coll_tuned_use_dynamic_rules", &unused);
    MPI_OK(MPI_T_pvar_session_create(&session));
    for (size_t i = 0; i < sizeof collectives / sizeof collectives[0]; ++i) {
        check_collective(&collectives[i], dynamic);
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_Finalize());
    MPI_OK(MPI_T_finalize());
    return finish(dynamic ? "coll tuned ran the forced algorithms" : "coll tuned's choices counted once each");
}
