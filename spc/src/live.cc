// The live segment's writer (spc/live.h): one shared-memory file per
// process holding the storage the fast path writes, so that an outside
// reader sums the counters itself and the job does no extra work.
//
// Live mode is decided at load time by a constructor, before any thread
// counts: mpirun hands --mca mpi_spc_live to the ranks as an environment
// variable.  The segment is made then under a provisional name, and
// MPI_Init (spc_live_publish) names it after the job and rank.  Set some
// other way, it starts at MPI_Init: threads that counted before keep their
// private blocks (none, in Open MPI: counters count only from MPI_Init on).
#include "live_internal.hpp"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "internal.hpp"
#include "spc/live.h"

namespace {

struct Segment {
    std::mutex mutex;                // guards everything below but `on`
    std::atomic<bool> on{false};     // blocks come from the segment
    bool owner = false;              // false in a forked child: never touch the file
    int fd = -1;
    unsigned char *base = nullptr;   // the whole file, read-write
    size_t bytes = 0;
    spc_live_header *header = nullptr;
    uint64_t *blocks = nullptr;
    std::string path;
    std::vector<uint64_t *> free_blocks;  // of exited threads, for the next new ones
    uint32_t max_blocks = 0;  // the blocks acquire hands out; the header's copy is for readers
    bool failed = false;      // a start failed (start_locked)
};

Segment &segment()
{
    static Segment *instance = new Segment;  // never destroyed: threads exit late
    return *instance;
}

// spc_live_not_counted's counters, for a segment made after it was called.
std::atomic<bool> not_counted[OMPI_SPC_NUM_COUNTERS];

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

uint64_t unix_ns()
{
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

// Field 22 of /proc/self/stat, the process's start time in clock ticks since
// boot: with the pid it names this process and no later one.
uint64_t start_time()
{
    FILE *f = std::fopen("/proc/self/stat", "r");
    if (f == nullptr) {
        return 0;
    }
    char text[1024];
    size_t n = std::fread(text, 1, sizeof text - 1, f);
    std::fclose(f);
    text[n] = '\0';
    const char *after_name = std::strrchr(text, ')');  // the name may hold spaces and ')'
    unsigned long long value = 0;
    if (after_name == nullptr ||
        std::sscanf(after_name + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                                    "%*d %*d %llu", &value) != 1) {
        return 0;
    }
    return value;
}

void say(char *message, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
void say(char *message, size_t size, const char *format, ...)
{
    if (message == nullptr || size == 0) {
        return;
    }
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, size, format, args);
    va_end(args);
}

void copy_text(char *to, size_t size, const char *from)
{
    std::snprintf(to, size, "%s", from != nullptr ? from : "");
}

struct Layout {
    size_t catalogue, strings, strings_bytes, final_values, levels, levels_bytes, blocks, bytes;
};

Layout layout(size_t strings_bytes, size_t page, uint32_t max_blocks)
{
    Layout l{};
    l.catalogue = round_up(sizeof(spc_live_header), 64);
    l.strings = l.catalogue + OMPI_SPC_NUM_COUNTERS * sizeof(spc_live_counter);
    l.strings_bytes = strings_bytes;
    l.final_values = round_up(l.strings + strings_bytes, 64);
    l.levels = round_up(l.final_values + OMPI_SPC_NUM_COUNTERS * sizeof(uint64_t), page);
    l.levels_bytes = sizeof(spc_level_pages);
    l.blocks = round_up(l.levels + l.levels_bytes, page);
    l.bytes = l.blocks + max_blocks * spc::live::kBlockBytes;
    return l;
}

// The catalogue as the file carries it: entries and their string pool.
std::string catalogue(spc_live_counter *entries)
{
    std::string pool(1, '\0');  // offset 0: the empty string
    auto add = [&pool](const char *text) {
        uint32_t at = static_cast<uint32_t>(pool.size());
        pool += text;
        pool += '\0';
        return at;
    };
    // each unit's name once: the file's size counts (live.h)
    uint32_t unit_names[SPC_UNIT_MICROSECONDS + 1] = {};
    for (int unit = 0; unit <= SPC_UNIT_MICROSECONDS; ++unit) {
        unit_names[unit] = add(spc_unit_name(static_cast<spc_unit>(unit)));
    }
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        const spc_counter_info &info = spc_counter_infos[id];
        entries[id] = {add(info.name), add(info.description), unit_names[info.unit],
                       static_cast<uint8_t>(info.kind), static_cast<uint8_t>(info.unit),
                       static_cast<int16_t>(info.level),
                       not_counted[id].load(std::memory_order_relaxed) ? SPC_LIVE_NOT_COUNTED : 0u};
    }
    return pool;
}

// Whether the level lines the fast path writes are this library's own pages
// (a program built without -fPIC that names spc_shared gets a copy of it in
// its own data, a copy relocation, which cannot be remapped alone).
bool levels_are_ours()
{
    return reinterpret_cast<void *>(spc_shared) == static_cast<void *>(&spc_level_pages_) &&
           sysconf(_SC_PAGESIZE) == static_cast<long>(kLevelPageBytes);
}

std::string provisional_name(const std::string &dir)
{
    return dir + "/" SPC_LIVE_FILE_PREFIX + std::to_string(getuid()) + ".pid" + std::to_string(getpid());
}

// Opens the segment file to group (read-only): false with errno if not.
bool open_to_group(int fd, const char *group, char *message, size_t size)
{
    if (group == nullptr || group[0] == '\0') {
        return fchmod(fd, 0600) == 0 || (say(message, size, "chmod: %s", std::strerror(errno)), false);
    }
    struct group entry, *found = nullptr;
    char buffer[4096];
    if (getgrnam_r(group, &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) {
        say(message, size, "no group named '%s' (" SPC_LIVE_GROUP_PARAM ")", group);
        return false;
    }
    if (fchown(fd, static_cast<uid_t>(-1), found->gr_gid) != 0 || fchmod(fd, 0640) != 0) {
        say(message, size, "cannot give the segment to group '%s': %s (a user may give a file only "
            "to a group of their own)", group, std::strerror(errno));
        return false;
    }
    return true;
}

// Turns the segment's mappings into private copies: a forked child must not
// write its counts into its parent's segment.
// Only the first `used` bytes are copied: the level pages' tail is padding
// that the sanitizers know as outside spc_shared.
void privatise(void *at, size_t bytes, size_t used)
{
    void *copy = std::malloc(used);
    if (copy == nullptr) {
        return;
    }
    std::memcpy(copy, at, used);
    if (mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
        std::memcpy(at, copy, used);
    }
    std::free(copy);
}

void after_fork_in_child()
{
    Segment &s = segment();
    if (!s.on.load(std::memory_order_relaxed) || !s.owner) {
        return;
    }
    s.owner = false;
    s.on.store(false, std::memory_order_relaxed);  // the child's new threads take private blocks
    privatise(s.base, s.bytes, s.bytes);
    if (s.header->levels_live) {
        privatise(&spc_level_pages_, sizeof(spc_level_pages), sizeof(spc_level_pages::lines));
    }
    close(s.fd);
    s.fd = -1;
}

// The thread blocks asked for (0: the environment's mpi_spc_live_threads);
// a value out of range is said in message and the default taken.
uint32_t thread_blocks(unsigned asked, char *message, size_t size)
{
    if (asked == 0) {
        const char *text = std::getenv(SPC_LIVE_ENV_PREFIX SPC_LIVE_THREADS_PARAM);
        if (text == nullptr || text[0] == '\0') {
            return SPC_LIVE_DEFAULT_THREADS;
        }
        char *end = nullptr;
        errno = 0;
        const unsigned long value = std::strtoul(text, &end, 10);
        asked = errno == 0 && *end == '\0' && value <= SPC_LIVE_MAX_THREADS && text[0] != '-'
                    ? static_cast<unsigned>(value) : SPC_LIVE_MAX_THREADS + 1;
    }
    if (asked < 1 || asked > SPC_LIVE_MAX_THREADS) {
        say(message, size, SPC_LIVE_THREADS_PARAM " must be 1 to %d; the segment holds %d threads",
            SPC_LIVE_MAX_THREADS, SPC_LIVE_DEFAULT_THREADS);
        return SPC_LIVE_DEFAULT_THREADS;
    }
    return asked;
}

int make_segment(Segment &s, const char *dir, const char *group, unsigned threads, char *message, size_t size)
{
    std::string folder = dir != nullptr && dir[0] != '\0' ? dir : SPC_LIVE_DEFAULT_DIR;
    const bool grouped = group != nullptr && group[0] != '\0';
    if (mkdir(folder.c_str(), grouped ? 0750 : 0700) != 0 && errno != EEXIST) {
        say(message, size, "cannot create the folder %s (" SPC_LIVE_DIR_PARAM "): %s", folder.c_str(),
            std::strerror(errno));
        return SPC_LIVE_ERR;
    }
    spc_live_counter entries[OMPI_SPC_NUM_COUNTERS];
    const std::string pool = catalogue(entries);
    s.max_blocks = thread_blocks(threads, message, size);
    const Layout l = layout(pool.size(), static_cast<size_t>(sysconf(_SC_PAGESIZE)), s.max_blocks);
    // Made under a name readers skip, and renamed once complete, so no
    // reader ever meets a half-written header.
    const std::string path = provisional_name(folder);
    const std::string making = folder + "/." SPC_LIVE_FILE_PREFIX + std::to_string(getpid()) + ".new";
    unlink(making.c_str());  // left by a process that had our pid and died here
    int fd = open(making.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        say(message, size, "cannot create %s: %s", making.c_str(), std::strerror(errno));
        return SPC_LIVE_ERR;
    }
    char why[512] = "";
    void *base = MAP_FAILED;
    // Every page of the file reserved now, not at its first write: in a full
    // folder (a small /dev/shm) that write would be a SIGBUS, here it is an
    // error the rank can report.
    int reserved = 0;
    if (!open_to_group(fd, group, why, sizeof why) ||
        (reserved = posix_fallocate(fd, 0, static_cast<off_t>(l.bytes))) != 0 ||
        (base = mmap(nullptr, l.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        if (why[0] == '\0') {
            std::snprintf(why, sizeof why, "%s", std::strerror(reserved != 0 ? reserved : errno));
        }
        say(message, size, "cannot make the live segment %s (%zu bytes): %s; live reading is off, the rank counts "
            "as without it", making.c_str(), l.bytes, why);
        close(fd);
        unlink(making.c_str());
        return SPC_LIVE_ERR;
    }
    auto *bytes = static_cast<unsigned char *>(base);
    auto *h = reinterpret_cast<spc_live_header *>(bytes);
    h->version = SPC_LIVE_VERSION;
    h->header_bytes = sizeof *h;
    h->file_bytes = l.bytes;
    h->num_counters = OMPI_SPC_NUM_COUNTERS;
    h->block_slots = SPC_BLOCK_SLOTS;
    h->block_bytes = spc::live::kBlockBytes;
    h->max_blocks = s.max_blocks;
    h->level_line_bytes = sizeof(spc_shared_line);
    h->catalogue_offset = l.catalogue;
    h->strings_offset = l.strings;
    h->strings_bytes = l.strings_bytes;
    h->final_offset = l.final_values;
    h->levels_offset = l.levels;
    h->levels_bytes = l.levels_bytes;
    h->blocks_offset = l.blocks;
    h->pid = getpid();
    h->start_time = start_time();
    h->uid = getuid();
    h->rank = h->size = -1;
    h->local_rank = -1;
    copy_text(h->program, sizeof h->program, program_invocation_short_name);
    h->timer_sampling = spc_timer_sampling();
    h->created_unix_ns = unix_ns();
    h->created_ticks = spc_ticks();
    std::memcpy(bytes + l.catalogue, entries, sizeof entries);
    std::memcpy(bytes + l.strings, pool.data(), pool.size());
    // The level lines: their current values into the file, then the file's
    // pages over the array.  Nothing else runs yet (load time, or MPI_Init
    // before any MPI traffic), so no level moves in between.
    if (levels_are_ours()) {
        std::memcpy(bytes + l.levels, &spc_level_pages_, sizeof(spc_level_pages::lines));
        h->levels_live = mmap(&spc_level_pages_, sizeof(spc_level_pages), PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(l.levels)) != MAP_FAILED;
    }
    std::memcpy(h->magic, SPC_LIVE_MAGIC, sizeof h->magic);
    if (rename(making.c_str(), path.c_str()) != 0) {
        say(message, size, "cannot name the live segment %s: %s", path.c_str(), std::strerror(errno));
        unlink(making.c_str());  // the mappings stay valid; readers just cannot find it
    }
    s.fd = fd;
    s.base = bytes;
    s.bytes = l.bytes;
    s.header = h;
    s.blocks = reinterpret_cast<uint64_t *>(bytes + l.blocks);
    s.path = path;
    s.owner = true;
    static std::once_flag fork_hook;
    std::call_once(fork_hook, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
    s.on.store(true, std::memory_order_release);
    if (!h->levels_live) {
        say(message, size, "levels are not published in %s: this program holds its own copy of spc_shared "
            "(build it with -fPIC)", path.c_str());
    }
    return SPC_SUCCESS;
}

// A process tries once: a start that failed said why, and a later one (MPI_Init's, after the
// library's load) fails without a word, so a rank says it once.
int start_locked(Segment &s, const char *dir, const char *group, unsigned threads, char *message, size_t size)
{
    if (s.on.load(std::memory_order_relaxed)) {
        return SPC_SUCCESS;
    }
    if (s.failed) {
        return SPC_LIVE_ERR;
    }
    const int rc = make_segment(s, dir, group, threads, message, size);
    s.failed = rc != SPC_SUCCESS;
    return rc;
}

// Sets the segment's job, rank and node and names its file after them in
// folder (a rename, which readers never see half done).
void identify(Segment &s, const std::string &folder, const char *jobid, int rank, int size, const char *node,
              char *message, size_t message_size)
{
    spc_live_header *h = s.header;
    char host[sizeof h->node] = "";
    if (node == nullptr) {
        gethostname(host, sizeof host - 1);
    }
    // The batch system's identity before the job id: a reader takes a file
    // whose job id is set as named, and must not meet these half written.
    // x86 keeps stores in order; the signal fence keeps the compiler from
    // moving them (a thread fence is what ThreadSanitizer cannot check).
    int local_rank = -1;
    spc_batch_identity(h->batch_job, sizeof h->batch_job, h->step, sizeof h->step, &local_rank);
    h->local_rank = local_rank;
    std::atomic_signal_fence(std::memory_order_release);
    copy_text(h->jobid, sizeof h->jobid, jobid);
    copy_text(h->node, sizeof h->node, node != nullptr ? node : host);
    h->rank = rank;
    h->size = size;
    std::string name = folder + "/" SPC_LIVE_FILE_PREFIX + std::to_string(getuid()) + "." + h->jobid + "." +
                       std::to_string(rank);
    if (name == s.path) {
        return;
    }
    if (rename(s.path.c_str(), name.c_str()) == 0) {
        s.path = name;
    } else {
        say(message, message_size, "cannot rename the live segment %s to %s: %s; it keeps its name",
            s.path.c_str(), name.c_str(), std::strerror(errno));
    }
}

bool truthy(const char *value)
{
    if (value == nullptr) {
        return false;
    }
    // As Open MPI reads a boolean MCA parameter: a number, or a word.
    char *end = nullptr;
    long number = std::strtol(value, &end, 10);
    if (end != value && *end == '\0') {
        return number != 0;
    }
    for (const char *word : {"true", "yes", "enabled", "t", "y"}) {
        if (strcasecmp(value, word) == 0) {
            return true;
        }
    }
    return false;
}

// mpi_spc_live from the environment, at load time.  A rank that mpirun
// started also knows its job and rank from the environment Open MPI gives
// it: the segment is named after them at once, so readers see the job
// from its start (as "starting" until MPI_Init).
__attribute__((constructor)) void start_from_environment()
{
    if (!truthy(std::getenv(SPC_LIVE_ENV_PREFIX SPC_LIVE_PARAM))) {
        return;
    }
    const char *dir = std::getenv(SPC_LIVE_ENV_PREFIX SPC_LIVE_DIR_PARAM);
    char message[1024] = "";
    if (spc_live_start(dir, std::getenv(SPC_LIVE_ENV_PREFIX SPC_LIVE_GROUP_PARAM), message, sizeof message) ==
        SPC_SUCCESS) {
        const char *jobid = std::getenv("OMPI_MCA_ess_base_jobid");
        const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
        const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
        Segment &s = segment();
        std::lock_guard<std::mutex> lock(s.mutex);
        if (jobid != nullptr && rank != nullptr && size != nullptr && s.owner) {
            identify(s, dir != nullptr && dir[0] != '\0' ? dir : SPC_LIVE_DEFAULT_DIR, jobid, std::atoi(rank),
                     std::atoi(size), nullptr, message, sizeof message);
        }
    }
    if (message[0] != '\0') {
        std::fprintf(stderr, "spc: " SPC_LIVE_PARAM ": %s\n", message);
    }
}

// A process that never reached MPI_Init (mpirun, a tool) leaves no segment.
__attribute__((destructor)) void remove_unnamed()
{
    Segment &s = segment();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.owner && s.header != nullptr &&
        __atomic_load_n(&s.header->state, __ATOMIC_RELAXED) == SPC_LIVE_STARTING) {
        unlink(s.path.c_str());
    }
}

}  // namespace

namespace spc::live {

Block acquire()
{
    Segment &s = segment();
    if (!s.on.load(std::memory_order_acquire)) {
        return {nullptr, false};
    }
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.free_blocks.empty()) {
        uint64_t *block = s.free_blocks.back();
        s.free_blocks.pop_back();
        return {block, false};
    }
    spc_live_header *h = s.header;
    uint64_t used = __atomic_load_n(&h->blocks_used, __ATOMIC_RELAXED);
    // the bound is the process's own copy, never the shared file's
    if (used >= s.max_blocks) {
        if (__atomic_fetch_add(&h->blocks_overflow, 1, __ATOMIC_RELAXED) == 0) {
            std::fprintf(stderr, "spc: the live segment %s holds %u threads; later threads count "
                         "where readers cannot see them\n", s.path.c_str(), s.max_blocks);
        }
        return {nullptr, false};
    }
    // The file's pages start as zeros: the block is ready to be summed.
    uint64_t *block = s.blocks + used * (kBlockBytes / sizeof(uint64_t));
    __atomic_store_n(&h->blocks_used, used + 1, __ATOMIC_RELEASE);
    return {block, true};
}

bool identity(Identity &who)
{
    Segment &s = segment();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.on.load(std::memory_order_relaxed) || !s.owner ||
        __atomic_load_n(&s.header->state, __ATOMIC_ACQUIRE) != SPC_LIVE_RUNNING) {
        return false;
    }
    struct stat st;
    if (fstat(s.fd, &st) != 0) {
        return false;
    }
    who.folder = s.path.substr(0, s.path.rfind('/'));
    who.jobid = s.header->jobid;
    who.rank = s.header->rank;
    who.size = s.header->size;
    who.gid = st.st_gid;
    who.mode = st.st_mode & 0777;
    return true;
}

bool release(uint64_t *block)
{
    Segment &s = segment();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.blocks == nullptr || block < s.blocks ||
        block >= s.blocks + s.max_blocks * (kBlockBytes / sizeof(uint64_t))) {
        return false;
    }
    if (s.on.load(std::memory_order_relaxed)) {
        s.free_blocks.push_back(block);
    }
    return true;
}

}  // namespace spc::live

