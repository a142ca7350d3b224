// The per-peer files' reader (matrix.hpp).
#include "matrix.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace spc_live {

namespace {

// <prefix><uid>.<jobid>.<rank>.<what>, split; false if name is not one.
struct Name {
    std::string job, what;
    int rank = -1;
};
bool parse_name(const std::string &name, Name &out)
{
    const size_t prefix = std::strlen(SPC_PEERS_FILE_PREFIX);
    if (name.compare(0, prefix, SPC_PEERS_FILE_PREFIX) != 0) {
        return false;
    }
    const size_t uid_end = name.find('.', prefix);
    const size_t job_end = uid_end == std::string::npos ? uid_end : name.find('.', uid_end + 1);
    const size_t rank_end = job_end == std::string::npos ? job_end : name.find('.', job_end + 1);
    if (rank_end == std::string::npos) {
        return false;
    }
    out.job = name.substr(uid_end + 1, job_end - uid_end - 1);
    out.what = name.substr(rank_end + 1);
    char *end = nullptr;
    const std::string rank = name.substr(job_end + 1, rank_end - job_end - 1);
    out.rank = static_cast<int>(std::strtol(rank.c_str(), &end, 10));
    return !rank.empty() && *end == '\0' && !out.what.empty();
}

std::vector<std::string> names_in(const std::string &dir)
{
    DIR *folder = opendir(dir.c_str());
    if (folder == nullptr) {
        throw Error(dir + ": " + std::strerror(errno));
    }
    std::vector<std::string> names;
    while (dirent *entry = readdir(folder)) {
        names.push_back(entry->d_name);
    }
    closedir(folder);
    std::sort(names.begin(), names.end());
    return names;
}

// One file mapped read-only and checked against its header.
class Mapped {
public:
    // false if the file is gone (folded and removed since it was listed)
    bool open(const std::string &path)
    {
        path_ = path;
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            if (errno == ENOENT) {
                return false;
            }
            throw Error(path + ": " + std::strerror(errno));
        }
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            throw Error(path + ": not a regular file");
        }
        bytes_ = static_cast<size_t>(st.st_size);
        if (bytes_ < sizeof(spc_live_peers_header)) {
            ::close(fd);
            throw Error(path + ": too short for a per-peer file (" + std::to_string(bytes_) + " bytes)");
        }
        void *base = mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
        ::close(fd);
        if (base == MAP_FAILED) {
            throw Error(path + ": " + std::strerror(errno));
        }
        base_ = static_cast<const unsigned char *>(base);
        check();
        return true;
    }
    ~Mapped()
    {
        if (base_ != nullptr) {
            munmap(const_cast<unsigned char *>(base_), bytes_);
        }
    }
    const spc_live_peers_header *header() const { return reinterpret_cast<const spc_live_peers_header *>(base_); }
    uint64_t word(const uint64_t *at) const { return __atomic_load_n(at, __ATOMIC_ACQUIRE); }
    const uint64_t *arrays() const { return reinterpret_cast<const uint64_t *>(base_ + header()->arrays_offset); }
    const int32_t *ranks() const { return reinterpret_cast<const int32_t *>(base_ + header()->ranks_offset); }

