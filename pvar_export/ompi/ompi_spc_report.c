/*
 * The finalize report of ompi-spc (built into Open MPI by patch
 * "spc: the finalize report, its CSV file and SPC's parameters"): with
 * mpi_spc_dump_enabled, rank 0 prints min / mean / max over ranks of every
 * counter; with mpi_spc_dump_file it also writes every rank's values as CSV.
 * When the message-size histograms counted, both hold them too: the table
 * min / mean / max of each bin that held a message on some rank, the CSV a
 * row per rank and bin, named OMPI_SPC_<HISTOGRAM>_BIN<k>.  With every
 * communicator recorded (mpi_spc_attach "traffic"), a second CSV beside the
 * first (csv_path_with ".comms") holds each rank's communicators' counters.  Both say
 * which job and node each line is: under Slurm its job id and step (the
 * batch system's, spc_batch_identity), else mpirun's job id; the table in a
 * line after it, the CSV in columns after rank,counter,value,unit (which
 * stay first, for readers that take them by position).  A process that
 * started MPI with MPI sessions alone has no MPI_COMM_WORLD to gather over:
 * it prints and writes its own values, its CSV named with its rank
 * (own_csv_path).
 */
#include "ompi_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/runtime/ompi_spc.h"
#include "ompi/runtime/ompi_spc_pmls.h"
#include OMPI_SPC_RTE_HEADER
#include OMPI_SPC_PMIX_HEADER
#include "ompi/runtime/params.h"
#include "opal/util/output.h"
#include "spc/live.h"

/* Whom the report speaks for: MPI_COMM_WORLD, or (comm NULL) this process
 * alone, rank first_rank of its job.  The collectives below are copies then. */
struct report_group {
    ompi_communicator_t *comm;
    int rank, size, first_rank;
};

static struct report_group report_group(void)
{
    /* MPI_Finalize reports first thing (SPC_FINI), while the world is up;
     * the last MPI_Session_finalize of a sessions program has none. */
    if (ompi_mpi_state >= OMPI_MPI_STATE_INIT_COMPLETED &&
        ompi_mpi_state < OMPI_MPI_STATE_FINALIZE_STARTED) {
        ompi_communicator_t *world = &ompi_mpi_comm_world.comm;
        return (struct report_group){world, ompi_comm_rank(world), ompi_comm_size(world), 0};
    }
    return (struct report_group){NULL, 0, 1, (int)OMPI_PROC_MY_NAME->vpid};
}

/* By extent, not size: MPI_LONG_INT's pairs are 12 bytes of data 16 apart. */
static void copy_values(const void *in, void *out, int count, ompi_datatype_t *type)
{
    ptrdiff_t lower_bound = 0, extent = 0;
    ompi_datatype_get_extent(type, &lower_bound, &extent);
    memcpy(out, in, (size_t)count * (size_t)extent);
}

static void group_reduce(const struct report_group *group, const void *in, void *out, int count,
                         ompi_datatype_t *type, ompi_op_t *op)
{
    ompi_communicator_t *comm = group->comm;
    if (NULL == comm) {
        copy_values(in, out, count, type);
        return;
    }
    comm->c_coll->coll_reduce(in, out, count, type, op, 0, comm, comm->c_coll->coll_reduce_module);
}

/* Whether every rank says yes: so that rank 0's failed allocation skips a
 * step on all ranks instead of leaving the others in a gather. */
static bool group_all(const struct report_group *group, bool mine)
{
    ompi_communicator_t *comm = group->comm;
    int yes = mine, all_yes = yes;
    if (NULL != comm) {
        comm->c_coll->coll_allreduce(&yes, &all_yes, 1, MPI_INT, MPI_MIN, comm,
                                     comm->c_coll->coll_allreduce_module);
    }
    return 0 != all_yes;
}

static void group_gather(const struct report_group *group, const void *in, int count,
                         ompi_datatype_t *type, void *out)
{
    ompi_communicator_t *comm = group->comm;
    if (NULL == comm) {
        copy_values(in, out, count, type);
        return;
    }
    comm->c_coll->coll_gather(in, count, type, out, count, type, 0, comm,
                              comm->c_coll->coll_gather_module);
}