extern "C" {

int spc_live_start(const char *dir, const char *group, char *message, size_t message_size)
{
    say(message, message_size, "%s", "");
    Segment &s = segment();
    std::lock_guard<std::mutex> lock(s.mutex);
    return start_locked(s, dir, group, 0, message, message_size);
}

int spc_live_publish(const spc_live_identity *who, char *message, size_t message_size)
{
    say(message, message_size, "%s", "");
    Segment &s = segment();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (who == nullptr || who->jobid == nullptr) {
        say(message, message_size, "spc_live_publish: no identity");
        return SPC_LIVE_ERR;
    }
    if (start_locked(s, who->dir, who->group, who->threads, message, message_size) != SPC_SUCCESS || !s.owner) {
        return SPC_LIVE_ERR;
    }
    spc_live_header *h = s.header;
    // Named after the job and rank, in the folder asked for now.
    identify(s, who->dir != nullptr && who->dir[0] != '\0' ? who->dir : SPC_LIVE_DEFAULT_DIR, who->jobid,
             who->rank, who->size, who->node, message, message_size);
    h->ticks_per_second = static_cast<uint64_t>(spc_ticks_per_second());
    h->timer_sampling = spc_timer_sampling();
    h->running_unix_ns = unix_ns();  // MPI_Init's time, for the readers' time since MPI_Init (live.h)
    __atomic_store_n(&h->state, SPC_LIVE_RUNNING, __ATOMIC_RELEASE);
    return SPC_SUCCESS;
}

void spc_live_not_counted(int id)
{
    if (id < 0 || id >= OMPI_SPC_NUM_COUNTERS) {
        return;
    }
    Segment &s = segment();
    std::lock_guard<std::mutex> lock(s.mutex);
    not_counted[id].store(true, std::memory_order_relaxed);
    if (s.on.load(std::memory_order_relaxed) && s.owner) {
        auto *entries = reinterpret_cast<spc_live_counter *>(s.base + s.header->catalogue_offset);
        __atomic_store_n(&entries[id].flags, SPC_LIVE_NOT_COUNTED, __ATOMIC_RELEASE);
    }
}

void spc_live_finalize(int keep)
{
    spc::live::peers_finalize(keep != 0);  // takes its own lock, and the segment's (identity)
    Segment &s = segment();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.on.load(std::memory_order_relaxed) || !s.owner) {
        return;
    }
    spc_live_header *h = s.header;
    auto *final_values = reinterpret_cast<uint64_t *>(s.base + h->final_offset);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        __atomic_store_n(&final_values[id], spc_read_raw(id), __ATOMIC_RELAXED);
    }
    h->timer_sampling = spc_timer_sampling();
    h->finalized_unix_ns = unix_ns();
    __atomic_store_n(&h->state, SPC_LIVE_FINALIZED, __ATOMIC_RELEASE);
    if (!keep) {
        unlink(s.path.c_str());
    }
}

void spc_batch_identity(char *job, size_t job_size, char *step, size_t step_size, int *local_rank)
{
    const char *slurm_job = std::getenv("SLURM_JOB_ID");
    const char *slurm_step = std::getenv("SLURM_STEP_ID");
    const bool slurm = slurm_job != nullptr && slurm_job[0] != '\0';
    copy_text(job, job_size, slurm ? slurm_job : "");
    copy_text(step, step_size, !slurm ? "" : slurm_step != nullptr && slurm_step[0] != '\0' ? slurm_step : "batch");
    const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (local == nullptr && slurm && std::getenv("PMIX_RANK") != nullptr &&
        std::getenv("OMPI_COMM_WORLD_RANK") == nullptr) {
        local = std::getenv("SLURM_LOCALID");  // launched by srun: Slurm's PMIx server's local rank
    }
    char *end = nullptr;
    long value = local != nullptr ? std::strtol(local, &end, 10) : -1;
    *local_rank = local != nullptr && end != local && *end == '\0' && value >= 0 && value < (1L << 30)
                      ? static_cast<int>(value) : -1;
}

const char *spc_live_path(void)
{
    Segment &s = segment();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.on.load(std::memory_order_relaxed) ? s.path.c_str() : "";
}

}  // extern "C"
