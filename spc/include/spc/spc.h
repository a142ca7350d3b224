/*
 * The C interface of the SPC core: the catalogue's ids, the update macros
 * Open MPI's call sites use, and the functions readers call.
 *
 *   SPC_RECORD(id, n)                 add n to a COUNTER, AGGREGATE or TIMER
 *   SPC_USER_OR_MPI(tag, n, u, m)     add n to u if tag >= 0, else to m
 *   SPC_TIMER_START(id, &timer)       start timing into a TIMER counter
 *   SPC_TIMER_STOP(&timer)            stop, adding the elapsed ticks to it
 *   SPC_TIMER_STOP_COMM(&timer, ...)  the same, and to a communicator's counter
 *   SPC_LEVEL_ADD(id, delta)          move a LEVEL up or down
 *   SPC_SWITCHED(key, code)           run code while switch key is on
 *   SPC_HOOK(hook, code)              run code while a consumer of hook is on
 *   SPC_HOOK_AROUND(hook, code, plain)  run code instead of plain while one is
 * Compiled out (SPC_ENABLE 0) each is ((void)0) and evaluates nothing
 * (SPC_HOOK_AROUND leaves plain);
 * compiled in, one 5-byte site: a no-op while the counter is off (see
 * "Patched sites"), or a flag test; the update is inline code out of line,
 * with no call, no lock, no division.  Counter ids must be constants, and
 * the other arguments are evaluated only while the counter is on (a
 * timer's id may vary: see SPC_TIMER_START).
 */
#ifndef SPC_SPC_H
#define SPC_SPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "spc/names.h"
#include "spc/spc_config.h"
#if defined(__x86_64__) || defined(__i386__)
#include "spc/x86.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The update code is inline even where a hook's code uses it several
 * times: a call would keep the site's values alive across it, and cost a
 * call and a return on the taken path. */
#define SPC_INLINE_ static inline __attribute__((always_inline))

/* ---- The catalogue ------------------------------------------------------ */

typedef enum spc_counter_id {
#define SPC_CALL(name, category, function) OMPI_SPC_##name,
#define SPC_STAT(name, kind, unit, category, verbosity, description) OMPI_SPC_##name,
#define SPC_WATERMARK(name, level, category, verbosity, description) OMPI_SPC_##name,
#include "spc/catalogue.def"
    OMPI_SPC_NUM_COUNTERS
} spc_counter_id;

typedef enum spc_category_id {
#define SPC_CATEGORY(id, parent, description) SPC_CATEGORY_##id,
#include "spc/catalogue.def"
    SPC_NUM_CATEGORIES
} spc_category_id;

/* The catalogue's SPC_TUNED rows, per collective COLL: its algorithms,
 * the counter of its algorithm k, SPC_TUNED_<COLL>_ALGORITHM_1 + k - 1,
 * and its bytes counter (-1: none). */
#define SPC_TUNED_BYTES_ID_(coll) OMPI_SPC_TUNED_##coll##_BYTES
#define SPC_TUNED_NO_BYTES_ID_(coll) -1
enum spc_tuned_collective {
#define SPC_TUNED(coll, function, param, algorithms, bytes, what) \
    SPC_TUNED_ALGORITHMS_OF_##coll = algorithms, SPC_TUNED_BYTES_OF_##coll = SPC_TUNED_##bytes##_ID_(coll),
#define SPC_TUNED_ALGORITHM(coll, name, function, param, number, algorithm) \
    SPC_TUNED_##coll##_ALGORITHM_##number = OMPI_SPC_TUNED_##coll##_##name,
#include "spc/catalogue.def"
};
#undef SPC_TUNED_BYTES_ID_
#undef SPC_TUNED_NO_BYTES_ID_

enum {
    SPC_NUM_WATERMARKS = 0
#define SPC_WATERMARK(name, level, category, verbosity, description) +1
#include "spc/catalogue.def"
};

typedef enum spc_kind {
    SPC_KIND_COUNTER,       /* number of events */
    SPC_KIND_AGGREGATE,     /* sum of amounts, e.g. bytes */
    SPC_KIND_TIMER,         /* cycle ticks, read in the unit of the catalogue */
    SPC_KIND_LEVEL,         /* current value, goes up and down */
    SPC_KIND_HIGHWATERMARK  /* highest value a LEVEL reached */
} spc_kind;

typedef enum spc_unit {
    SPC_UNIT_CALLS,
    SPC_UNIT_BYTES,
    SPC_UNIT_MESSAGES,
    SPC_UNIT_MICROSECONDS
} spc_unit;

/* MPI_T's nine verbosity levels, in MPI_T's order. */
typedef enum spc_verbosity {
    SPC_VERBOSITY_USER_BASIC,
    SPC_VERBOSITY_USER_DETAIL,
    SPC_VERBOSITY_USER_ALL,
    SPC_VERBOSITY_TUNER_BASIC,
    SPC_VERBOSITY_TUNER_DETAIL,
    SPC_VERBOSITY_TUNER_ALL,
    SPC_VERBOSITY_MPIDEV_BASIC,
    SPC_VERBOSITY_MPIDEV_DETAIL,
    SPC_VERBOSITY_MPIDEV_ALL
} spc_verbosity;

typedef struct spc_counter_info {
    const char *name;        /* "OMPI_SPC_SEND", as upstream spells it */
    const char *description;
    spc_kind kind;
    spc_unit unit;
    spc_category_id category; /* always a leaf */
    spc_verbosity verbosity;
    int level;               /* HIGHWATERMARK: the LEVEL it watches; else -1 */
} spc_counter_info;

typedef struct spc_category_info {
    const char *name;        /* "spc" (the root, SPC_CATEGORY_SPC), "spc_matching", ... */
    const char *description;
    spc_category_id parent;  /* the root is its own parent */
} spc_category_info;

extern const spc_counter_info spc_counter_infos[OMPI_SPC_NUM_COUNTERS];
extern const spc_category_info spc_category_infos[SPC_NUM_CATEGORIES];

/* "calls", "bytes", "messages", "microseconds". */
const char *spc_unit_name(spc_unit unit);

/* Counter id of a name, with or without the OMPI_SPC_ prefix, any case; -1 if none. */
int spc_counter_find(const char *name);
/* Category id of a name ("spc_matching" or "matching", any case); -1 if none. */
int spc_category_find(const char *name);

/* ---- Set-up, enable control, reads ------------------------------------- */

enum {
    SPC_SUCCESS = 0,
    SPC_ERR_BAD_ID = -1,       /* not a counter id, or not of the kind asked for */
    SPC_ERR_NOT_ENABLED = -2,  /* disable without a matching enable */
    SPC_ERR_NO_SLOT = -3       /* all per-reader watermark slots are taken */
};

/* Starts the cycle timer's calibration (one reading, no wait); the first
 * conversion (spc_ticks_per_second, a timer's read) ends it, waiting for
 * what is left of 5 ms since.  Without it the first conversion takes 5 ms. */