/* Which job, step and node a rank is: gathered to rank 0 with the values. */
struct rank_identity {
    char job[32];   /* Slurm's job id, else mpirun's (Open MPI's) */
    char step[16];  /* Slurm's step ("batch" in a batch script), else "" */
    char node[64];
};

static void my_identity(struct rank_identity *me)
{
    int local_rank;
    memset(me, 0, sizeof *me);
    spc_batch_identity(me->job, sizeof me->job, me->step, sizeof me->step, &local_rank);
    if ('\0' == me->job[0]) {
        snprintf(me->job, sizeof me->job, "%u", (unsigned)OMPI_PROC_MY_NAME->jobid);
    }
    gethostname(me->node, sizeof me->node - 1);
}

/* The identities of every rank at rank 0 (NULL elsewhere, or if rank 0 could
 * not allocate: the ranks agree first, as write_csv does). */
static struct rank_identity *gather_identities(const struct report_group *group)
{
    struct rank_identity me, *all = NULL;
    my_identity(&me);
    if (0 == group->rank) {
        all = calloc((size_t)group->size, sizeof *all);
    }
    if (!group_all(group, 0 != group->rank || NULL != all)) {
        free(all);
        return NULL;
    }
    group_gather(group, &me, (int)sizeof me, MPI_BYTE, all);
    return all;
}

/* The table's last line: "job J[, step S] (Slurm|mpirun), on N nodes: A, B, ..."
 * with the distinct nodes in rank order (the first 16). */
static void print_identity(const struct rank_identity *all, int size)
{
    char text[2048];
    size_t used = 0;
    int nodes = 0;
    if (NULL == all) {
        return;
    }
    const bool slurm = '\0' != all[0].step[0];
    used += snprintf(text + used, sizeof text - used, "job %s (%s)", all[0].job, slurm ? "Slurm" : "mpirun");
    /* Slurm's steps, distinct, in rank order: under mpirun in a batch script
     * the ranks beside mpirun are in "batch", the others in the daemons' */
    int steps = 0;
    for (int r = 0; r < size && slurm; ++r) {
        bool seen = false;
        for (int q = 0; q < r && !seen; ++q) {
            seen = 0 == strcmp(all[q].step, all[r].step);
        }
        if (!seen && ++steps <= 4) {
            used += snprintf(text + used, sizeof text - used, "%s%s", 1 == steps ? ", step " : " and ", all[r].step);
        }
    }
    if (steps > 4) {
        used += snprintf(text + used, sizeof text - used, " and more");
    }
    char list[1024] = "";
    size_t listed = 0;
    for (int r = 0; r < size; ++r) {
        bool seen = false;
        for (int q = 0; q < r && !seen; ++q) {
            seen = 0 == strcmp(all[q].node, all[r].node);
        }
        if (!seen && ++nodes <= 16 && listed < sizeof list) {
            listed += snprintf(list + listed, sizeof list - listed, "%s%s", nodes > 1 ? ", " : "", all[r].node);
        }
    }
    snprintf(text + used, sizeof text - used, ", on %d node%s: %s%s\n", nodes, 1 == nodes ? "" : "s", list,
             nodes > 16 ? ", ..." : "");
    fputs(text, stdout);
    fflush(stdout);
}

/* The timed calls (spc/catalogue.def's SPC_CALL_TIME rows): each call's
 * timer and its family's. */
static const struct timed_call {
    int timer, family;
} timed_calls[] = {
#define SPC_CALL_TIME(name, family, function, comm, counted) {OMPI_SPC_##name##_TIME, OMPI_SPC_##family##_TIME},
#include "spc/catalogue.def"
};
enum { NUM_TIMED_CALLS = sizeof timed_calls / sizeof timed_calls[0] };

