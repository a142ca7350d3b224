// The reader of live counter segments: see reader.hpp, and spc/live.h for
// the format and why summing another process's blocks is safe.
#include "reader.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace spc_live {

namespace {

template <typename T>
T load(const T &word)
{
    return __atomic_load_n(&word, __ATOMIC_RELAXED);
}

// A C string field of the header, which the writer may be filling: never
// past its end.
std::string field(const char *text, size_t size) { return std::string(text, strnlen(text, size)); }

bool within(uint64_t offset, uint64_t length, uint64_t size) { return offset <= size && length <= size - offset; }

}  // namespace

const char *status_name(Status status)
{
    switch (status) {
    case Status::Starting: return "starting";
    case Status::Running: return "running";
    case Status::Finalized: return "finalized";
    case Status::Dead: return "dead";
    case Status::OtherNode: return "other-node";
    }
    return "?";
}

uint64_t unix_ns()
{
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

std::string this_node()
{
    char name[256] = "";
    gethostname(name, sizeof name - 1);
    return name;
}

bool process_alive(int64_t pid, uint64_t start_time)
{
    if (pid <= 0) {
        return false;
    }
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%lld/stat", static_cast<long long>(pid));
    FILE *f = std::fopen(path, "r");
    if (f == nullptr) {
        return false;
    }
    char text[1024];
    size_t n = std::fread(text, 1, sizeof text - 1, f);
    std::fclose(f);
    text[n] = '\0';
    const char *after_name = std::strrchr(text, ')');
    char state = '?';
    unsigned long long started = 0;
    if (after_name == nullptr ||
        std::sscanf(after_name + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                                    "%*d %*d %llu", &state, &started) != 2) {
        return false;
    }
    // A zombie has ended; another start time is another process with that pid.
    return state != 'Z' && state != 'X' && started == start_time;
}

Segment::Segment(const std::string &path) : path_(path)
{
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ < 0) {
        throw Error(path + ": " + std::strerror(errno));
    }
    struct stat st;
    if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd_);
        throw Error(path + ": not a regular file");
    }
    device_ = st.st_dev;
    inode_ = st.st_ino;
    owner_ = st.st_uid;
    bytes_ = static_cast<size_t>(st.st_size);
    auto fail = [this](const std::string &why) {
        if (base_ != nullptr) {
            munmap(const_cast<unsigned char *>(base_), bytes_);
        }
        close(fd_);
        throw Error(path_ + ": " + why);
    };
    if (bytes_ < sizeof(spc_live_header)) {
        fail("not a live counter segment (" + std::to_string(bytes_) + " bytes, shorter than its header)");
    }
    void *map = mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED) {
        fail(std::string("cannot map it: ") + std::strerror(errno));
    }
    base_ = static_cast<const unsigned char *>(map);
    const spc_live_header *h = header();
    if (std::memcmp(h->magic, SPC_LIVE_MAGIC, sizeof h->magic) != 0) {
        fail("not a live counter segment (no " SPC_LIVE_MAGIC " mark)");
    }
    if (h->version != SPC_LIVE_VERSION || h->header_bytes != sizeof(spc_live_header)) {
        fail("segment format " + std::to_string(h->version) + ", this reader reads format " +
             std::to_string(SPC_LIVE_VERSION));
    }
    if (h->file_bytes != bytes_) {
        fail("cut short or damaged: its header says " + std::to_string(h->file_bytes) + " bytes, the file has " +
             std::to_string(bytes_));
    }
    const uint64_t n = h->num_counters;
    if (n == 0 || n > 65536 || h->block_slots < n || h->block_bytes < h->block_slots * sizeof(uint64_t) ||
        h->block_bytes % sizeof(uint64_t) != 0 || h->max_blocks > (1u << 24) ||
        h->level_line_bytes < 3 * sizeof(uint64_t) || h->level_line_bytes % sizeof(uint64_t) != 0 ||
        !within(h->catalogue_offset, n * sizeof(spc_live_counter), bytes_) ||
        !within(h->strings_offset, h->strings_bytes, bytes_) || h->strings_bytes == 0 ||
        !within(h->final_offset, n * sizeof(uint64_t), bytes_) || h->final_offset % sizeof(uint64_t) != 0 ||
        !within(h->levels_offset, h->levels_bytes, bytes_) || h->levels_bytes < n * h->level_line_bytes ||
        h->levels_offset % sizeof(uint64_t) != 0 ||
        !within(h->blocks_offset, uint64_t{h->max_blocks} * h->block_bytes, bytes_) ||
        h->blocks_offset % sizeof(uint64_t) != 0) {
        fail("damaged: its layout does not fit the file");
    }
    const char *strings = reinterpret_cast<const char *>(base_ + h->strings_offset);
    if (strings[h->strings_bytes - 1] != '\0') {
        fail("damaged: its string table is not terminated");
    }
    auto text = [&](uint32_t offset) -> std::string {
        if (offset >= h->strings_bytes) {
            fail("damaged: a catalogue entry points outside the string table");
        }
        return strings + offset;
    };
    const auto *entries = reinterpret_cast<const spc_live_counter *>(base_ + h->catalogue_offset);
    for (uint64_t id = 0; id < n; ++id) {
        const spc_live_counter &e = entries[id];
        if (e.kind > SPC_KIND_HIGHWATERMARK ||
            (e.kind == SPC_KIND_HIGHWATERMARK && (e.level < 0 || static_cast<uint64_t>(e.level) >= n))) {
            fail("damaged: counter " + std::to_string(id) + " has no valid kind");
        }
        counters_.push_back({text(e.name), text(e.description), text(e.unit_name),
                             static_cast<spc_kind>(e.kind), e.kind == SPC_KIND_HIGHWATERMARK ? e.level : -1});
    }
    for (const Counter &c : counters_) {
        if (c.level >= 0 && counters_[c.level].kind != SPC_KIND_LEVEL) {
            fail("damaged: the watermark " + c.name + " does not watch a level");
        }
    }
}