void spc_init(void);
double spc_ticks_per_second(void);

/* The cycle counter the timers read (RDTSC on x86, else CLOCK_MONOTONIC in
 * nanoseconds), spc_ticks_per_second() of them per second.  Always inline:
 * left to the compiler, 5.0.7's eager match called it out of line once its
 * hook's code grew (8 instructions a timed message more). */
SPC_INLINE_ uint64_t spc_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return spc_rdtsc_();
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
#endif
}


/* Reference-counted: a counter counts while at least one enable is not yet
 * matched by a disable, so independent readers do not stop each other. */
int spc_counter_enable(int id);
int spc_counter_disable(int id);
int spc_counter_is_enabled(int id);

/* An attach list (mpi_spc_attach), parsed: "all", counter names (with or
 * without OMPI_SPC_) and category names, separated by commas, in any case. */
typedef struct spc_attach_list {
    unsigned char counters[OMPI_SPC_NUM_COUNTERS];  /* 1: chosen, by its name, a category or "all" */
    unsigned char categories[SPC_NUM_CATEGORIES];   /* 1: named by its own name ("all" names none) */
} spc_attach_list;
/* Parses text into list (may be NULL); enables nothing.  Returns the number
 * of names it did not know; when that is not 0 it writes one message naming
 * them, the closest valid names and the valid choices into message (if
 * message_size > 0). */
int spc_attach_parse(const char *text, spc_attach_list *list, char *message, size_t message_size);
/* The same, and enables each counter chosen, once, whatever else the text
 * holds; list (may be NULL) says which, for the caller to disable. */
int spc_attach(const char *text, spc_attach_list *list, char *message, size_t message_size);
/* What an attach list may hold, with every category and counter name: the
 * help text of mpi_spc_attach. */
const char *spc_attach_help(void);

/* Value in the counter's native unit (timer ticks), summed over threads. */
uint64_t spc_read_raw(int id);
/* A native value converted to the catalogue's unit (timers: microseconds). */
uint64_t spc_convert(int id, uint64_t raw);
uint64_t spc_read(int id);
/* Reads min(count, OMPI_SPC_NUM_COUNTERS) counters, converted, into values;
 * returns how many it wrote. */
size_t spc_read_all(uint64_t *values, size_t count);

/* Per-reader watermarks.  The process-wide watermark (what spc_read returns
 * for a HIGHWATERMARK counter) is never reset; a reader that needs its own
 * "highest since I started or reset" takes a slot.  5 keep a counter's
 * shared line at 64 bytes, and the live file holds a line per counter. */
#define SPC_WATERMARK_SLOTS 5
int spc_watermark_slot_acquire(int watermark_id);   /* slot >= 1, or an error */
int spc_watermark_slot_reset(int watermark_id, int slot);
int spc_watermark_slot_release(int watermark_id, int slot);
uint64_t spc_watermark_slot_read(int watermark_id, int slot);

/* ---- Timer sampling ------------------------------------------------------ */

/* Times one interval in n per thread (1, the default: every interval) and
 * reports the timers scaled by n, so a timer costs two cycle-counter reads
 * only every n-th time.  The gaps between timed intervals are random around
 * n, so a periodic workload cannot alias with them, and the same in every
 * run (each thread's come from its place among the threads that counted
 * before it).  Returns SPC_ERR_BAD_ID
 * for n = 0.  Set it before timers count: values are scaled when read, and
 * a thread other than the caller takes a new n after its next timed interval. */
int spc_timer_sampling_set(unsigned n);
unsigned spc_timer_sampling(void);
/* How many intervals timer id has timed while sampling was above 1 (with
 * sampling 1 every interval is timed and none is counted here). */
uint64_t spc_timer_intervals(int id);

/* ---- Patched sites ---------------------------------------------------------- */

/* Each update site is one 5-byte instruction: compiled as a jump to the
 * update code (which tests the counter's flag, today's "flag kind"), and
 * patched at load time into a 5-byte no-op while its counter is off and back
 * into the jump while it is on (sites.cc says why that is safe).  Each shared
 * object or program lists its sites in its own section; entries are relative,
 * so the table needs no relocation. */
struct spc_site {
    int32_t at;      /* the site's first byte, relative to this field */
    int32_t target;  /* its update code's flag test (the flag kind), relative to this field */
    int32_t on;      /* its update code past that test (a patched site that is on) */
    int32_t counters; /* a hook's code for no switch on, each counter tested (else == on) */
    int32_t all;     /* a hook's code for all its counters on and no switch (else == on) */
    int32_t all_sampled; /* the same with timers sampled (else == all) */
    int32_t timers_sampled; /* a hook's code for sampled timers alone on, no switch (else == counters) */
    int32_t id, id2; /* on while either counter is on (id2 == id for one) */
    int32_t off;     /* 0: off, the site is a 5-byte no-op; else, for a site at a function's
                      * entry (SPC_HOOK_ENTRY), the code it jumps to while off, relative to
                      * this field */
};
#define SPC_ANY_TIMER (-1)  /* a site's id: on while any TIMER counter is */

/* Switched sites (SPC_SWITCHED) are patched like counter sites, keyed by a
 * switch instead of a counter: a 5-byte no-op while the switch is off, the
 * jump to their code while it is on.  An exporter whose code must be free
 * while nobody asks for it (communicator counters, MPI_T events) turns its
 * switch on for as long as a reader wants it; a site's id is
 * SPC_SWITCH_SITE_ID(key), below SPC_ANY_TIMER. */
enum spc_switch_key {
    SPC_SWITCH_COMM_COUNTERS = 0,  /* counters bound to communicators */
    SPC_SWITCH_FIRST_EVENT = 1,    /* MPI_T event e is SPC_SWITCH_FIRST_EVENT + e */
    SPC_NUM_SWITCHES = 64
};
#define SPC_SWITCH_SITE_ID(key) (-2 - (key))
/* Reference counted like spc_counter_enable: a switch is on while at least
 * one spc_switch_on is not matched by a spc_switch_off.  SPC_ERR_BAD_ID for
 * a key outside 0..SPC_NUM_SWITCHES-1, SPC_ERR_NOT_ENABLED for an off
 * without its on. */
int spc_switch_on(int key);
int spc_switch_off(int key);
int spc_switch_is_on(int key);

/* ---- Hooks: one site per code point ------------------------------------- */

/* A hook is one code point that several consumers share (counters, a
 * communicator's counters, MPI_T events, the events' safe point): one site,
 * on while any of its consumers is on, whose code does the work of every
 * consumer that is on, with the values it needs computed once.  A new
 * feature at a code point adds a consumer to its hook, not a site.  A
 * consumer is a counter id or SPC_SWITCH_SITE_ID(key); a hook's site id is
 * SPC_HOOK_SITE_ID(hook), below every switch's. */
