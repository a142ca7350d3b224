// Per-peer arrays in shared files (spc/live.h, "Per-peer arrays in shared
// files"): while the rank's peer files are on, a communicator's or window's
// storage is a MAP_SHARED file beside the live segment, so the arrays the
// fast path adds into are readable from outside, also after a SIGKILL.  A
// freed storage is folded into the rank's matrix file before its file goes.
#include "live_internal.hpp"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "internal.hpp"
#include "spc/live.h"

namespace {

struct File {
    unsigned char *base = nullptr;
    size_t bytes = 0;
    std::string path;
    std::string making;  // its name until published
    spc_live_peers_header *header = nullptr;
};

struct Peers {
    std::mutex mutex;            // guards everything here
    bool on = false;             // spc_live_peers_start succeeded
    bool removed = false;        // MPI_Finalize removed the files (not kept)
    spc::live::Identity who;
    std::string stem;            // <folder>/<prefix><uid>.<jobid>.<rank>.
    File matrix;
    uint32_t next_serial = 1;
    std::unordered_map<const spc_comm *, File> storages;
    bool said = false;           // a failure was said once
    void (*created)(spc_comm *) = nullptr;
};

Peers &peers()
{
    static Peers *instance = new Peers;  // never destroyed: communicators go late
    return *instance;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void say(char *message, size_t size, const std::string &text)
{
    if (message != nullptr && size > 0) {
        std::snprintf(message, size, "%s", text.c_str());
    }
}

// A file of bytes in the folder, header filled but for what the caller adds:
// made under a name readers skip, reserved (a full folder is an error here,
// not a SIGBUS at the first add), then renamed once its magic is written.
bool make_file(Peers &p, const std::string &what, size_t bytes, uint32_t kind, int length, uint32_t serial,
               File &file, std::string &why)
{
    const std::string path = p.stem + what;
    const std::string making = p.who.folder + "/." SPC_PEERS_FILE_PREFIX + std::to_string(getpid()) + "." + what;
    unlink(making.c_str());
    const int fd = open(making.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        why = "cannot create " + making + ": " + std::strerror(errno);
        return false;
    }
    int reserved = 0;
    void *base = MAP_FAILED;
    // the segment's group and mode: whoever may read the counters may read these
    if (fchown(fd, static_cast<uid_t>(-1), p.who.gid) != 0 || fchmod(fd, p.who.mode) != 0 ||
        (reserved = posix_fallocate(fd, 0, static_cast<off_t>(bytes))) != 0 ||
        (base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        why = "cannot make " + path + " (" + std::to_string(bytes) + " bytes): " +
              std::strerror(reserved != 0 ? reserved : errno);
        close(fd);
        unlink(making.c_str());
        return false;
    }
    close(fd);  // the mapping keeps the file
    auto *h = static_cast<spc_live_peers_header *>(base);
    h->version = SPC_PEERS_VERSION;
    h->header_bytes = sizeof *h;
    h->file_bytes = bytes;
    h->kind = kind;
    h->num_peer_counters = SPC_NUM_PEER_COUNTERS;
    h->peers = length;
    h->rank = p.who.rank;
    h->size = p.who.size;
    h->serial = serial;
    std::snprintf(h->jobid, sizeof h->jobid, "%s", p.who.jobid.c_str());
    h->pid = getpid();
    file = {static_cast<unsigned char *>(base), bytes, path, making, h};
    return true;
}

// Its magic last, then its name: a reader never meets a half-made header.
bool publish(File &file, std::string &why)
{
    std::memcpy(file.header->magic, SPC_PEERS_MAGIC, sizeof file.header->magic);
    if (rename(file.making.c_str(), file.path.c_str()) != 0) {
        why = "cannot name " + file.path + ": " + std::strerror(errno);
        unlink(file.making.c_str());
        munmap(file.base, file.bytes);
        return false;
    }
    return true;
}

// spc_live_peers_test_stop_fold: the stores of folds left before the
// process ends there (-1: never), a kill -9 at a known point for the tests.
long stores_left = -1;

void store(uint64_t *at, uint64_t value)
{
    if (stores_left == 0) {
        _exit(0);
    }
    if (stores_left > 0) {
        --stores_left;
    }
    __atomic_store_n(at, value, __ATOMIC_RELEASE);
}

uint64_t *arrays(const File &file)
{
    return reinterpret_cast<uint64_t *>(file.base + file.header->arrays_offset);
}

// Adds storage's arrays into the matrix by each peer's rank in the job,
// journalling each cell before its add (live.h): a reader of a job killed
// here counts every cell once.  The caller holds the lock.
void fold(Peers &p, const File &storage)
{
    spc_live_peers_header *m = p.matrix.header;
    const auto *ranks = reinterpret_cast<const int32_t *>(storage.base + storage.header->ranks_offset);
    const uint64_t *from = arrays(storage);
    uint64_t *to = arrays(p.matrix);
    const size_t length = static_cast<size_t>(storage.header->peers);
    // "cells before 0 are in, cell 0 is not": no cell of the last fold counts
    store(&m->fold_cell, SPC_PEERS_FOLD_PREPARING);
    store(&m->fold_serial, storage.header->serial);
    for (size_t cell = 0; cell < SPC_NUM_PEER_COUNTERS * length; ++cell) {
        const uint64_t value = __atomic_load_n(&from[cell], __ATOMIC_RELAXED);
        const int32_t rank = ranks[cell % length];
        if (value == 0 || rank < 0 || rank >= m->peers) {
            continue;
        }
        uint64_t *target = &to[cell / length * static_cast<size_t>(m->peers) + static_cast<size_t>(rank)];
        const uint64_t old = __atomic_load_n(target, __ATOMIC_RELAXED);
        // three steps, so that fold_old is never read with another cell's
        // number: "before cell, all in; cell not", its old value, "cell in
        // if its value is no longer old" (a value > 0 only grows it)
        store(&m->fold_cell, SPC_PEERS_FOLD_PREPARING | cell);
        store(&m->fold_old, old);
        store(&m->fold_cell, cell);
        store(target, old + value);
    }
    store(&storage.header->state, SPC_PEERS_FOLDED);
    store(&m->fold_serial, 0);
    store(&m->folds, m->folds + 1);
}

// A forked child must not count into its parent's files: each mapping
// becomes a private copy at the same address (the storages' pointers stay
// valid), and the child neither folds nor removes anything.
void after_fork_in_child()
{
    Peers &p = peers();
    if (!p.on) {
        return;
    }
    auto privatise = [](const File &file) {
        void *copy = std::malloc(file.bytes);
        if (copy == nullptr) {
            return;
        }
        std::memcpy(copy, file.base, file.bytes);
        if (mmap(file.base, file.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
            MAP_FAILED) {
            std::memcpy(file.base, copy, file.bytes);
        }
        std::free(copy);
    };
    for (const auto &storage : p.storages) {
        privatise(storage.second);
    }
    privatise(p.matrix);
    p.removed = true;
}

}  // namespace

namespace spc::live {

bool peers_on()
{
    Peers &p = peers();
    std::lock_guard<std::mutex> lock(p.mutex);
    return p.on && !p.removed;
}

spc_comm *peers_create(int length, size_t storage_bytes)
{
    Peers &p = peers();
    void (*created)(spc_comm *) = nullptr;
    spc_comm *comm = nullptr;
    {
        std::lock_guard<std::mutex> lock(p.mutex);
        if (!p.on || p.removed || length <= 0) {
            return nullptr;  // no peers: nothing for a matrix
        }
        const size_t ranks_offset = round_up(sizeof(spc_live_peers_header), 64);
        const size_t comm_offset = round_up(ranks_offset + sizeof(int32_t) * static_cast<size_t>(length), 64);
        const uint32_t serial = p.next_serial++;
        File file;
        std::string why;
        if (!make_file(p, std::to_string(serial), comm_offset + storage_bytes, SPC_PEERS_STORAGE, length, serial,
                       file, why)) {
            if (!p.said) {
                std::fprintf(stderr, "spc: %s; this communicator's per-peer traffic is not readable live\n",
                             why.c_str());
                p.said = true;
            }
            return nullptr;
        }
        file.header->ranks_offset = ranks_offset;
        file.header->arrays_offset = comm_offset + sizeof(spc_comm);
        if (!publish(file, why)) {
            return nullptr;
        }
        comm = reinterpret_cast<spc_comm *>(file.base + comm_offset);  // zero pages: a zeroed storage
        p.storages.emplace(comm, file);
        created = p.created;
    }
    // outside the lock: the callback names the storage (spc_comm_live_name)
    comm->peers = length;
    comm->peer = reinterpret_cast<uint64_t *>(comm + 1);
    if (created != nullptr) {
        created(comm);
    }
    return comm;
}

bool peers_destroy(spc_comm *comm)
{
    Peers &p = peers();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto found = p.storages.find(comm);
    if (found == p.storages.end()) {
        return false;
    }
    File file = found->second;
    p.storages.erase(found);
    if (!p.removed) {
        // an unnamed storage cannot be placed: it stays, and readers say so
        if (__atomic_load_n(&file.header->state, __ATOMIC_ACQUIRE) == SPC_PEERS_NAMED && p.matrix.base != nullptr) {
            fold(p, file);
            unlink(file.path.c_str());
        }
    }
    munmap(file.base, file.bytes);
    return true;
}

void peers_finalize(bool keep)
{
    Peers &p = peers();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.on || keep) {
        return;  // kept: the storages still to be freed fold into the kept matrix
    }
    for (const auto &storage : p.storages) {
        unlink(storage.second.path.c_str());
    }
    unlink(p.matrix.path.c_str());
    p.removed = true;
}

}  // namespace spc::live

extern "C" {

int spc_live_peers_start(char *message, size_t message_size)
{
    say(message, message_size, "");
    Peers &p = peers();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.on) {
        return SPC_SUCCESS;
    }
    if (!spc::live::identity(p.who)) {
        say(message, message_size, "per-peer traffic is not readable live: the live segment is off or not named");
        return SPC_LIVE_ERR;
    }
    if (p.who.size <= 0 || p.who.rank < 0) {
        say(message, message_size, "per-peer traffic is not readable live: no job size or rank");
        return SPC_LIVE_ERR;
    }
    p.stem = p.who.folder + "/" SPC_PEERS_FILE_PREFIX + std::to_string(getuid()) + "." + p.who.jobid + "." +
             std::to_string(p.who.rank) + ".";
    const size_t arrays_offset = round_up(sizeof(spc_live_peers_header), 64);
    const size_t bytes = arrays_offset + sizeof(uint64_t) * SPC_NUM_PEER_COUNTERS * static_cast<size_t>(p.who.size);
    std::string why;
    if (!make_file(p, SPC_PEERS_MATRIX_NAME, bytes, SPC_PEERS_MATRIX, p.who.size, 0, p.matrix, why)) {
        say(message, message_size, why + "; per-peer traffic is not readable live");
        return SPC_LIVE_ERR;
    }
    p.matrix.header->arrays_offset = arrays_offset;
    if (!publish(p.matrix, why)) {
        p.matrix = File{};
        say(message, message_size, why + "; per-peer traffic is not readable live");
        return SPC_LIVE_ERR;
    }
    p.on = true;
    static std::once_flag fork_hook;
    std::call_once(fork_hook, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
    return SPC_SUCCESS;
}

int spc_comm_live_name(struct spc_comm *comm, const int32_t *ranks)
{
    Peers &p = peers();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto found = p.storages.find(comm);
    if (found == p.storages.end()) {
        return -1;
    }
    spc_live_peers_header *h = found->second.header;
    std::memcpy(found->second.base + h->ranks_offset, ranks, sizeof(int32_t) * static_cast<size_t>(h->peers));
    __atomic_store_n(&h->state, SPC_PEERS_NAMED, __ATOMIC_RELEASE);
    return 0;
}

int spc_comm_live_unnamed(const struct spc_comm *comm)
{
    Peers &p = peers();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto found = p.storages.find(comm);
    return found != p.storages.end() &&
           __atomic_load_n(&found->second.header->state, __ATOMIC_ACQUIRE) == SPC_PEERS_UNNAMED;
}

void spc_live_peers_test_stop_fold(long stores)
{
    Peers &p = peers();
    std::lock_guard<std::mutex> lock(p.mutex);
    stores_left = stores;
}

void spc_comm_live_created_callback(void (*callback)(struct spc_comm *comm))
{
    Peers &p = peers();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.created = callback;
}

}  // extern "C"