Segment::~Segment()
{
    munmap(const_cast<unsigned char *>(base_), bytes_);
    close(fd_);
}

const spc_live_header *Segment::header() const { return reinterpret_cast<const spc_live_header *>(base_); }

uint64_t Segment::state() const { return __atomic_load_n(&header()->state, __ATOMIC_ACQUIRE); }
std::string Segment::jobid() const { return field(header()->jobid, sizeof header()->jobid); }
std::string Segment::node() const { return field(header()->node, sizeof header()->node); }
std::string Segment::program() const { return field(header()->program, sizeof header()->program); }
std::string Segment::batch_job() const { return field(header()->batch_job, sizeof header()->batch_job); }
std::string Segment::step() const { return field(header()->step, sizeof header()->step); }
int Segment::local_rank() const { return load(header()->local_rank); }
int Segment::rank() const { return load(header()->rank); }
int Segment::size() const { return load(header()->size); }
int64_t Segment::pid() const { return load(header()->pid); }
uint64_t Segment::blocks_used() const { return __atomic_load_n(&header()->blocks_used, __ATOMIC_ACQUIRE); }
uint64_t Segment::blocks_overflow() const { return load(header()->blocks_overflow); }
uint64_t Segment::created_ticks() const { return load(header()->created_ticks); }
uint64_t Segment::ticks_per_second() const { return load(header()->ticks_per_second); }

// The state first, with acquire: the time was stored before it.
uint64_t Segment::mpi_init_unix_ns() const { return state() == SPC_LIVE_STARTING ? 0 : load(header()->running_unix_ns); }

double Segment::since_mpi_init(const Values &v) const
{
    const uint64_t init = mpi_init_unix_ns();
    // final is set only from a FINALIZED state read with acquire: its time is there
    const uint64_t end = v.final ? load(header()->finalized_unix_ns) : v.unix_ns;
    return init == 0 || end < init ? -1 : static_cast<double>(end - init) / 1e9;
}

bool Segment::process_running() const { return process_alive(pid(), load(header()->start_time)); }

Status Segment::status() const
{
    const uint64_t s = state();
    if (s == SPC_LIVE_FINALIZED) {
        return Status::Finalized;
    }
    if (!node().empty() && node() != this_node()) {
        return Status::OtherNode;
    }
    if (!process_running()) {
        return Status::Dead;
    }
    return s == SPC_LIVE_RUNNING ? Status::Running : Status::Starting;
}

bool Segment::counted(int id) const
{
    const auto *entries = reinterpret_cast<const spc_live_counter *>(base_ + header()->catalogue_offset);
    return id >= 0 && static_cast<size_t>(id) < counters_.size() &&
           (__atomic_load_n(&entries[id].flags, __ATOMIC_ACQUIRE) & SPC_LIVE_NOT_COUNTED) == 0;
}

int Segment::find(const std::string &name) const
{
    const std::string prefix = SPC_COUNTER_PREFIX;
    for (size_t id = 0; id < counters_.size(); ++id) {
        const std::string &full = counters_[id].name;
        if (strcasecmp(full.c_str(), name.c_str()) == 0 ||
            (full.compare(0, prefix.size(), prefix) == 0 && strcasecmp(full.c_str() + prefix.size(), name.c_str()) == 0)) {
            return static_cast<int>(id);
        }
    }
    return -1;
}

void Segment::check_size() const
{
    struct stat st;
    if (fstat(fd_, &st) != 0 || static_cast<size_t>(st.st_size) < bytes_) {
        // Reading the lost pages would fault: refuse instead.
        throw Error(path_ + ": cut short while being read");
    }
}