enum { SPC_MAX_HOOKS = 64, SPC_MAX_HOOK_CONSUMERS = 16 };
#define SPC_HOOK_SITE_ID(hook) (-100 - (hook))
/* Sets hook's consumers (replacing those it had) and turns its sites on or
 * off to match them.  SPC_ERR_BAD_ID for a hook outside
 * 0..SPC_MAX_HOOKS-1, more than SPC_MAX_HOOK_CONSUMERS consumers, or a
 * consumer that is neither a counter nor a switch. */
int spc_hook_define(int hook, const int *consumers, int count);
/* 1 while at least one consumer of hook is on. */
int spc_hook_is_on(int hook);
/* 1 while every counter among hook's consumers (at least one) is on and
 * none of its switches: its patched sites then run the code SPC_HOOK made
 * for that case, which tests no flag (that code's copy for sampled timers
 * while spc_timer_sampling() is above 1). */
int spc_hook_all_counters(int hook);
/* 1 while hook's consumers that are on, at least one, are all timers: no
 * counter of another kind and no switch.  With timers sampled, its site at
 * a function's entry then runs the copy made for that case
 * (SPC_HOOK_TIMERS_SAMPLED), which tests no counter but a drawn call's
 * timers. */
int spc_hook_timers_alone(int hook);
/* 1 while one of hook's consumers that is a switch is on. */
int spc_hook_switches_on(int hook);

/* A hook's code is compiled once in each mode (SPC_HOOK), a constant it
 * sees as SPC_HOOK_MODE and hands to the spc_hook_* helpers below: with
 * all its counters on and no switch, which is what mpi_spc_attach=all
 * gives, nothing need be tested, not even whether timers are sampled;
 * with no switch on, no switch. */
typedef enum spc_hook_mode {
    SPC_HOOK_TESTS,         /* test each consumer */
    SPC_HOOK_ALL_COUNTERS,  /* every counter consumer is on, no switch is; timers time every interval */
    SPC_HOOK_ALL_SAMPLED,   /* the same, with timers sampled (spc_timer_sampling() above 1) */
    SPC_HOOK_COUNTERS,      /* no switch is on: test each counter */
    SPC_HOOK_TIMERS_SAMPLED /* no switch and only timers are on, sampled (a function's entry alone) */
} spc_hook_mode;
#define SPC_HOOK_MODE spc_hook_mode_
/* copy(suffix, mode, ...) for each mode's copy of a hook's code at a
 * function's entry (SPC_HOOK_ENTRY), prefix_<suffix>, which the site's
 * record names. */
#define SPC_HOOK_ENTRY_COPIES(copy, ...)                                                           \
    copy(tests, SPC_HOOK_TESTS, __VA_ARGS__) copy(counters, SPC_HOOK_COUNTERS, __VA_ARGS__)        \
    copy(all, SPC_HOOK_ALL_COUNTERS, __VA_ARGS__) copy(sampled, SPC_HOOK_ALL_SAMPLED, __VA_ARGS__) \
    copy(timers, SPC_HOOK_TIMERS_SAMPLED, __VA_ARGS__)
/* Inside a hook's code: whether one of its consumers that is a switch is
 * on, so that code tests its counters one by one but its switched
 * consumers (each a call) only behind this one test. */
#define SPC_HOOK_SWITCHES_ON(mode, hook)                                                   \
    ((mode) == SPC_HOOK_TESTS &&                                                           \
     __builtin_expect(__atomic_load_n(&spc_flags_.hook_switches[hook], __ATOMIC_RELAXED) != 0, 0))

/* Every flag the update code tests, in one object, so that code in another
 * shared object (libmpi) reaches them all through one GOT entry however
 * many a hook's code tests.  Written by the core only. */
struct spc_flags {
    unsigned char counters[OMPI_SPC_NUM_COUNTERS];  /* counter id is on */
    unsigned char switches[SPC_NUM_SWITCHES];       /* switch key is on */
    unsigned char hooks[SPC_MAX_HOOKS];             /* a consumer of hook is on */
    unsigned char hook_switches[SPC_MAX_HOOKS];     /* a consumer of hook that is a switch is on */
    unsigned timer_sampling;                        /* spc_timer_sampling() */
};
extern struct spc_flags spc_flags_;

/* ---- Counters bound to communicators ------------------------------------ */

/* The catalogue's SPC_PER_COMM rows: counters also kept per communicator. */
typedef enum spc_comm_counter_id {
#define SPC_PER_COMM(name, where) SPC_COMM_##name,
#include "spc/catalogue.def"
    SPC_NUM_COMM_COUNTERS
} spc_comm_counter_id;

/* The catalogue's SPC_PER_PEER rows: arrays with one element per rank. */
typedef enum spc_peer_counter_id {
#define SPC_PER_PEER(name, kind, unit, description) SPC_##name,
#include "spc/catalogue.def"
    SPC_NUM_PEER_COUNTERS
} spc_peer_counter_id;

typedef struct spc_peer_counter_info {
    const char *name;  /* "OMPI_SPC_PEER_BYTES_SENT" */
    const char *description;
    spc_kind kind;
    spc_unit unit;
    int window;  /* an SPC_PER_WIN_PEER row: kept per window, not per communicator */
} spc_peer_counter_info;

extern const spc_peer_counter_info spc_peer_counter_infos[SPC_NUM_PEER_COUNTERS];

/* User array id's internal counterpart (tag < 0): the catalogue lists
 * those four in the user's order (checked in catalogue.cc). */
#define SPC_PEER_INTERNAL_OF(id) ((id) + (SPC_PEER_INTERNAL_MESSAGES_SENT - SPC_PEER_MESSAGES_SENT))
/* The array of a message's tag: user (tag >= 0) array id or its internal one. */
#define SPC_PEER_OF_TAG(id, tag) ((tag) >= 0 ? (id) : SPC_PEER_INTERNAL_OF(id))
/* User array id's one-sided counterpart (a window's), likewise in order. */
#define SPC_PEER_ONE_SIDED_OF(id) ((id) + (SPC_PEER_ONE_SIDED_MESSAGES_SENT - SPC_PEER_MESSAGES_SENT))

/* The catalogue's SPC_HISTOGRAM rows: messages by size, in bins by bit
 * length: bin 0 for 0 bytes, bin k for [2^(k-1), 2^k) bytes. */
enum { SPC_HISTOGRAM_BINS = 65 };
typedef enum spc_histogram_id {
#define SPC_HISTOGRAM(name, description) SPC_HISTOGRAM_##name,
#include "spc/catalogue.def"
    SPC_NUM_HISTOGRAMS
} spc_histogram_id;

typedef struct spc_histogram_info {
    const char *name;  /* "OMPI_SPC_MESSAGE_SIZES_SENT" */
    const char *description;
} spc_histogram_info;

