// The reader of the per-peer files (spc/live.h, "Per-peer arrays in shared
// files"): a job's communication matrix while it runs or after it was
// killed, as the finalize report's NAME.matrix.csv (docs/traffic.md).
// Each rank's folded matrix plus its live storages, each translated to the
// job's ranks with the table its file holds.  A damaged or foreign file
// gives an Error naming it, never a crash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "reader.hpp"

namespace spc_live {

// The catalogue's SPC_PER_PEER rows' names ("PEER_MESSAGES_SENT", ...).
extern const char *const spc_live_peer_names[SPC_NUM_PEER_COUNTERS];

struct Matrix {
    std::string jobid;
    int size = 0;                  // the job's ranks
    std::vector<int> ranks;        // the ranks that wrote files, ascending
    // value[(rank x SPC_NUM_PEER_COUNTERS + array) x size + peer]
    std::vector<uint64_t> value;
    int storages = 0;              // communicators' and windows' files counted
    int unnamed = 0;               // storages whose ranks were never written: left out
    uint64_t unnamed_messages = 0; // their messages
    uint64_t at(int rank, int array, int peer) const
    {
        return value[(static_cast<size_t>(rank) * SPC_NUM_PEER_COUNTERS + static_cast<size_t>(array)) *
                         static_cast<size_t>(size) + static_cast<size_t>(peer)];
    }
};

// The per-peer files' jobs in dir (Open MPI's job ids), ascending.
std::vector<std::string> matrix_jobs(const std::string &dir);

// Job's matrix from the files in dir (job "": the one job there; an Error
// if there are none or several).  Throws Error("why") naming the folder or
// the file.
Matrix read_matrix(const std::string &dir, const std::string &job);

// The CSV of NAME.matrix.csv: a row per rank, peer and kind with traffic.
void write_matrix_csv(std::FILE *out, const Matrix &matrix);

// The per-peer files (paths) of the process whose live segment is
// segment_path (<dir>/ompi-spc.<uid>.<jobid>.<rank>): its matrix and
// storage files beside it; none for a segment not named by its job.
std::vector<std::string> peer_files_of(const std::string &segment_path);

}  // namespace spc_live