private:
    void fail(const std::string &why) const { throw Error(path_ + ": " + why); }
    void check() const
    {
        const spc_live_peers_header *h = header();
        if (std::memcmp(h->magic, SPC_PEERS_MAGIC, sizeof h->magic) != 0) {
            fail("not a per-peer file of ompi-spc (no " SPC_PEERS_MAGIC " magic)");
        }
        if (h->version != SPC_PEERS_VERSION) {
            fail("format version " + std::to_string(h->version) + ", this reader reads version " +
                 std::to_string(SPC_PEERS_VERSION));
        }
        if (h->header_bytes != sizeof *h || h->num_peer_counters != SPC_NUM_PEER_COUNTERS) {
            fail(std::to_string(h->num_peer_counters) + " per-peer arrays, this reader knows " +
                 std::to_string(SPC_NUM_PEER_COUNTERS) + " (a build of another catalogue)");
        }
        const uint64_t length = h->peers > 0 ? static_cast<uint64_t>(h->peers) : 0;
        const uint64_t arrays_end = h->arrays_offset + sizeof(uint64_t) * SPC_NUM_PEER_COUNTERS * length;
        const bool storage = h->kind == SPC_PEERS_STORAGE;
        if ((!storage && h->kind != SPC_PEERS_MATRIX) || h->peers <= 0 || h->size <= 0 || h->rank < 0 ||
            h->rank >= h->size || h->file_bytes != bytes_ || h->arrays_offset % 8 != 0 || arrays_end > bytes_ ||
            (storage && (h->ranks_offset % 4 != 0 || h->ranks_offset + 4 * length > bytes_)) ||
            (!storage && h->peers != h->size)) {
            fail("damaged: its header does not fit its " + std::to_string(bytes_) + " bytes");
        }
    }
    std::string path_;
    const unsigned char *base_ = nullptr;
    size_t bytes_ = 0;
};

struct Journal {
    uint64_t serial, cell, old, folds;
    bool operator==(const Journal &o) const
    {
        return serial == o.serial && cell == o.cell && old == o.old && folds == o.folds;
    }
};
Journal journal_of(const Mapped &m)
{
    const spc_live_peers_header *h = m.header();
    return {m.word(&h->fold_serial), m.word(&h->fold_cell), m.word(&h->fold_old), m.word(&h->folds)};
}

// Whether cell of the storage with serial is already in the matrix (live.h:
// the fold's journal), given the matrix cell it goes to.
bool folded_already(const Journal &j, uint32_t serial, uint64_t cell, uint64_t matrix_value)
{
    if (j.serial != serial) {
        return false;
    }
    const uint64_t upto = j.cell & ~SPC_PEERS_FOLD_PREPARING;
    if (cell != upto) {
        return cell < upto;
    }
    return (j.cell & SPC_PEERS_FOLD_PREPARING) == 0 && matrix_value != j.old;
}

// Rank's part of the matrix, into out (its size x arrays x size values):
// its matrix file plus its named storages.  false if a fold ran meanwhile.
bool read_rank(const std::string &dir, const std::string &matrix_name, const std::vector<std::string> &storages,
               Matrix &out, int rank, std::vector<uint64_t> &part, int &counted, int &unnamed,
               uint64_t &unnamed_messages)
{
    const size_t size = static_cast<size_t>(out.size);
    part.assign(SPC_NUM_PEER_COUNTERS * size, 0);
    counted = unnamed = 0;
    unnamed_messages = 0;
    Mapped matrix;
    const bool have_matrix = !matrix_name.empty() && matrix.open(dir + "/" + matrix_name);
    Journal before{};
    if (have_matrix) {
        if (matrix.header()->size != out.size || std::string(matrix.header()->jobid) != out.jobid) {
            throw Error(dir + "/" + matrix_name + ": of job " + matrix.header()->jobid + " of " +
                        std::to_string(matrix.header()->size) + " ranks, not of job " + out.jobid + " of " +
                        std::to_string(out.size));
        }
        before = journal_of(matrix);
        for (size_t i = 0; i < part.size(); ++i) {
            part[i] = matrix.word(&matrix.arrays()[i]);
        }
    }
    for (const std::string &name : storages) {
        Mapped storage;
        if (!storage.open(dir + "/" + name)) {
            return false;  // folded and removed since listed: read again
        }
        const spc_live_peers_header *h = storage.header();
        if (h->size != out.size || std::string(h->jobid) != out.jobid || h->rank != rank) {
            throw Error(dir + "/" + name + ": its header names rank " + std::to_string(h->rank) + " of job " +
                        h->jobid + ", not its name's");
        }
        const uint64_t state = storage.word(&h->state);
        const size_t length = static_cast<size_t>(h->peers);
        if (state == SPC_PEERS_FOLDED) {
            continue;
        }
        if (state != SPC_PEERS_NAMED) {
            ++unnamed;
            for (int array = 0; array < SPC_NUM_PEER_COUNTERS; ++array) {
                if (std::strstr(spc_live_peer_names[array], "MESSAGES") != nullptr) {
                    for (size_t peer = 0; peer < length; ++peer) {
                        unnamed_messages += storage.word(&storage.arrays()[array * length + peer]);
                    }
                }
            }
            continue;
        }
        ++counted;
        for (size_t cell = 0; cell < SPC_NUM_PEER_COUNTERS * length; ++cell) {
            const uint64_t value = storage.word(&storage.arrays()[cell]);
            const int32_t peer = storage.ranks()[cell % length];
            if (value == 0 || peer < 0 || peer >= out.size) {
                continue;  // a process of another job: the report leaves it out too
            }
            const size_t at = cell / length * size + static_cast<size_t>(peer);
            if (!folded_already(before, h->serial, cell, part[at])) {
                part[at] += value;
            }
        }
    }
    return !have_matrix || journal_of(matrix) == before;
}

}  // namespace