extern const spc_histogram_info spc_histogram_infos[SPC_NUM_HISTOGRAMS];

SPC_INLINE_ int spc_histogram_bin(uint64_t bytes)
{
    return 0 == bytes ? 0 : 64 - __builtin_clzll(bytes);
}

/* The name of one bin as an event of its own (PAPI): OMPI_SPC_<NAME>_BIN<k>,
 * and its description; each cut to size. */
void spc_histogram_bin_name(int id, int bin, char *name, size_t size);
void spc_histogram_bin_description(int id, int bin, char *description, size_t size);

/* The process-wide histograms (atomic: every thread adds to them). */
extern uint64_t spc_histograms[SPC_NUM_HISTOGRAMS][SPC_HISTOGRAM_BINS];

typedef struct spc_comm_counter_info {
    int counter;        /* the catalogue counter it keeps for one communicator */
    const char *where;  /* what a communicator's value holds */
} spc_comm_counter_info;

extern const spc_comm_counter_info spc_comm_counter_infos[SPC_NUM_COMM_COUNTERS];
/* Communicator counter of a name (with or without OMPI_SPC_, any case); -1 if none. */
int spc_comm_counter_find(const char *name);

/* One communicator's counters and its per-peer arrays.  Its threads share
 * them, hence atomic adds; they are updated only behind
 * SPC_SWITCH_COMM_COUNTERS sites, and only for a communicator someone
 * watches (the others have no storage: NULL). */
struct __attribute__((aligned(64))) spc_comm {
    uint64_t value[SPC_NUM_COMM_COUNTERS];  /* a LEVEL row's stays 0 (catalogue.def) */
    uint64_t histogram[SPC_NUM_HISTOGRAMS][SPC_HISTOGRAM_BINS];
    int peers;       /* ranks: the length of each peer array */
    uint64_t *peer;  /* SPC_NUM_PEER_COUNTERS arrays of peers, in the same block */
    /* Each histogram per peer, peers x SPC_HISTOGRAM_BINS a histogram (seed
     * 003's per-pair sizes): 1,040 bytes a rank, so only where a reader asks
     * (spc_comm_keep_peer_histograms); NULL until then. */
    uint64_t *peer_histogram;
};
/* Zeroed storage for a communicator of peers ranks, or NULL when out of
 * memory or peers < 0. */
struct spc_comm *spc_comm_create(int peers);
void spc_comm_destroy(struct spc_comm *comm);
/* Value of counter id (an spc_comm_counter_id) in its catalogue counter's unit. */
uint64_t spc_comm_read(const struct spc_comm *comm, int id);
/* Copies peer array id (an spc_peer_counter_id), comm->peers values. */
void spc_comm_read_peers(const struct spc_comm *comm, int id, uint64_t *values);
/* Copies histogram id of comm, or the process-wide one if comm is NULL. */
void spc_histogram_read(const struct spc_comm *comm, int id, uint64_t values[SPC_HISTOGRAM_BINS]);
/* comm keeps its histograms per peer from now on (they start at 0): 0, or
 * -1 when out of memory.  Callers serialise (MPI_T's lock); the sites see
 * the arrays once made. */
int spc_comm_keep_peer_histograms(struct spc_comm *comm);
/* Copies histogram id of each peer of comm, peer by peer, comm->peers x
 * SPC_HISTOGRAM_BINS values (0 if comm keeps none). */
void spc_comm_read_peer_histograms(const struct spc_comm *comm, int id, uint64_t *values);

SPC_INLINE_ void spc_comm_add(struct spc_comm *comm, int id, uint64_t n)
{
    if (NULL != comm) {
        __atomic_fetch_add(&comm->value[id], n, __ATOMIC_RELAXED);
    }
}

/* Out of line: inline, its index arithmetic cost ob1's eager match 2
 * instructions a message on its off path (the registers the hook's code
 * needs); out of line, the sites pay a load and a test. */
static __attribute__((noinline, cold, unused)) void spc_peer_histogram_add_(uint64_t *per_peer, int peers, int id,
                                                                        int peer, int bin)
{
    if ((unsigned)peer < (unsigned)peers) {
        __atomic_fetch_add(&per_peer[((size_t)id * (size_t)peers + (size_t)peer) * SPC_HISTOGRAM_BINS + (size_t)bin], 1,
                           __ATOMIC_RELAXED);
    }
}

/* One message of bytes bytes to or from peer (a rank of comm; ignored
 * outside 0..peers-1) in histogram id, process-wide, of comm (if not
 * NULL) and of peer if comm keeps them. */
SPC_INLINE_ void spc_histogram_add(struct spc_comm *comm, int id, int peer, uint64_t bytes)
{
    int bin = spc_histogram_bin(bytes);
    __atomic_fetch_add(&spc_histograms[id][bin], 1, __ATOMIC_RELAXED);
    if (NULL != comm) {
        __atomic_fetch_add(&comm->histogram[id][bin], 1, __ATOMIC_RELAXED);
        uint64_t *per_peer = __atomic_load_n(&comm->peer_histogram, __ATOMIC_ACQUIRE);
        if (__builtin_expect(NULL != per_peer, 0)) {
            spc_peer_histogram_add_(per_peer, comm->peers, id, peer, bin);
        }
    }
}

/* n more of peer array id for rank (ignored outside 0..peers-1, e.g. a
 * wildcard source not yet matched). */
SPC_INLINE_ void spc_comm_add_peer(struct spc_comm *comm, int id, int rank, uint64_t n)
{
    if (NULL != comm && (unsigned)rank < (unsigned)comm->peers) {
        __atomic_fetch_add(&comm->peer[(size_t)id * (size_t)comm->peers + (size_t)rank], n,
                           __ATOMIC_RELAXED);
    }
}

enum spc_sites_kind {
    SPC_SITES_KIND_FLAG,     /* every site jumps to its flag test */
    SPC_SITES_KIND_PATCHED   /* a site of a counter that is off is a no-op */
};
/* The kind this process uses, chosen once when the first table registers:
 * flag when built with -Dsites=flag, off x86-64, with SPC_SITES=flag in the
 * environment, or when the system refuses to patch (membarrier or mprotect
 * fails); SPC_VERBOSE=1 prints the choice and its reason to stderr. */
enum spc_sites_kind spc_sites_kind(void);
/* The table of one link unit, called by a constructor in every file that
 * includes this header (the same table is registered once). */
void spc_sites_register(const struct spc_site *begin, const struct spc_site *end);
void spc_sites_unregister(const struct spc_site *begin);

/* ---- Storage the fast path touches (not for direct use) ----------------- */

/* One cache line per counter: the counter in atomic mode, or a LEVEL's value
 * and its watermarks (high[0] process-wide, high[k] for per-reader slot k). */
