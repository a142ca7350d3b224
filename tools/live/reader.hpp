// The reader of live counter segments (spc/live.h), shared by spc-top,
// spc-record, spc-exporter and the tests: maps a rank's segment read-only
// and sums its thread blocks itself, so that reading takes nothing from the
// job but the cache lines it reads.  Everything a reader needs is in the
// file (catalogue, clock rate, identity); a damaged or foreign file gives an
// Error naming it, never a crash.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "spc/live.h"
#include "spc/spc.h"

namespace spc_live {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What became of the process that wrote a segment.
enum class Status {
    Starting,   // loaded, not yet through MPI_Init
    Running,
    Finalized,  // MPI_Finalize ran: the values are final
    Dead,       // its process is gone (killed, or exited without MPI_Finalize)
    OtherNode   // written on another node: this node cannot tell
};
const char *status_name(Status status);

struct Counter {
    std::string name, description, unit;
    spc_kind kind;
    int level;  // a watermark's level, else -1
};

// One read of a segment, in the counters' native units (timer ticks).
struct Values {
    std::vector<uint64_t> raw;
    bool final = false;        // frozen at MPI_Finalize
    bool levels = true;        // levels and watermarks are published
    uint64_t unix_ns = 0;      // when read
    uint64_t ticks = 0;        // the cycle counter when read (this node's)
};

class Segment {
public:
    // Maps path read-only and checks it; throws Error("path: why").
    explicit Segment(const std::string &path);
    ~Segment();
    Segment(const Segment &) = delete;
    Segment &operator=(const Segment &) = delete;

    const std::string &path() const { return path_; }
    dev_t device() const { return device_; }
    ino_t inode() const { return inode_; }
    uid_t owner() const { return owner_; }

    // Identity, as the header says now (set at MPI_Init).
    uint64_t state() const;
    std::string jobid() const;
    std::string node() const;
    std::string program() const;
    // The batch system's job id and step ("" outside one) and the local rank
    // (-1 if not known): set with the rank, read once the state is running.
    std::string batch_job() const;
    std::string step() const;
    int local_rank() const;
    // The job id a site groups by: the batch system's, else Open MPI's.
    std::string site_jobid() const { return batch_job().empty() ? jobid() : batch_job(); }
    int rank() const;
    int size() const;
    int64_t pid() const;
    uint64_t blocks_used() const;
    uint64_t blocks_overflow() const;
    uint64_t created_ticks() const;
    // When MPI_Init ran (CLOCK_REALTIME nanoseconds; 0 before it): see the
    // header's running_unix_ns in spc/live.h for why that clock.
    uint64_t mpi_init_unix_ns() const;
    // Seconds from MPI_Init to the read v, or to MPI_Finalize for final
    // values; -1 before MPI_Init (or if this node's clock went back past it).
    double since_mpi_init(const Values &v) const;
    uint64_t ticks_per_second() const;
    Status status() const;
    // Whether the process that wrote it still runs (same pid and start time).
    bool process_running() const;

    const std::vector<Counter> &counters() const { return counters_; }
    // Whether the job counts counter id: false for one its PML does not
    // count (set at MPI_Init), which a reader leaves out as MPI_T does.
    bool counted(int id) const;
    int find(const std::string &name) const;  // with or without OMPI_SPC_, any case; -1 if none

    // Sums the blocks now (or takes the final values); throws Error if the
    // file has become inconsistent.
    Values read() const;
    // A value in the catalogue's unit (timers: microseconds, exactly as
    // spc_convert computes it in the job).
    uint64_t converted(int id, uint64_t raw) const;
    // A timer in seconds; other kinds as they are.
    double seconds(int id, uint64_t raw) const;
    // Level values are signed.
    static int64_t level_value(uint64_t raw) { return static_cast<int64_t>(raw); }

private:
    const spc_live_header *header() const;
    void check_size() const;

    std::string path_;
    int fd_ = -1;
    const unsigned char *base_ = nullptr;
    size_t bytes_ = 0;
    dev_t device_ = 0;
    ino_t inode_ = 0;
    uid_t owner_ = 0;
    std::vector<Counter> counters_;
};

// Every segment file of a folder (SPC_LIVE_FILE_PREFIX...), opened; files
// that cannot be read are listed in errors ("path: why") instead.
// Segments of other nodes are left out unless all_nodes.
// Files of other users that this process may not read (0600, a job of
// someone else on a shared node) are not errors: they are only counted.
struct Scan {
    std::vector<std::unique_ptr<Segment>> segments;
    std::vector<std::string> errors;
    size_t others = 0;
};
Scan scan(const std::string &dir, bool all_nodes);

// A job: the segments of one job id (or of one process that does not know
// its job: not started by mpirun, before MPI_Init), by rank.
struct Job {
    std::string jobid;          // "" for such a process
    std::string program;
    int size = 0;               // ranks in the job (all nodes)
    std::vector<Segment *> ranks;
    Status status() const;      // Running if any rank runs, else Dead if any died, ...
};
std::vector<Job> jobs(const Scan &found);

std::string this_node();
uint64_t unix_ns();
// The status of a process from /proc: alive with this start time or not.
bool process_alive(int64_t pid, uint64_t start_time);

}  // namespace spc_live