/* ids sorted by sum[id], the largest first (a handful: insertion). */
static void sort_by_sum(int *ids, int n, const unsigned long long *sum)
{
    for (int i = 1; i < n; ++i) {
        const int id = ids[i];
        int j = i;
        for (; j > 0 && sum[ids[j - 1]] < sum[id]; --j) {
            ids[j] = ids[j - 1];
        }
        ids[j] = id;
    }
}

/* A counter's largest value over ranks and the rank that had it: the pair
 * MPI_MAXLOC over MPI_LONG_INT reduces. */
struct value_and_rank {
    long value;
    int rank;
};

/* One line of the time section: a timer's min, mean and max over ranks and
 * its share of MPI_TIME's sum. */
static size_t print_time_row(char *text, size_t room, const char *indent, int id, const unsigned long long *min,
                             const unsigned long long *sum, const struct value_and_rank *max, int size)
{
    const unsigned long long all = sum[OMPI_SPC_MPI_TIME];
    return snprintf(text, room, "%s%-*s %14llu %16.1f %14ld %8d %6.1f%%\n", indent, 38 - (int)strlen(indent),
                    spc_counter_infos[id].name + strlen(SPC_COUNTER_PREFIX), min[id], (double)sum[id] / size,
                    max[id].value, max[id].rank, 0 == all ? 0.0 : 100.0 * (double)sum[id] / (double)all);
}

/* As mpiP's: time inside MPI by family and, under each, by call, the most
 * first, in microseconds over ranks, with each one's share of the time in
 * MPI of all ranks together; nothing while MPI_TIME did not count. */
static size_t print_time(char *text, size_t room, const unsigned long long *min, const unsigned long long *sum,
                         const struct value_and_rank *max, int size)
{
    if (0 == sum[OMPI_SPC_MPI_TIME]) {
        return 0;
    }
    int families[NUM_TIMED_CALLS], num_families = 0;
    for (int c = 0; c < NUM_TIMED_CALLS; ++c) {
        bool seen = false;
        for (int f = 0; f < num_families && !seen; ++f) {
            seen = families[f] == timed_calls[c].family;
        }
        if (!seen) {
            families[num_families++] = timed_calls[c].family;
        }
    }
    sort_by_sum(families, num_families, sum);
    size_t used = snprintf(text, room, "Time inside MPI, most first (%d ranks; share: of MPI_TIME on all ranks)\n"
                           "%-38s %14s %16s %14s %8s %7s\n", size, "family / call (microseconds)", "min", "mean",
                           "max", "max rank", "share");
    used += print_time_row(text + used, room - used, "", OMPI_SPC_MPI_TIME, min, sum, max, size);
    for (int f = 0; f < num_families && 0 != sum[families[f]]; ++f) {
        used += print_time_row(text + used, room - used, "  ", families[f], min, sum, max, size);
        int calls[NUM_TIMED_CALLS], num_calls = 0;
        for (int c = 0; c < NUM_TIMED_CALLS; ++c) {
            if (timed_calls[c].family == families[f] && 0 != sum[timed_calls[c].timer]) {
                calls[num_calls++] = timed_calls[c].timer;
            }
        }
        sort_by_sum(calls, num_calls, sum);
        for (int c = 0; c < num_calls; ++c) {
            used += print_time_row(text + used, room - used, "    ", calls[c], min, sum, max, size);
        }
    }
    return used;
}

/* Min, mean, max and the rank of the max of every counter, from three
 * reductions to rank 0: no rank gathers every value, and all buffers are on
 * the stack, so no rank can fail to allocate and leave the others waiting. */