struct __attribute__((aligned(64))) spc_shared_line {
    uint64_t value;
    uint64_t reader_slots;             /* bit k set: high[k] is in use, k >= 1 */
    int64_t high[SPC_WATERMARK_SLOTS + 1];
};

extern struct spc_shared_line spc_shared[OMPI_SPC_NUM_COUNTERS];

/* A thread's block: its counters (sharded mode), then per TIMER the number
 * of intervals it timed (SPC_TIMED_<id>): what readers sum. */
enum spc_block_slot {
    SPC_BLOCK_TIMED_BEFORE_ = OMPI_SPC_NUM_COUNTERS - 1,
#define SPC_STAT(name, kind, unit, category, verbosity, description) SPC_TIMED_SLOT_##kind##_(name)
#define SPC_TIMED_SLOT_COUNTER_(name)
#define SPC_TIMED_SLOT_AGGREGATE_(name)
#define SPC_TIMED_SLOT_LEVEL_(name)
#define SPC_TIMED_SLOT_TIMER_(name) SPC_TIMED_OMPI_SPC_##name,
#include "spc/catalogue.def"
    SPC_BLOCK_NOT_TIMED,   /* spc_timed_slot_ of a counter that is no timer: no code that runs adds to it */
    SPC_BLOCK_SLOTS
};
enum { SPC_NUM_TIMERS = SPC_BLOCK_NOT_TIMED - OMPI_SPC_NUM_COUNTERS };

/* The calling thread's block.  Thread-local data stays small (this pointer
 * and spc_thread_timing, 32 bytes) and initial-exec, so that libmpi stays
 * dlopen-able and no update calls __tls_get_addr. */
extern __thread uint64_t *spc_thread_shard __attribute__((tls_model("initial-exec")));
/* First update of a thread: allocates and registers its block. */
uint64_t *spc_thread_shard_create(void) __attribute__((cold, returns_nonnull));

/* A thread's sampling state and timed call, its own and never summed: not
 * in its block but thread-local itself (initial-exec, 24 bytes), so that a
 * timed call not drawn reaches it in one load of its offset and tests no
 * pointer, and threads that share the block of last resort share no call. */
struct spc_thread_timing {
    uint64_t countdown;  /* intervals until the next timed one (0 on a new thread: the next) */
    uint64_t call_depth; /* minus the timed MPI calls the thread is inside (spc_call_depth_down_) */
    uint64_t random;     /* state of its random gaps (0 until the first gap seeds it) */
};
extern __thread struct spc_thread_timing spc_thread_timing __attribute__((tls_model("initial-exec")));
/* The gap to the calling thread's next timed interval, when sampling is
 * above 1. */
uint64_t spc_timer_next_gap_(void);

/* A running SPC_TIMER_START/STOP pair: the start's clock reading (0 when the
 * interval is not timed) and the counter it times. */
typedef struct spc_timer {
    uint64_t start;
    int id;
} spc_timer_t;

#if SPC_ENABLE

#define SPC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SPC_LIKELY(x) __builtin_expect(!!(x), 1)

SPC_INLINE_ int spc_enabled_(int id)
{
    return __atomic_load_n(&spc_flags_.counters[id], __ATOMIC_RELAXED);
}

SPC_INLINE_ uint64_t *spc_block_(void)
{
    uint64_t *block = spc_thread_shard;
    if (SPC_UNLIKELY(block == NULL)) {
        block = spc_thread_shard_create();
    }
    return block;
}

/* Only the owning thread writes its block, and a concurrent reader must see
 * each store whole: a relaxed atomic load and store.  On x86-64 one add to
 * memory is such a store (an aligned 8-byte write), one instruction where
 * the compiler makes three of the atomics; ThreadSanitizer sees no asm, so
 * its builds keep the atomics it checks. */
SPC_INLINE_ void spc_block_add_(uint64_t *block, int slot, uint64_t n)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
    __asm__("addq %1, %0" : "+m"(block[slot]) : "er"(n));
#else
    __atomic_store_n(&block[slot], __atomic_load_n(&block[slot], __ATOMIC_RELAXED) + n,
                     __ATOMIC_RELAXED);
#endif
}

SPC_INLINE_ void spc_sharded_add_(int id, uint64_t n) { spc_block_add_(spc_block_(), id, n); }

SPC_INLINE_ void spc_atomic_add_(int id, uint64_t n)
{
    __atomic_fetch_add(&spc_shared[id].value, n, __ATOMIC_RELAXED);
}

SPC_INLINE_ void spc_add_(int id, uint64_t n)
{
#if SPC_STORAGE_ATOMIC
    spc_atomic_add_(id, n);
#else
    spc_sharded_add_(id, n);
#endif
}

/* The block slot that counts the intervals timer id timed (folds to a
 * constant for a constant id). */
SPC_INLINE_ int spc_timed_slot_(int id)
{
    switch (id) {
#define SPC_STAT(name, kind, unit, category, verbosity, description) SPC_TIMED_CASE_##kind##_(name)
#define SPC_TIMED_CASE_COUNTER_(name)
#define SPC_TIMED_CASE_AGGREGATE_(name)
#define SPC_TIMED_CASE_LEVEL_(name)
#define SPC_TIMED_CASE_TIMER_(name) \
    case OMPI_SPC_##name:           \
        return SPC_TIMED_OMPI_SPC_##name;
#include "spc/catalogue.def"
    default:
        return SPC_BLOCK_NOT_TIMED;  /* not a timer: its start never ran */
    }
}

/* Whether mode is one of the copies for all counters (exact or sampled
 * timers), where every counter consumer of the hook is known to be on. */
SPC_INLINE_ int spc_hook_all_mode_(spc_hook_mode mode)
{
    return mode == SPC_HOOK_ALL_COUNTERS || mode == SPC_HOOK_ALL_SAMPLED;
}

/* The update code behind a site that serves more than one counter (a
 * hook's, SPC_USER_OR_MPI's), in a mode (a constant, so the tests it does
 * not need are not compiled): a copy for all counters only in a hook's
 * code and for counters among the hook's consumers; SPC_HOOK_TESTS
 * elsewhere. */
SPC_INLINE_ int spc_hook_counter_on_(spc_hook_mode mode, int id)
{
    if (mode == SPC_HOOK_TIMERS_SAMPLED && spc_timed_slot_(id) == SPC_BLOCK_NOT_TIMED) {
        return 0;  /* off: that copy runs while timers alone are */
    }
    return spc_hook_all_mode_(mode) || spc_enabled_(id);
}

/* The thread's block for a hook's code.  Code that adds across a call (a
 * timer's end, the adds after a delivery) keeps it in a local, *block, NULL
 * until its first add, and so reaches it once: the compiler cannot know the
 * thread-local pointer unchanged by the call.  block NULL: reach it for
 * this add alone. */
SPC_INLINE_ uint64_t *spc_hook_block_(uint64_t **block)
{
    if (block == NULL) {
        return spc_block_();
    }
    if (*block == NULL) {
        *block = spc_block_();
    }
    return *block;
}

