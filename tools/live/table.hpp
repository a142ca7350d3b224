// The table of a job's counters that spc-top shows (on the terminal, or as
// plain text with --once): one row per counter, a column per rank and one
// for all ranks, and each counter's rate per second over the last interval.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "reader.hpp"

namespace spc_live {

struct TableOptions {
    int rank = -1;           // only this rank's column; -1: as many as fit
    bool sum = false;        // only the all-ranks column
    bool all = false;        // rows that are 0 everywhere too
    std::string sort = "catalogue";  // catalogue, name, value, rate
    int max_rank_columns = 4;
};

// The previous read of each segment (by device and inode), for rates.
using SegmentKey = std::pair<dev_t, ino_t>;
using History = std::map<SegmentKey, Values>;

// The lines of one job's table.  reads holds this read of each of the
// job's segments (same order as job.ranks); previous the one before, if
// any.  Rates need a previous read of the same segment.
std::vector<std::string> job_table(const Job &job, const std::vector<Values> &reads, const History &previous,
                                   const TableOptions &options);

}  // namespace spc_live