static void print_table(const unsigned long long *values, const struct report_group *group)
{
    const int rank = group->rank, size = group->size;
    struct value_and_rank mine[OMPI_SPC_NUM_COUNTERS], max[OMPI_SPC_NUM_COUNTERS];
    unsigned long long min[OMPI_SPC_NUM_COUNTERS], sum[OMPI_SPC_NUM_COUNTERS];
    unsigned long long timed[OMPI_SPC_NUM_COUNTERS], timed_sum[OMPI_SPC_NUM_COUNTERS];
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        mine[id].value = (long)values[id];
        mine[id].rank = group->first_rank + rank;
        timed[id] = spc_timer_intervals(id);
    }
    group_reduce(group, values, min, OMPI_SPC_NUM_COUNTERS, MPI_UNSIGNED_LONG_LONG, MPI_MIN);
    group_reduce(group, values, sum, OMPI_SPC_NUM_COUNTERS, MPI_UNSIGNED_LONG_LONG, MPI_SUM);
    group_reduce(group, mine, max, OMPI_SPC_NUM_COUNTERS, MPI_LONG_INT, MPI_MAXLOC);
    group_reduce(group, timed, timed_sum, OMPI_SPC_NUM_COUNTERS, MPI_UNSIGNED_LONG_LONG, MPI_SUM);
    if (0 != rank) {
        return;
    }
    /* One write to one stream, so no line of it interleaves with another. */
    char text[(OMPI_SPC_NUM_COUNTERS + 6) * 160 + SPC_NUM_TIMERS * 160 + (NUM_TIMED_CALLS + 10) * 110];
    size_t used = 0;
    int zero = 0;
    if (NULL != group->comm) {
        used += snprintf(text + used, sizeof text - used,
                         "Open MPI software-based performance counters, %d ranks "
                         "(counters that were 0 on every rank are left out)\n", size);
    } else {
        used += snprintf(text + used, sizeof text - used,
                         "Open MPI software-based performance counters of rank %d alone (MPI "
                         "sessions, no MPI_COMM_WORLD; counters that were 0 are left out)\n",
                         group->first_rank);
    }
    int uncounted = 0;
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (!ompi_spc_pml_counts(id)) {
            used += 0 == uncounted++ ? snprintf(text + used, sizeof text - used, "(not counted by pml %s: %s",
                                                ompi_spc_pml(), spc_counter_infos[id].name)
                                     : snprintf(text + used, sizeof text - used, ", %s", spc_counter_infos[id].name);
        }
    }
    if (uncounted > 0) {
        used += snprintf(text + used, sizeof text - used, ")\n");
    }
    used += snprintf(text + used, sizeof text - used, "%-36s %-12s %16s %18s %16s %8s\n", "counter",
                     "unit", "min", "mean", "max", "max rank");
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (!ompi_spc_pml_counts(id)) {
            continue;
        }
        if (0 == max[id].value) {
            ++zero;
            continue;
        }
        used += snprintf(text + used, sizeof text - used, "%-36s %-12s %16llu %18.1f %16ld %8d\n",
                         spc_counter_infos[id].name, spc_unit_name(spc_counter_infos[id].unit), min[id],
                         (double)sum[id] / size, max[id].value, max[id].rank);
    }
    used += snprintf(text + used, sizeof text - used,
                     "(%d of %d counters were 0 on every rank)\n", zero, OMPI_SPC_NUM_COUNTERS - uncounted);
    const unsigned sampling = spc_timer_sampling();
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS && sampling > 1; ++id) {
        if (SPC_KIND_TIMER == spc_counter_infos[id].kind && 0 != timed_sum[id]) {
            used += snprintf(text + used, sizeof text - used,
                             "(%s is an estimate: 1 in %u intervals timed, %llu timed on all "
                             "ranks together)\n", spc_counter_infos[id].name, sampling,
                             timed_sum[id]);
        }
    }
    used += print_time(text + used, sizeof text - used, min, sum, max, size);
    fputs(text, stdout);
    fflush(stdout);
}

enum { NUM_BINS = SPC_NUM_HISTOGRAMS * SPC_HISTOGRAM_BINS };

/* Min, mean and max over ranks of each histogram bin, as print_table does
 * for the counters; bins that stayed 0 on every rank are left out. */