/* The initial value of a hook code's block local: reached at once in the
 * copy for all counters, which adds for sure, so that no add tests it. */
SPC_INLINE_ uint64_t *spc_hook_block_start_(spc_hook_mode mode)
{
    return spc_hook_all_mode_(mode) && !SPC_STORAGE_ATOMIC ? spc_block_() : NULL;
}

/* n more of counter id, from a hook's code that decided it is on. */
SPC_INLINE_ void spc_hook_add_(uint64_t **block, int id, uint64_t n)
{
#if SPC_STORAGE_ATOMIC
    (void)block;
    spc_atomic_add_(id, n);
#else
    spc_block_add_(spc_hook_block_(block), id, n);
#endif
}

/* n more of counter id if it is on. */
SPC_INLINE_ void spc_hook_record_(spc_hook_mode mode, uint64_t **block, int id, uint64_t n)
{
    if (SPC_UNLIKELY(spc_hook_counter_on_(mode, id))) {
        spc_hook_add_(block, id, n);
    }
}

/* Branching on the tag first leaves a constant id on each side, so each
 * flag test is one load at a fixed offset. */
SPC_INLINE_ void spc_hook_user_or_mpi_(spc_hook_mode mode, uint64_t **block, int tag, uint64_t n,
                                       int user_id, int mpi_id)
{
    if (tag >= 0) {
        spc_hook_record_(mode, block, user_id, n);
    } else {
        spc_hook_record_(mode, block, mpi_id, n);
    }
}

#ifndef SPC_TIMER_CLOCK_
#define SPC_TIMER_CLOCK_() spc_ticks()  /* a test may substitute a synthetic clock */
#endif

/* Counts a thread's countdown down by one: 1 while what is left is still
 * above 0.  On x86-64 one subtraction from memory sets the flags the jump
 * tests (a flag output), where the compiler loads, subtracts, stores and
 * tests; ThreadSanitizer sees no asm, and the thread alone touches its
 * countdown. */
SPC_INLINE_ int spc_count_down_(uint64_t *countdown)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
    bool left;  /* as int, GCC kept the flag in a register too (setg, movzbl) */
    __asm__("subq $1, %0" : "+m"(*countdown), "=@ccg"(left));
    return left;
#else
    *countdown -= 1;
    return (int64_t)*countdown > 0;
#endif
}

/* Whether sampling draws this interval: the thread's countdown ran out
 * (0 on a new thread: below 1 once counted down), and restarts at a random
 * gap. */
SPC_INLINE_ int spc_timer_drawn_(void)
{
    if (SPC_LIKELY(spc_count_down_(&spc_thread_timing.countdown))) {
        return 0;
    }
    spc_thread_timing.countdown = spc_timer_next_gap_();
    return 1;
}

/* Whether a sampled timer id times this interval, counted if so. */
SPC_INLINE_ int spc_timer_sampled_(uint64_t **hook_block, int id)
{
    if (SPC_LIKELY(!spc_timer_drawn_())) {
        return 0;
    }
    spc_block_add_(spc_hook_block_(hook_block), spc_timed_slot_(id), 1);
    return 1;
}

/* Whether a hook's code times this interval of timer id: the counter is on
 * and, sampled, the interval is drawn.  Such code runs what it times on
 * two paths, between two clock readings and alone, so that an interval
 * not timed keeps nothing across it and a timed one tests nothing at its
 * end (then spc_hook_add_ the ticks).  The copies for all counters know
 * whether timers are sampled. */
SPC_INLINE_ int spc_hook_times_(spc_hook_mode mode, uint64_t **block, int id)
{
    switch (mode) {
    case SPC_HOOK_ALL_COUNTERS:
        return 1;
    case SPC_HOOK_ALL_SAMPLED:
        return spc_timer_sampled_(block, id);
    default:
        return SPC_UNLIKELY(spc_enabled_(id)) &&
               (SPC_LIKELY(spc_flags_.timer_sampling == 1) || spc_timer_sampled_(block, id));
    }
}

/* The start stores the clock only for an interval that is timed; the timer
 * is otherwise left at 0 (SPC_TIMER_START stores that first), and a stop
 * skips a timer at 0, so a counter turned on between the two adds nothing. */
SPC_INLINE_ void spc_hook_timer_start_(spc_hook_mode mode, int id, spc_timer_t *timer)
{
    if (spc_hook_times_(mode, NULL, id)) {
        timer->id = id;
        timer->start = SPC_TIMER_CLOCK_();
    }
}


/* ---- Time inside MPI calls (catalogue.def's SPC_CALL_TIME rows) ---- */

SPC_INLINE_ int spc_call_timers_on_(int time, int family)
{
    return spc_enabled_(time) || spc_enabled_(family) || spc_enabled_(OMPI_SPC_MPI_TIME);
}

/* Whether a timed call's hook code times this call: one of its timers (its
 * own, its family's, MPI_TIME) is on and, sampled, the interval is drawn;
 * a drawn interval counts for the three timers' spc_timer_intervals.
 * Sampled, the draw comes first: a call not drawn tests no timer's flag. */
SPC_INLINE_ int spc_call_times_(spc_hook_mode mode, uint64_t **block, int time, int family)
{
    if (mode == SPC_HOOK_ALL_COUNTERS) {
        return 1;
    }
    const int sampled = mode == SPC_HOOK_ALL_SAMPLED || mode == SPC_HOOK_TIMERS_SAMPLED;
    if (!sampled && SPC_LIKELY(spc_flags_.timer_sampling == 1)) {
        return spc_call_timers_on_(time, family);
    }
    if (SPC_LIKELY(!spc_timer_drawn_()) || (mode != SPC_HOOK_ALL_SAMPLED && !spc_call_timers_on_(time, family))) {
        return 0;
    }
    uint64_t *own = spc_hook_block_(block);
    spc_block_add_(own, spc_timed_slot_(time), 1);
    spc_block_add_(own, spc_timed_slot_(family), 1);
    spc_block_add_(own, spc_timed_slot_(OMPI_SPC_MPI_TIME), 1);
    return 1;
}

/* One timed call more that the thread is inside: 1 if it was inside none.
 * The depth is kept negated, so that on x86-64 one subtraction from memory
 * borrows (sets the carry flag) exactly when it was 0. */
SPC_INLINE_ int spc_call_depth_down_(void)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
    bool outermost;
    __asm__("subq $1, %0" : "+m"(spc_thread_timing.call_depth), "=@ccc"(outermost));
    return outermost;
#else
    return spc_thread_timing.call_depth-- == 0;
#endif
}

/* A timed call's entry, in a hook's code that holds the call: 1 when the
 * call is timed (the code reads the clock, SPC_TIMER_CLOCK_, and ends the
 * call with spc_call_leave_timed_), else 0 (spc_call_leave_untimed_); a
 * call made inside another is not timed, since the outer call's interval
 * holds it.  The thread's depth counts the calls it is inside, timed or
 * not, so that what a call calls adds nothing of its own. */
