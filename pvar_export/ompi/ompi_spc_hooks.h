/*
 * Open MPI's hooks, listed with their consumers in ompi_spc_hooks.def: ids
 * for OMPI_SPC_HOOK sites, and the tests a hook's code makes of its
 * consumers (each a flag load: the code runs only while one is on).
 */
#ifndef OMPI_SPC_HOOKS_H
#define OMPI_SPC_HOOKS_H

#include "ompi/runtime/ompi_spc.h"
#include "ompi/runtime/ompi_spc_events.h"

enum ompi_spc_hook_id {
#define OMPI_SPC_HOOK_POINT(name, where) OMPI_SPC_HOOK_##name,
#include "ompi/runtime/ompi_spc_hooks.def"
    OMPI_SPC_NUM_HOOKS
};

/* Consumers that are switches, as ompi_spc_hooks.def names them. */
#define OMPI_SPC_USES_COMM SPC_SWITCH_SITE_ID(SPC_SWITCH_COMM_COUNTERS)
#define OMPI_SPC_USES_EVENT(id) SPC_SWITCH_SITE_ID(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_EVENT_##id)
#define OMPI_SPC_USES_SAFE_POINT SPC_SWITCH_SITE_ID(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_NUM_EVENTS)

/* code behind hook OMPI_SPC_HOOK_<name>'s one site, compiled in each mode
 * (spc.h's spc_hook_mode): it hands SPC_HOOK_MODE to the functions that do
 * the work. */
#define OMPI_SPC_HOOK(name, code) SPC_HOOK(OMPI_SPC_HOOK_##name, code)
/* code instead of plain, a statement it does the work of, while the hook is
 * on (SPC_HOOK_AROUND): the hook that times plain. */
#define OMPI_SPC_HOOK_AROUND(name, code, plain) SPC_HOOK_AROUND(OMPI_SPC_HOOK_##name, code, plain)

/* Inside a hook's code in mode: whether one of hook NAME's consumers that
 * is a switch is on (one test for them all), and whether one of them is. */
#define OMPI_SPC_HOOK_SWITCHES_ON(mode, name) SPC_HOOK_SWITCHES_ON(mode, OMPI_SPC_HOOK_##name)
#define OMPI_SPC_SWITCH_ON_(key) (0 != __atomic_load_n(&spc_flags_.switches[key], __ATOMIC_RELAXED))
#define OMPI_SPC_COMM_ON() OMPI_SPC_SWITCH_ON_(SPC_SWITCH_COMM_COUNTERS)
#define OMPI_SPC_EVENT_ON(id) OMPI_SPC_SWITCH_ON_(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_EVENT_##id)
#define OMPI_SPC_SAFE_POINT_ON() OMPI_SPC_SWITCH_ON_(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_NUM_EVENTS)

/* Gives every hook its consumers (from a constructor of libmpi's, before
 * anything can turn a consumer on). */
void ompi_spc_hooks_define(void);

/* Per timed MPI function (spc/catalogue.def's SPC_CALL_TIME rows): its
 * family's timer, its call counter and the communicator counter of its
 * time (-1: none). */
#define OMPI_SPC_CALL_ID_COUNTED_(name) OMPI_SPC_##name
#define OMPI_SPC_CALL_ID_NOT_COUNTED_(name) -1
#define OMPI_SPC_COMM_TIME_ID_COMM_(name) SPC_COMM_##name##_TIME
#define OMPI_SPC_COMM_TIME_ID_NO_COMM_(name) -1
enum ompi_spc_timed_call {
#define SPC_CALL_TIME(name, family, function, comm, counted)          \
    OMPI_SPC_FAMILY_OF_##name = OMPI_SPC_##family##_TIME,              \
    OMPI_SPC_CALL_OF_##name = OMPI_SPC_CALL_ID_##counted##_(name),     \
    OMPI_SPC_COMM_TIME_OF_##name = OMPI_SPC_COMM_TIME_ID_##comm##_(name),
#include "spc/catalogue.def"
};