static void print_histograms(const unsigned long long *bins, const struct report_group *group)
{
    const int size = group->size;
    unsigned long long min[NUM_BINS], max[NUM_BINS], sum[NUM_BINS];
    group_reduce(group, bins, min, NUM_BINS, MPI_UNSIGNED_LONG_LONG, MPI_MIN);
    group_reduce(group, bins, max, NUM_BINS, MPI_UNSIGNED_LONG_LONG, MPI_MAX);
    group_reduce(group, bins, sum, NUM_BINS, MPI_UNSIGNED_LONG_LONG, MPI_SUM);
    if (0 != group->rank) {
        return;
    }
    char text[(NUM_BINS + 4 * SPC_NUM_HISTOGRAMS) * 100];
    size_t used = 0;
    for (int id = 0; id < SPC_NUM_HISTOGRAMS; ++id) {
        used += snprintf(text + used, sizeof text - used, "%s (messages by size, %d ranks)\n"
                         "  %-24s %12s %14s %12s\n", spc_histogram_infos[id].name, size, "bytes",
                         "min", "mean", "max");
        for (int bin = 0; bin < SPC_HISTOGRAM_BINS; ++bin) {
            const int at = id * SPC_HISTOGRAM_BINS + bin;
            if (0 == max[at]) {
                continue;
            }
            char bytes[32];
            if (0 == bin) {
                snprintf(bytes, sizeof bytes, "0");
            } else {
                snprintf(bytes, sizeof bytes, "%llu..%llu", 1ull << (bin - 1),
                         (bin == 64 ? 0ull : 1ull << bin) - 1);
            }
            used += snprintf(text + used, sizeof text - used, "  %-24s %12llu %14.1f %12llu\n", bytes,
                             min[at], (double)sum[at] / size, max[at]);
        }
    }
    fputs(text, stdout);
    fflush(stdout);
}

/* Every rank's values to rank 0, which writes them as CSV.  The ranks first
 * agree that rank 0 could allocate, so a failed allocation skips the file
 * instead of leaving the others in a gather. */
static void write_csv(const char *path, const unsigned long long *values, int count,
                      const struct rank_identity *ids, const struct report_group *group)
{
    const int rank = group->rank, size = group->size;
    unsigned long long *all = NULL;
    if (0 == rank) {
        all = malloc((size_t)size * (size_t)count * sizeof *all);
    }
    if (!group_all(group, 0 != rank || NULL != all)) {
        if (0 == rank) {
            opal_output(0, "spc: no memory for the values of %d ranks: %s not written", size, path);
        }
        return;
    }
    group_gather(group, values, count, MPI_UNSIGNED_LONG_LONG, all);
    if (0 != rank) {
        return;
    }
    FILE *csv = fopen(path, "w");
    if (NULL == csv) {
        opal_output(0, "spc: cannot write mpi_spc_dump_file %s: %s", path, strerror(errno));
    } else {
        fputs("rank,counter,value,unit,jobid,step,node\n", csv);
        for (int r = 0; r < size; ++r) {
            const unsigned long long *of_rank = all + (size_t)r * (size_t)count;
            char who[160] = ",,";
            if (NULL != ids) {
                snprintf(who, sizeof who, "%s,%s,%s", ids[r].job, ids[r].step, ids[r].node);
            }
            for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
                if (!ompi_spc_pml_counts(id)) {
                    continue;  /* no row rather than a 0 that is not a measurement */
                }
                fprintf(csv, "%d,%s,%llu,%s,%s\n", group->first_rank + r, spc_counter_infos[id].name, of_rank[id],
                        spc_unit_name(spc_counter_infos[id].unit), who);
            }
            for (int at = 0; at < count - OMPI_SPC_NUM_COUNTERS; ++at) {
                char name[64];
                spc_histogram_bin_name(at / SPC_HISTOGRAM_BINS, at % SPC_HISTOGRAM_BINS, name, sizeof name);
                fprintf(csv, "%d,%s,%llu,%s,%s\n", group->first_rank + r, name, of_rank[OMPI_SPC_NUM_COUNTERS + at],
                        spc_unit_name(SPC_UNIT_MESSAGES), who);
            }
        }
        if (0 != fclose(csv)) {
            opal_output(0, "spc: error writing mpi_spc_dump_file %s: %s", path, strerror(errno));
        }
    }
    free(all);
}