SPC_INLINE_ int spc_call_enter_(spc_hook_mode mode, uint64_t **block, int time, int family)
{
    if (!spc_call_depth_down_()) {
        return 0;
    }
    return spc_call_times_(mode, block, time, family);
}

SPC_INLINE_ void spc_call_leave_untimed_(void) { spc_thread_timing.call_depth += 1; }

/* A timed call's return: the ticks it took since start, added to its
 * timers that are on. */
SPC_INLINE_ uint64_t spc_call_leave_timed_(spc_hook_mode mode, uint64_t **block, uint64_t start, int time,
                                           int family)
{
    spc_thread_timing.call_depth += 1;
    const uint64_t ticks = SPC_TIMER_CLOCK_() - start;
    spc_hook_record_(mode, block, time, ticks);
    spc_hook_record_(mode, block, family, ticks);
    spc_hook_record_(mode, block, OMPI_SPC_MPI_TIME, ticks);
    return ticks;
}

SPC_INLINE_ void spc_timer_stop_(spc_timer_t *timer)
{
    if (SPC_UNLIKELY(timer->start != 0)) {
        spc_add_(timer->id, SPC_TIMER_CLOCK_() - timer->start);
        timer->start = 0;
    }
}

/* SPC_TIMER_STOP that also adds the interval to counter comm_id of a
 * communicator's storage (NULL: none) when the timer timed counter timed_id
 * and communicator counters are on. */
SPC_INLINE_ void spc_timer_stop_comm_(spc_timer_t *timer, int timed_id, struct spc_comm *comm, int comm_id)
{
    if (SPC_UNLIKELY(timer->start != 0)) {
        const uint64_t elapsed = SPC_TIMER_CLOCK_() - timer->start;
        spc_add_(timer->id, elapsed);
        if (timer->id == timed_id &&
            __atomic_load_n(&spc_flags_.switches[SPC_SWITCH_COMM_COUNTERS], __ATOMIC_RELAXED)) {
            spc_comm_add(comm, comm_id, elapsed);
        }
        timer->start = 0;
    }
}