/* A timed MPI function, function (params its parameters, args their
 * names), whose body is body (always inline): hook MPI_<name>'s code in
 * each of its modes (spc.h's spc_hook_mode), each a function of its own
 * around body, which counts the call (on comm too, a communicator or NULL,
 * with comm's counter comm_call or -1), times it and holds its safe points,
 * at its entry and its return (the binding defines OMPI_SPC_TIMED_BINDING:
 * bindings.h leaves its body none).  Functions of their own, so that no
 * register of body's is the hook's and the code calls no copy of the body.
 * Where sites are patched, the hook's site is function's entry
 * (SPC_HOOK_ENTRY): function is the site alone, which jumps to body_plain
 * (body as a function) while off and to the mode's copy while on, as if
 * either were called in function's place.  Elsewhere the site is in
 * function's body, which tail-calls the copy (only the one with tests,
 * there: the others are unused). */
#ifdef SPC_HOOK_ENTRY
#define OMPI_SPC_MPI_TIMED_CODE(name, function, body, comm, comm_call, params, args)                       \
    OMPI_SPC_MPI_TIMED_COPIES_(name, body, comm, comm_call, params, args, used)                              \
    static __attribute__((noinline, used)) int body##_plain params { return body args; }                    \
    SPC_HOOK_ENTRY_TEST(OMPI_SPC_HOOK_MPI_##name, body, int, params, args)                                  \
    SPC_HOOK_ENTRY_FUNCTION int function params;
/* The binding: its site, whose targets are hook MPI_<name>'s. */
#define OMPI_SPC_MPI_TIMED(name, body, args) SPC_HOOK_ENTRY_SITE(body)
#else
#define OMPI_SPC_MPI_TIMED_CODE(name, function, body, comm, comm_call, params, args)                       \
    OMPI_SPC_MPI_TIMED_COPIES_(name, body, comm, comm_call, params, args, unused)
/* The binding: body behind hook MPI_<name>'s one site, which while on
 * jumps (a tail call) to the hook's code in the site's mode. */
#define OMPI_SPC_MPI_TIMED(name, body, args)                                                               \
    do {                                                                                                   \
        OMPI_SPC_HOOK_AROUND(MPI_##name, return OMPI_SPC_MPI_TIMED_IN_(body, SPC_HOOK_MODE) args,          \
                             return body args);                                                            \
        __builtin_unreachable();                                                                           \
    } while (0)
#define OMPI_SPC_MPI_TIMED_IN_(body, mode)                                                                 \
    ((mode) == SPC_HOOK_TESTS ? body##_tests : (mode) == SPC_HOOK_COUNTERS ? body##_counters               \
     : (mode) == SPC_HOOK_ALL_COUNTERS ? body##_all : (mode) == SPC_HOOK_ALL_SAMPLED ? body##_sampled      \
     : body##_timers)
#endif
#define OMPI_SPC_MPI_TIMED_COPIES_(name, body, comm, comm_call, params, args, kept)                        \
    SPC_HOOK_ENTRY_COPIES(OMPI_SPC_MPI_TIMED_COPY_, name, body, comm, comm_call, params, args, kept)
/* A call not timed runs the body on a path of its own, with nothing kept
 * across it but the return code; a timed one reads the clock on its own. */
#define OMPI_SPC_MPI_TIMED_COPY_(suffix, mode, name, body, comm, comm_call, params, args, kept)            \
    static __attribute__((noinline, kept)) int body##_##suffix params                                      \
    {                                                                                                      \
        uint64_t *spc_block_ = spc_hook_block_start_(mode);                                                \
        if (__builtin_expect(!ompi_spc_mpi_enter(mode, OMPI_SPC_HOOK_MPI_##name, &spc_block_, (comm),      \
                                                 OMPI_SPC_CALL_OF_##name, (comm_call), OMPI_SPC_##name##_TIME, \
                                                 OMPI_SPC_FAMILY_OF_##name),                               \
                             (mode) != SPC_HOOK_ALL_COUNTERS)) {                                           \
            const int spc_rc_ = body args;                                                                 \
            spc_call_leave_untimed_();                                                                     \
            ompi_spc_mpi_left(mode, OMPI_SPC_HOOK_MPI_##name, 0, (comm), OMPI_SPC_COMM_TIME_OF_##name);     \
            return spc_rc_;                                                                                \
        }                                                                                                  \
        const uint64_t spc_start_ = SPC_TIMER_CLOCK_();                                                    \
        const int spc_rc_ = body args;                                                                     \
        ompi_spc_mpi_left(mode, OMPI_SPC_HOOK_MPI_##name,                                                  \
                          spc_call_leave_timed_(mode, &spc_block_, spc_start_, OMPI_SPC_##name##_TIME,     \
                                                OMPI_SPC_FAMILY_OF_##name),                                \
                          (comm), OMPI_SPC_COMM_TIME_OF_##name);                                           \
        return spc_rc_;                                                                                    \
    }

/* coll tuned runs collective COLL (a SPC_TUNED row of spc/catalogue.def)
 * with its algorithm number algorithm: behind hook TUNED_<COLL>, the
 * algorithm's counter and bytes (evaluated only while the hook is on) on
 * the collective's bytes counter.  Algorithm 0 (do_this's "ignore", which
 * asks the fixed decision, which comes back with its choice) and numbers
 * outside the collective's (a rules file's) count nothing. */
#define OMPI_SPC_TUNED_RAN(coll, algorithm, bytes)                                                     \
    OMPI_SPC_HOOK(TUNED_##coll, ompi_spc_tuned_ran(SPC_HOOK_MODE, (algorithm), SPC_TUNED_ALGORITHMS_OF_##coll, \
                                                   SPC_TUNED_##coll##_ALGORITHM_1, SPC_TUNED_BYTES_OF_##coll, \
                                                   (bytes)))

/* A collective of kind KIND (ONE_TO_ALL, ALL_TO_ONE or ALL_TO_ALL, the
 * catalogue's SPC_COLL_KIND rows) that its binding hands to comm's coll
 * component: behind hook COLLECTIVE, the call and its bytes (evaluated only
 * while the hook is on) on the kind's counters and on comm's.  The rooted
 * kinds count at the root only (root: the call's argument). */
#define OMPI_SPC_COLLECTIVE(kind, comm, bytes)                                                         \
    OMPI_SPC_HOOK(COLLECTIVE, ompi_spc_collective(SPC_HOOK_MODE, (comm), OMPI_SPC_COLL_ID_(kind), (bytes)))
#define OMPI_SPC_COLLECTIVE_AT_ROOT(kind, comm, root, bytes)                                           \
    OMPI_SPC_HOOK(COLLECTIVE, if (ompi_spc_coll_is_root((comm), (root)))                                \
                                  ompi_spc_collective(SPC_HOOK_MODE, (comm), OMPI_SPC_COLL_ID_(kind), (bytes)))
#define OMPI_SPC_COLL_ID_(kind) \
    OMPI_SPC_COLL_##kind, OMPI_SPC_COLL_##kind##_BYTES, SPC_COMM_COLL_##kind, SPC_COMM_COLL_##kind##_BYTES

#if SPC_ENABLE
/* A vector collective's counts, summed: its bytes in datatype units. */
static inline uint64_t ompi_spc_sum_counts(const int *counts, int n)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; ++i) {
        sum += (uint64_t)counts[i];
    }
    return sum;
}

static inline __attribute__((always_inline)) void
ompi_spc_tuned_ran(spc_hook_mode mode, int algorithm, int algorithms, int first, int bytes_counter, uint64_t bytes)
{
    if (algorithm < 1 || algorithm > algorithms) {
        return;
    }
    uint64_t *block = spc_hook_block_start_(mode);
    spc_hook_record_(mode, &block, first + algorithm - 1, 1);
    if (bytes_counter >= 0) {
        spc_hook_record_(mode, &block, bytes_counter, bytes);
    }
}

/* A timed MPI function's entry in mode (its arguments are constants but
 * comm): its call counter (call, or -1), comm's counter comm_call (if comm
 * is a communicator: the call's checks come after) and the events' safe
 * point, then whether the call is timed (spc_call_enter_). */
static inline __attribute__((always_inline)) int
ompi_spc_mpi_enter(spc_hook_mode mode, int hook, uint64_t **block, ompi_communicator_t *comm, int call,
                   int comm_call, int time, int family)
{
    if (call >= 0) {
        spc_hook_record_(mode, block, call, 1);
    }
    if (SPC_HOOK_SWITCHES_ON(mode, hook)) {
        if (comm_call >= 0 && OMPI_SPC_COMM_ON() && !ompi_comm_invalid(comm)) {
            ompi_spc_comm_record(comm, comm_call, 1);
        }
        if (OMPI_SPC_SAFE_POINT_ON()) {
            spc_ev_safe_point();
        }
    }
    return spc_call_enter_(mode, block, time, family);
}

/* After its return (spc_call_leave_*): the ticks it took (0: not timed) on
 * comm's counter comm_time (-1: none) while counters bound to
 * communicators are on, and the events' safe point. */
static inline __attribute__((always_inline)) void
ompi_spc_mpi_left(spc_hook_mode mode, int hook, uint64_t ticks, ompi_communicator_t *comm, int comm_time)
{
    if (SPC_HOOK_SWITCHES_ON(mode, hook)) {
        if (comm_time >= 0 && ticks != 0 && OMPI_SPC_COMM_ON() && !ompi_comm_invalid(comm)) {
            ompi_spc_comm_record(comm, comm_time, ticks);
        }
        if (OMPI_SPC_SAFE_POINT_ON()) {
            spc_ev_safe_point();
        }
    }
}

/* ---- Collectives by kind (OMPI_SPC_COLLECTIVE) ---- */

/* The ranks a collective's data goes to from this one: the others of an
 * intracommunicator, the remote group of an intercommunicator. */
static inline int ompi_spc_coll_peers(ompi_communicator_t *comm)
{
    return OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm) - 1;
}

static inline bool ompi_spc_coll_is_root(ompi_communicator_t *comm, int root)
{
    return OMPI_COMM_IS_INTER(comm) ? MPI_ROOT == root : ompi_comm_rank(comm) == root;
}

/* A block to every peer: sendcount of sendtype, or recvcount of recvtype
 * when the call is in place (its send arguments are then ignored). */
static inline uint64_t ompi_spc_coll_blocks(ompi_communicator_t *comm, const void *sendbuf, int sendcount,
                                            const ompi_datatype_t *sendtype, int recvcount,
                                            const ompi_datatype_t *recvtype)
{
    const size_t block = MPI_IN_PLACE == sendbuf ? ompi_spc_data_bytes(recvcount, recvtype)
                                                 : ompi_spc_data_bytes(sendcount, sendtype);
    return (uint64_t)block * (uint64_t)ompi_spc_coll_peers(comm);
}

/* The bytes of counts, one per rank of comm (of its remote group for an
 * intercommunicator), but rank self's on an intracommunicator (-1: none),
 * in one datatype (its size taken once) or, if types is not NULL, each in
 * its own. */
static inline uint64_t ompi_spc_coll_counts(ompi_communicator_t *comm, const int *counts, int self,
                                            const ompi_datatype_t *type, ompi_datatype_t *const *types)
{
    const bool inter = OMPI_COMM_IS_INTER(comm);
    const int n = inter ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
    uint64_t bytes = 0;
    for (int i = 0; i < n; ++i) {
        if (inter || i != self) {
            bytes += NULL != types ? ompi_spc_data_bytes(counts[i], types[i]) : (uint64_t)counts[i];
        }
    }
    return NULL != types ? bytes : ompi_spc_data_bytes(bytes, type);
}

static inline __attribute__((always_inline)) void
ompi_spc_collective(spc_hook_mode mode, ompi_communicator_t *comm, int calls, int bytes_counter, int comm_calls,
                    int comm_bytes, uint64_t bytes)
{
    uint64_t *block = spc_hook_block_start_(mode);
    spc_hook_record_(mode, &block, calls, 1);
    spc_hook_record_(mode, &block, bytes_counter, bytes);
    if (SPC_HOOK_SWITCHES_ON(mode, OMPI_SPC_HOOK_COLLECTIVE) && OMPI_SPC_COMM_ON()) {
        ompi_spc_comm_record_call(comm, comm_calls, comm_bytes, bytes);
    }
}
#endif

#endif