/* The dump file's name with infix before its .csv (or infix.csv added). */
static void csv_path_with(const char *dump_file, const char *infix, char *path, size_t size)
{
    size_t length = strlen(dump_file);
    const bool csv = length >= 4 && 0 == strcmp(dump_file + length - 4, ".csv");
    snprintf(path, size, "%.*s%s.csv", (int)(csv ? length - 4 : length), dump_file, infix);
}

/* name as one CSV field: quoted, its quotes doubled */
static void put_field(FILE *csv, const char *name)
{
    fputc('"', csv);
    for (const char *c = name; *c; ++c) {
        if ('"' == *c) {
            fputc('"', csv);
        }
        fputc(*c, csv);
    }
    fputc('"', csv);
}

/* Every rank's num_mine records of record bytes each, gathered at rank 0
 * (a count each, then the records as bytes): there *all holds them by rank
 * and (*counts)[r] says how many are rank r's.  As write_csv, the ranks
 * agree first that rank 0 could allocate: false on every rank if not (rank
 * 0 says that path is not written). */
static bool gather_records(const struct report_group *group, const void *mine, int num_mine, int record,
                           void **all, int **counts, const char *path)
{
    const int rank = group->rank, size = group->size;
    int *bytes = NULL, *displacements = NULL, total = 0;
    *all = NULL;
    *counts = NULL;
    if (0 == rank) {
        *counts = calloc((size_t)size, sizeof **counts);
        bytes = calloc((size_t)size, sizeof *bytes);
        displacements = calloc((size_t)size, sizeof *displacements);
    }
    bool ready = group_all(group, 0 != rank || (NULL != *counts && NULL != bytes && NULL != displacements));
    if (ready) {
        group_gather(group, &num_mine, 1, MPI_INT, *counts);
        if (0 == rank) {
            for (int r = 0; r < size; ++r) {
                bytes[r] = (*counts)[r] * record;
                displacements[r] = total * record;
                total += (*counts)[r];
            }
            *all = malloc((size_t)(total > 0 ? total : 1) * (size_t)record);
        }
        ready = group_all(group, 0 != rank || NULL != *all);
    }
    if (ready && NULL == group->comm) {
        memcpy(*all, mine, (size_t)num_mine * (size_t)record);
    } else if (ready) {
        ompi_communicator_t *world = group->comm;
        world->c_coll->coll_gatherv(mine, num_mine * record, MPI_BYTE, *all, bytes, displacements, MPI_BYTE,
                                    0, world, world->c_coll->coll_gatherv_module);
    }
    if (0 == rank && !ready) {
        opal_output(0, "spc: no memory for the records of %d ranks: %s not written", size, path);
        free(*all);
        free(*counts);
        *all = NULL;
        *counts = NULL;
    }
    free(displacements);
    free(bytes);
    return ready;
}

/* path opened for rank 0 to write, if the records came (ready); NULL
 * elsewhere, or after saying why it cannot. */
static FILE *open_for_rank0(const struct report_group *group, bool ready, const char *path)
{
    FILE *csv = 0 == group->rank && ready ? fopen(path, "w") : NULL;
    if (0 == group->rank && ready && NULL == csv) {
        opal_output(0, "spc: cannot write %s: %s", path, strerror(errno));
    }
    return csv;
}

static void close_written(FILE *csv, const char *path)
{
    if (0 != fclose(csv)) {
        opal_output(0, "spc: error writing %s: %s", path, strerror(errno));
    }
}

/* Every rank's communicator records to rank 0, which writes a row per
 * rank, communicator and counter. */