const char *const spc_live_peer_names[SPC_NUM_PEER_COUNTERS] = {
#define SPC_PER_PEER(name, kind, unit, description) #name,
#include "spc/catalogue.def"
};

std::vector<std::string> peer_files_of(const std::string &segment_path)
{
    const size_t slash = segment_path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : segment_path.substr(0, slash);
    const std::string base = segment_path.substr(slash == std::string::npos ? 0 : slash + 1);
    const size_t prefix = std::strlen(SPC_LIVE_FILE_PREFIX);
    if (base.compare(0, prefix, SPC_LIVE_FILE_PREFIX) != 0) {
        return {};
    }
    // ompi-spc.<uid>.<jobid>.<rank> -> ompi-spc-peers.<uid>.<jobid>.<rank>.
    const std::string stem = SPC_PEERS_FILE_PREFIX + base.substr(prefix) + ".";
    std::vector<std::string> paths;
    Name parsed;
    for (const std::string &name : names_in(dir)) {
        if (name.compare(0, stem.size(), stem) == 0 && parse_name(name, parsed)) {
            paths.push_back(dir + "/" + name);
        }
    }
    return paths;
}

std::vector<std::string> matrix_jobs(const std::string &dir)
{
    std::set<std::string> jobs;
    Name parsed;
    for (const std::string &name : names_in(dir)) {
        if (parse_name(name, parsed)) {
            jobs.insert(parsed.job);
        }
    }
    return {jobs.begin(), jobs.end()};
}