static inline void spc_raise_(int64_t *high, int64_t now)
{
    int64_t seen = __atomic_load_n(high, __ATOMIC_RELAXED);
    while (now > seen &&
           !__atomic_compare_exchange_n(high, &seen, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* Levels are the exception to "off costs a site": a level is the length of
 * a queue, so it must see every insert and every removal to be right when a
 * reader turns it on later.  Levels (and the watermarks raised from them) are
 * therefore always maintained when SPC is compiled in.  They move only on the
 * unexpected and out-of-sequence paths. */
static inline void spc_level_add_(int id, int64_t delta)
{
    struct spc_shared_line *line = &spc_shared[id];
    int64_t now = (int64_t)__atomic_add_fetch(&line->value, (uint64_t)delta, __ATOMIC_RELAXED);
    if (delta > 0) {
        spc_raise_(&line->high[0], now);
        for (uint64_t readers = __atomic_load_n(&line->reader_slots, __ATOMIC_ACQUIRE); readers;
             readers &= readers - 1) {
            spc_raise_(&line->high[__builtin_ctzll(readers)], now);
        }
    }
}

#if SPC_SITES_PATCHED

/* code runs out of line, behind one site of counters id and id2
 * (SPC_SITE_, spc/x86.h).  test, what the site's flags say, is evaluated
 * only where the site is a jump in the flag kind: a patched site jumps past
 * it, since it jumps only while on. */
#define SPC_GUARDED_(id, id2, test, code)                  \
    do {                                                   \
        __label__ spc_test_, spc_on_, spc_done_;           \
        SPC_SITE_(id, id2, spc_test_, spc_on_);            \
        goto spc_done_;                                    \
    spc_test_: __attribute__((cold));                      \
        if (!(test)) {                                     \
            goto spc_done_;                                \
        }                                                  \
    spc_on_: __attribute__((cold));                        \
        code;                                              \
    spc_done_:;                                            \
    } while (0)

/* A hook's site, its code in each mode, run instead of plain while on;
 * off, plain runs behind the site's no-op.  Around a statement whose two
 * ends the hook watches, as a timer does, one site decides both ends, so
 * neither end's code runs without the other (two sites change one after
 * the other), and a timer's start needs no store on the path while off.
 * Only a hook around a statement can time it, so only its code has a copy
 * for sampled timers, and only its code, which holds the statement, is
 * worth a copy for its counters alone: SPC_HOOK's site takes its copy for
 * all counters whatever the sampling, and its copy with tests with no
 * switch on (a copy more made its callers' layout worse). */
#define SPC_HOOK_AROUND(hook, code, plain)                                                    \
    SPC_HOOK_COPIES_(hook, code, plain, __label__ spc_counters_; __label__ spc_sampled_;,    \
                     SPC_HOOK_SITE_AROUND_,                                                   \
                     spc_counters_: __attribute__((cold));                                    \
                     SPC_HOOK_CODE_(SPC_HOOK_COUNTERS, code); goto spc_done_;                 \
                     spc_sampled_: __attribute__((cold));                                     \
                     SPC_HOOK_CODE_(SPC_HOOK_ALL_SAMPLED, code); goto spc_done_)
#define SPC_HOOK(hook, code) SPC_HOOK_COPIES_(hook, code, (void)0, , SPC_HOOK_SITE_POINT_, (void)0)
#define SPC_HOOK_SITE_AROUND_(id, test, on, all) \
    SPC_HOOK_SITE_(id, test, on, spc_counters_, all, spc_sampled_)
/* The hook's site (SPC_HOOK_SITE_AROUND_ or SPC_HOOK_SITE_POINT_,
 * spc/x86.h), and the copies only a hook around a statement has, with their
 * labels' declaration. */
#define SPC_HOOK_COPIES_(hook, code, plain, more_labels, site, more_copies)                   \
    do {                                                                                      \
        __label__ spc_plain_, spc_test_, spc_on_, spc_all_, spc_done_;                        \
        more_labels                                                                           \
        site(SPC_HOOK_SITE_ID(hook), spc_test_, spc_on_, spc_all_);                           \
    spc_plain_:                                                                               \
        plain;                                                                                \
        goto spc_done_;                                                                       \
    spc_test_: __attribute__((cold));                                                         \
        if (!__atomic_load_n(&spc_flags_.hooks[hook], __ATOMIC_RELAXED)) {                    \
            goto spc_plain_;                                                                  \
        }                                                                                     \
    spc_on_: __attribute__((cold));                                                           \
        SPC_HOOK_CODE_(SPC_HOOK_TESTS, code);                                                 \
        goto spc_done_;                                                                       \
        more_copies;                                                                          \
    spc_all_: __attribute__((cold));                                                          \
        SPC_HOOK_CODE_(SPC_HOOK_ALL_COUNTERS, code);                                          \
    spc_done_:;                                                                               \
    } while (0)

/* A hook at a function's entry, for a function whose every call the hook
 * holds (ompi_spc_hooks.h's timed MPI functions): the function is naked,
 * declared with SPC_HOOK_ENTRY_FUNCTION and its body SPC_HOOK_ENTRY_SITE
 * alone, the site, which jumps while off to prefix_plain, a function of the
 * same parameters that does its work, while on to the copy of the hook's
 * code its mode chooses (prefix_tests, _counters, _all, _sampled, _timers:
 * made by SPC_HOOK_ENTRY_COPIES), and in the flag kind to prefix_flag
 * (SPC_HOOK_ENTRY_TEST), which tests the hook's flag.  With no prologue
 * before the site, each runs as if called in the function's place: off
 * costs the jump and shares no register with the work (a site in the body
 * comes after the body's prologue, which the compiler then lays out around
 * the site too), and on undoes no prologue before the jump. */
#define SPC_HOOK_ENTRY 1
#define SPC_HOOK_ENTRY_FUNCTION __attribute__((naked))
#define SPC_HOOK_ENTRY_SITE(prefix) __asm__(SPC_HOOK_ENTRY_SITE_TEXT_(prefix))
#define SPC_HOOK_ENTRY_TEST(hook, prefix, type, params, args)                                   \
    static __attribute__((noinline, used)) type prefix##_flag params                             \
    {                                                                                           \
        __asm__(SPC_HOOK_ENTRY_RECORD_TEXT_(prefix) : : "i"(SPC_HOOK_SITE_ID(hook)));           \
        if (SPC_UNLIKELY(__atomic_load_n(&spc_flags_.hooks[hook], __ATOMIC_RELAXED))) {         \
            return prefix##_tests args;                                                          \
        }                                                                                       \
        return prefix##_plain args;                                                              \
    }

/* This link unit's table, registered by every file that includes us. */
extern const struct spc_site __start_spc_sites[] __attribute__((weak, visibility("hidden")));
extern const struct spc_site __stop_spc_sites[] __attribute__((weak, visibility("hidden")));
__attribute__((constructor, used)) static void spc_sites_register_here_(void)
{
    spc_sites_register(__start_spc_sites, __stop_spc_sites);
}
__attribute__((destructor, used)) static void spc_sites_unregister_here_(void)
{
    spc_sites_unregister(__start_spc_sites);
}

#else /* flag kind, compiled: today's test of the flag in line */

#define SPC_GUARDED_(id, id2, test, code) \
    do {                                  \
        if (SPC_UNLIKELY(test)) {         \
            code;                         \
        }                                 \
    } while (0)

/* The flag kind runs a hook's code with its tests. */
#define SPC_HOOK_AROUND(hook, code, plain)                                    \
    do {                                                                      \
        if (SPC_UNLIKELY(__atomic_load_n(&spc_flags_.hooks[hook], __ATOMIC_RELAXED))) { \
            SPC_HOOK_CODE_(SPC_HOOK_TESTS, code);                             \
        } else {                                                              \
            plain;                                                            \
        }                                                                     \
    } while (0)

#endif

/* A site of one counter is on exactly while the counter is: its code adds
 * without testing the flag.  Sites of two counters, and timer sites, test in
 * their code which counter is on. */
#define SPC_RECORD(id, n) SPC_GUARDED_(id, id, spc_enabled_(id), spc_add_((id), (uint64_t)(n)))
#define SPC_USER_OR_MPI(tag, n, user_id, mpi_id) \
    SPC_GUARDED_(user_id, mpi_id, 1,                                                       \
                 spc_hook_user_or_mpi_(SPC_HOOK_TESTS, NULL, (tag), (uint64_t)(n), (user_id), (mpi_id)))
/* A timer's start is on while its timer id (a constant) is; a stop adds
 * to the one its start named, and is on while any timer is
 * (SPC_ANY_TIMER), since it does not name it. */
#define SPC_TIMER_START(id, timer)                                                    \
    do {                                                                              \
        (timer)->start = 0;                                                           \
        SPC_GUARDED_((id), (id), 1, spc_hook_timer_start_(SPC_HOOK_TESTS, (id), (timer))); \
    } while (0)
#define SPC_TIMER_STOP(timer) \
    SPC_GUARDED_(SPC_ANY_TIMER, SPC_ANY_TIMER, 1, spc_timer_stop_(timer))
/* A stop that names its start's timer, timed_id, and is on while that
 * timer is (so a start of another timer is stopped only while timed_id is
 * on), also adding the interval to a communicator's counter comm_id
 * (storage is evaluated only while timed_id is on). */
#define SPC_TIMER_STOP_COMM(timer, timed_id, storage, comm_id) \
    SPC_GUARDED_((timed_id), (timed_id), 1, spc_timer_stop_comm_((timer), (timed_id), (storage), (comm_id)))
#define SPC_LEVEL_ADD(id, delta) spc_level_add_((id), (int64_t)(delta))
/* code (statements, run only while switch key, a constant, is on) behind
 * one site. */
#define SPC_SWITCHED(key, code)                                                \
    SPC_GUARDED_(SPC_SWITCH_SITE_ID(key), SPC_SWITCH_SITE_ID(key),             \
                 __atomic_load_n(&spc_flags_.switches[key], __ATOMIC_RELAXED), code)
/* A hook's code (statements) in mode, which it sees as SPC_HOOK_MODE and
 * tests each consumer it serves through. */
#define SPC_HOOK_CODE_(mode, code)                            \
    do {                                                      \
        const spc_hook_mode SPC_HOOK_MODE = (mode);           \
        (void)SPC_HOOK_MODE;                                  \
        code;                                                 \
    } while (0)

#else /* SPC compiled out */

#define SPC_RECORD(id, n) ((void)0)
#define SPC_USER_OR_MPI(tag, n, user_id, mpi_id) ((void)0)
#define SPC_TIMER_START(id, timer) ((void)0)
#define SPC_TIMER_STOP(timer) ((void)0)
#define SPC_TIMER_STOP_COMM(timer, timed_id, storage, comm_id) ((void)0)
#define SPC_LEVEL_ADD(id, delta) ((void)0)
#define SPC_SWITCHED(key, code) ((void)0)
#define SPC_HOOK_AROUND(hook, code, plain) \
    do {                                   \
        plain;                             \
    } while (0)

#endif

/* code, run only while one of hook's consumers is on, behind hook's one
 * site: a hook around nothing. */
#ifndef SPC_HOOK
#define SPC_HOOK(hook, code) SPC_HOOK_AROUND(hook, code, (void)0)
#endif

#ifdef __cplusplus
}
#endif

#endif