static void write_comm_csv(const char *path, const struct ompi_spc_comm_record *mine, int num_mine,
                           const struct rank_identity *ids, const struct report_group *group)
{
    struct ompi_spc_comm_record *all;
    int *counts;
    const bool ready = gather_records(group, mine, num_mine, (int)sizeof *mine, (void **)&all, &counts, path);
    FILE *csv = open_for_rank0(group, ready, path);
    if (NULL != csv) {
        fputs("rank,comm_id,comm_name,comm_ranks,counter,value,unit,jobid,step,node\n", csv);
        for (int r = 0, at = 0; r < group->size; at += counts[r++]) {
            for (int c = at; c < at + counts[r]; ++c) {
                for (int id = 0; id < SPC_NUM_COMM_COUNTERS; ++id) {
                    /* as in write_csv: what the PML does not count has no row */
                    if (!ompi_spc_pml_counts(spc_comm_counter_infos[id].counter)) {
                        continue;
                    }
                    const spc_counter_info *counter = &spc_counter_infos[spc_comm_counter_infos[id].counter];
                    fprintf(csv, "%d,%u,", group->first_rank + r, (unsigned)all[c].id);
                    put_field(csv, all[c].name);
                    fprintf(csv, ",%d,%s,%llu,%s,%s,%s,%s\n", (int)all[c].ranks, counter->name,
                            all[c].value[id], spc_unit_name(counter->unit), NULL != ids ? ids[r].job : "",
                            NULL != ids ? ids[r].step : "", NULL != ids ? ids[r].node : "");
                }
            }
        }
        close_written(csv, path);
    }
    free(all);
    free(counts);
}

/* One cell of this process's matrix rows: its traffic with peer (a rank of
 * the job) of one kind, user, internal or one-sided, the four per-peer
 * arrays of that kind in the catalogue's order. */
enum { MATRIX_KINDS = 3, MATRIX_VALUES = SPC_NUM_PEER_COUNTERS / MATRIX_KINDS };
struct matrix_cell {
    int32_t peer, kind;  /* an index of matrix_kind_names */
    uint64_t value[MATRIX_VALUES];
};
static const char *const matrix_kind_names[MATRIX_KINDS] = SPC_MATRIX_KIND_NAMES;

/* The job's communication matrix, one file: rank 0 gathers every rank's
 * cells with traffic and writes a row per cell, by rank and peer, in the
 * job's ranks (MPI_COMM_WORLD's).  The values were taken before the
 * report's own traffic (ompi_spc_fini records every communicator first). */
static void write_matrix_csv(const char *path, const struct ompi_spc_matrix *matrix,
                             const struct report_group *group)
{
    _Static_assert(SPC_PEER_INTERNAL_OF(0) == MATRIX_VALUES && SPC_PEER_ONE_SIDED_OF(0) == 2 * MATRIX_VALUES,
                   "the user's arrays, then the internal ones, then the one-sided ones");
    const int ranks = NULL != matrix->value ? matrix->ranks : 0;
    struct matrix_cell *mine = calloc((size_t)(ranks > 0 ? ranks : 1) * MATRIX_KINDS, sizeof *mine);
    int num_mine = 0;
    for (int peer = 0; NULL != mine && peer < ranks; ++peer) {
        for (int kind = 0; kind < MATRIX_KINDS; ++kind) {
            struct matrix_cell *cell = &mine[num_mine];
            uint64_t any = 0;
            for (int v = 0; v < MATRIX_VALUES; ++v) {
                cell->value[v] = matrix->value[(size_t)(kind * MATRIX_VALUES + v) * (size_t)ranks + (size_t)peer];
                any |= cell->value[v];
            }
            if (0 != any) {
                cell->peer = peer;
                cell->kind = kind;
                ++num_mine;
            }
        }
    }
    if (NULL == mine) {
        opal_output(0, "spc: no memory for rank %d's matrix rows: %s leaves them out", group->rank, path);
    }
    struct matrix_cell *all;
    int *counts;
    const bool ready = gather_records(group, mine, num_mine, (int)sizeof *mine, (void **)&all, &counts, path);
    FILE *csv = open_for_rank0(group, ready, path);
    if (NULL != csv) {
        fputs("rank,peer,kind", csv);
        for (int v = 0; v < MATRIX_VALUES; ++v) {
            fputc(',', csv);
            spc_matrix_csv_column(csv, spc_peer_counter_infos[v].name);
        }
        fputc('\n', csv);
        for (int r = 0, at = 0; r < group->size; at += counts[r++]) {
            for (int c = at; c < at + counts[r]; ++c) {
                fprintf(csv, "%d,%d,%s", group->first_rank + r, (int)all[c].peer, matrix_kind_names[all[c].kind]);
                for (int v = 0; v < MATRIX_VALUES; ++v) {
                    fprintf(csv, ",%llu", (unsigned long long)all[c].value[v]);
                }
                fputc('\n', csv);
            }
        }
        close_written(csv, path);
        opal_output(0, "spc: the job's communication matrix, by rank and peer: %s", path);
    }
    if (matrix->other_jobs > 0) {
        opal_output(0, "spc: rank %d: %llu messages with processes of other jobs are not in %s", group->rank,
                    (unsigned long long)matrix->other_jobs, path);
    }
    free(all);
    free(counts);
    free(mine);
}