Values Segment::read() const
{
    check_size();
    const spc_live_header *h = header();
    const size_t n = counters_.size();
    Values v;
    v.raw.assign(n, 0);
    v.ticks = spc_ticks();
    v.unix_ns = unix_ns();
    v.levels = h->levels_live != 0;
    if (state() == SPC_LIVE_FINALIZED) {
        const auto *final_values = reinterpret_cast<const uint64_t *>(base_ + h->final_offset);
        for (size_t id = 0; id < n; ++id) {
            v.raw[id] = load(final_values[id]);
        }
        v.final = true;
        return v;
    }
    // blocks_used is stored with release after its block is ready.
    const uint64_t used = __atomic_load_n(&h->blocks_used, __ATOMIC_ACQUIRE);
    if (used > h->max_blocks) {
        throw Error(path_ + ": damaged: " + std::to_string(used) + " thread blocks in use of " +
                    std::to_string(h->max_blocks));
    }
    const unsigned char *blocks = base_ + h->blocks_offset;
    for (uint64_t b = 0; b < used; ++b) {
        const auto *block = reinterpret_cast<const uint64_t *>(blocks + b * h->block_bytes);
        for (size_t id = 0; id < n; ++id) {
            v.raw[id] += load(block[id]);
        }
    }
    auto line = [&](size_t id) {
        return reinterpret_cast<const uint64_t *>(base_ + h->levels_offset + id * h->level_line_bytes);
    };
    for (size_t id = 0; id < n; ++id) {
        switch (counters_[id].kind) {
        case SPC_KIND_LEVEL:
            v.raw[id] = load(line(id)[0]);
            break;
        case SPC_KIND_HIGHWATERMARK:
            v.raw[id] = load(line(counters_[id].level)[2]);  // high[0]: after value and reader_slots
            break;
        default:
            v.raw[id] += load(line(id)[0]);  // the atomic storage mode's counter
            break;
        }
    }
    return v;
}

uint64_t Segment::converted(int id, uint64_t raw) const
{
    const spc_live_header *h = header();
    if (counters_[id].kind != SPC_KIND_TIMER || h->ticks_per_second == 0) {
        return counters_[id].kind == SPC_KIND_TIMER ? 0 : raw;
    }
    // spc_convert's own arithmetic, so the numbers agree to the microsecond.
    unsigned __int128 ticks = static_cast<unsigned __int128>(raw) * std::max<uint64_t>(1, h->timer_sampling);
    return static_cast<uint64_t>(ticks * 1000000u / h->ticks_per_second);
}

double Segment::seconds(int id, uint64_t raw) const
{
    const spc_live_header *h = header();
    if (counters_[id].kind != SPC_KIND_TIMER) {
        return static_cast<double>(raw);
    }
    if (h->ticks_per_second == 0) {
        return 0;
    }
    return static_cast<double>(raw) * static_cast<double>(std::max<uint64_t>(1, h->timer_sampling)) /
           static_cast<double>(h->ticks_per_second);
}

Scan scan(const std::string &dir, bool all_nodes)
{
    Scan found;
    DIR *folder = opendir(dir.c_str());
    if (folder == nullptr) {
        found.errors.push_back(dir + ": " + std::strerror(errno));
        return found;
    }
    std::vector<std::string> names;
    while (dirent *entry = readdir(folder)) {
        if (std::strncmp(entry->d_name, SPC_LIVE_FILE_PREFIX, std::strlen(SPC_LIVE_FILE_PREFIX)) == 0) {
            names.push_back(entry->d_name);
        }
    }
    closedir(folder);
    std::sort(names.begin(), names.end());
    const std::string here = this_node();
    for (const std::string &name : names) {
        struct stat st;
        const std::string path = dir + "/" + name;
        if (lstat(path.c_str(), &st) == 0 && st.st_uid != geteuid() && access(path.c_str(), R_OK) != 0) {
            ++found.others;
            continue;
        }
        try {
            auto segment = std::make_unique<Segment>(dir + "/" + name);
            if (!all_nodes && !segment->node().empty() && segment->node() != here) {
                continue;
            }
            found.segments.push_back(std::move(segment));
        } catch (const Error &error) {
            // A file that vanished between listing and opening is a job that ended.
            if (access((dir + "/" + name).c_str(), F_OK) == 0) {
                found.errors.push_back(error.what());
            }
        }
    }
    return found;
}

Status Job::status() const
{
    bool any_dead = false, any_finalized = false, any_other = false;
    for (const Segment *s : ranks) {
        switch (s->status()) {
        case Status::Running: return Status::Running;
        case Status::Starting: return Status::Starting;
        case Status::Dead: any_dead = true; break;
        case Status::Finalized: any_finalized = true; break;
        case Status::OtherNode: any_other = true; break;
        }
    }
    return any_dead ? Status::Dead : any_other ? Status::OtherNode : any_finalized ? Status::Finalized : Status::Dead;
}

std::vector<Job> jobs(const Scan &found)
{
    std::map<std::string, Job> by_key;
    for (const auto &segment : found.segments) {
        const bool named = !segment->jobid().empty();
        // A process that does not know its job yet is a job of its own.
        std::string key = named ? "j" + segment->jobid() : "p" + std::to_string(segment->pid());
        Job &job = by_key[key];
        job.jobid = named ? segment->jobid() : "";
        job.program = segment->program();
        job.size = std::max(job.size, named ? segment->size() : 1);
        job.ranks.push_back(segment.get());
    }
    std::vector<Job> out;
    for (auto &[key, job] : by_key) {
        std::sort(job.ranks.begin(), job.ranks.end(),
                  [](const Segment *a, const Segment *b) { return a->rank() < b->rank(); });
        out.push_back(std::move(job));
    }
    return out;
}

}  // namespace spc_live