Matrix read_matrix(const std::string &dir, const std::string &job)
{
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) {
        throw Error(dir + ": " + std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        throw Error(dir + ": not a folder");
    }
    Matrix out;
    out.jobid = job;
    if (out.jobid.empty()) {
        const std::vector<std::string> jobs = matrix_jobs(dir);
        if (jobs.size() != 1) {
            std::string list;
            for (const std::string &j : jobs) {
                list += (list.empty() ? "" : ", ") + j;
            }
            throw Error(jobs.empty() ? dir + ": no per-peer files (a job writes them with --mca mpi_spc_live 1 "
                                             "and mpi_spc_attach naming traffic)"
                                     : dir + ": per-peer files of " + std::to_string(jobs.size()) +
                                           " jobs; name one with --job (" + list + ")");
        }
        out.jobid = jobs[0];
    }
    for (int attempt = 0;; ++attempt) {
        // by rank: its matrix file and its storages' files
        std::map<int, std::pair<std::string, std::vector<std::string>>> files;
        bool live_segments = false;
        Name parsed;
        for (const std::string &name : names_in(dir)) {
            if (parse_name(name, parsed) && parsed.job == out.jobid) {
                auto &mine = files[parsed.rank];
                if (parsed.what == SPC_PEERS_MATRIX_NAME) {
                    mine.first = name;
                } else {
                    mine.second.push_back(name);
                }
            } else if (name.compare(0, std::strlen(SPC_LIVE_FILE_PREFIX), SPC_LIVE_FILE_PREFIX) == 0 &&
                       name.find("." + out.jobid + ".") != std::string::npos) {
                live_segments = true;
            }
        }
        if (files.empty()) {
            throw Error(dir + ": no per-peer files of job " + out.jobid +
                        (live_segments ? " (its live segments are there: it ran without mpi_spc_attach naming "
                                         "traffic)"
                                       : ""));
        }
        // the job's size, from any of its files
        out.size = 0;
        for (const auto &rank : files) {
            const std::string name = !rank.second.first.empty() ? rank.second.first : rank.second.second.front();
            Mapped any;
            if (any.open(dir + "/" + name)) {
                out.size = any.header()->size;
                break;
            }
        }
        if (out.size == 0) {
            continue;  // all gone since listed (a finalize): list again
        }
        out.ranks.clear();
        out.value.assign(static_cast<size_t>(out.size) * SPC_NUM_PEER_COUNTERS * static_cast<size_t>(out.size), 0);
        out.storages = out.unnamed = 0;
        out.unnamed_messages = 0;
        bool consistent = true;
        std::vector<uint64_t> part;
        for (const auto &rank : files) {
            if (rank.first < 0 || rank.first >= out.size) {
                throw Error(dir + ": a per-peer file of job " + out.jobid + " names rank " +
                            std::to_string(rank.first) + " of " + std::to_string(out.size));
            }
            int counted, unnamed;
            uint64_t unnamed_messages;
            if (!read_rank(dir, rank.second.first, rank.second.second, out, rank.first, part, counted, unnamed,
                           unnamed_messages)) {
                consistent = false;
                break;
            }
            std::copy(part.begin(), part.end(),
                      out.value.begin() + static_cast<long>(static_cast<size_t>(rank.first) * part.size()));
            out.ranks.push_back(rank.first);
            out.storages += counted;
            out.unnamed += unnamed;
            out.unnamed_messages += unnamed_messages;
        }
        if (consistent) {
            return out;
        }
        if (attempt == 1000) {
            throw Error(dir + ": job " + out.jobid + " folded communicators all through 1,000 reads");
        }
    }
}

void write_matrix_csv(std::FILE *out, const Matrix &matrix)
{
    static const char *const kinds[] = SPC_MATRIX_KIND_NAMES;
    constexpr int kKinds = sizeof kinds / sizeof kinds[0];
    constexpr int kValues = SPC_NUM_PEER_COUNTERS / kKinds;
    static_assert(SPC_PEER_INTERNAL_OF(0) == kValues && SPC_PEER_ONE_SIDED_OF(0) == 2 * kValues,
                  "the user's arrays, then the internal ones, then the one-sided ones");
    std::fputs("rank,peer,kind", out);
    for (int v = 0; v < kValues; ++v) {
        std::fputc(',', out);
        spc_matrix_csv_column(out, spc_live_peer_names[v]);
    }
    std::fputc('\n', out);
    for (int rank : matrix.ranks) {
        for (int peer = 0; peer < matrix.size; ++peer) {
            for (int kind = 0; kind < kKinds; ++kind) {
                uint64_t any = 0;
                for (int v = 0; v < kValues; ++v) {
                    any |= matrix.at(rank, kind * kValues + v, peer);
                }
                if (any == 0) {
                    continue;
                }
                std::fprintf(out, "%d,%d,%s", rank, peer, kinds[kind]);
                for (int v = 0; v < kValues; ++v) {
                    std::fprintf(out, ",%llu", static_cast<unsigned long long>(matrix.at(rank, kind * kValues + v, peer)));
                }
                std::fputc('\n', out);
            }
        }
    }
}

}  // namespace spc_live