void ompi_spc_report(bool histograms, const struct ompi_spc_comm_record *comms, int num_comms,
                     const struct ompi_spc_matrix *matrix)
{
    /* the counters, then (if they counted) the histograms' bins */
    unsigned long long values[OMPI_SPC_NUM_COUNTERS + NUM_BINS];
    uint64_t snapshot[OMPI_SPC_NUM_COUNTERS], bins[SPC_HISTOGRAM_BINS];
    /* before the report's own traffic moves the MPI byte counters */
    spc_read_all(snapshot, OMPI_SPC_NUM_COUNTERS);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        values[id] = snapshot[id];
    }
    for (int id = 0; id < SPC_NUM_HISTOGRAMS; ++id) {
        spc_histogram_read(NULL, id, bins);
        for (int bin = 0; bin < SPC_HISTOGRAM_BINS; ++bin) {
            values[OMPI_SPC_NUM_COUNTERS + id * SPC_HISTOGRAM_BINS + bin] = bins[bin];
        }
    }
    const struct report_group group = report_group();
    /* Every rank has taken its values (and its communicators' records,
     * ompi_spc_fini) before any rank's report sends: else a message of a
     * rank ahead could arrive unexpected at one behind and be counted
     * (UNEXPECTED, its communicator's UNEXPECTED_IN_QUEUE). */
    if (NULL != group.comm && !OMPI_SPC_FENCE()) {
        opal_output(0, "spc: the fence before the finalize report failed; its own messages may be "
                    "counted");
    }
    struct rank_identity *ids = gather_identities(&group);
    print_table(values, &group);
    if (0 == group.rank) {
        print_identity(ids, group.size);
    }
    if (histograms) {
        print_histograms(values + OMPI_SPC_NUM_COUNTERS, &group);
    }
    if (NULL != ompi_mpi_spc_dump_file && '\0' != ompi_mpi_spc_dump_file[0]) {
        /* without a world, each process its own file: foo.csv -> foo.rank3.csv */
        char own[4096], path[4096];
        const char *dump_file = ompi_mpi_spc_dump_file;
        if (NULL == group.comm) {
            char infix[32];
            snprintf(infix, sizeof infix, ".rank%d", group.first_rank);
            csv_path_with(ompi_mpi_spc_dump_file, infix, own, sizeof own);
            dump_file = own;
        }
        write_csv(dump_file, values, OMPI_SPC_NUM_COUNTERS + (histograms ? NUM_BINS : 0), ids, &group);
        if (histograms) {  /* "traffic": every communicator was recorded */
            csv_path_with(dump_file, ".comms", path, sizeof path);
            write_comm_csv(path, comms, num_comms, ids, &group);
            if (0 == group.rank) {
                opal_output(0, "spc: every communicator's counters, per rank: %s", path);
            }
            if (NULL != group.comm) {  /* one job, one matrix */
                csv_path_with(dump_file, ".matrix", path, sizeof path);
                write_matrix_csv(path, matrix, &group);
            } else if (NULL != matrix->value) {
                opal_output(0, "spc: rank %d: no MPI_COMM_WORLD (MPI sessions) to gather the job's "
                            "communication matrix over: none is written", group.first_rank);
            }
        }
    }
    free(ids);
}
