// spc-top's table of a job's counters: see table.hpp.
#include "table.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <numeric>

namespace spc_live {

namespace {

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...)
{
    char text[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    return text;
}

bool accumulates(spc_kind kind) { return kind == SPC_KIND_COUNTER || kind == SPC_KIND_AGGREGATE || kind == SPC_KIND_TIMER; }

struct Row {
    int id;
    std::vector<int64_t> values;  // per shown rank
    int64_t all;                  // sum, or the highest for a watermark
    double rate;                  // per second, all ranks
    bool rate_known;
};

std::string rank_status(const Segment &s)
{
    return format("rank %d: pid %" PRId64 " %s", s.rank(), s.pid(), status_name(s.status()));
}

using Shares = std::vector<std::pair<double, int>>;  // (share, rank)

// A line of the ranks' shares of time inside MPI: the lowest and highest
// rank and the mean, and why a share can pass 100%.
std::string spread(const std::string &over, const Shares &shares)
{
    const auto [low, high] = std::minmax_element(shares.begin(), shares.end());
    const double mean = std::accumulate(shares.begin(), shares.end(), 0.0,
                                        [](double sum, const std::pair<double, int> &p) { return sum + p.first; }) /
                        static_cast<double>(shares.size());
    return format("  time in MPI %s (MPI_TIME): min %.0f%% (rank %d), mean %.0f%%, max %.0f%% (rank %d)%s",
                  over.c_str(), 100 * low->first, low->second, 100 * mean, 100 * high->first, high->second,
                  high->first > 1.005 ? "; above 100%: a rank's threads inside MPI at once add up" : "");
}

// Each rank's share of its time since MPI_Init spent inside MPI (MPI_TIME
// over that time, from one read), then of the last interval (MPI_TIME's
// rate: needs a previous read), each with the job's spread; no line while
// no rank's MPI_TIME has counted (off, it would read a 0% that means
// nothing).
std::vector<std::string> time_in_mpi(const Job &job, const std::vector<Values> &reads, const History &previous)
{
    const Segment &first = *job.ranks.front();
    const int id = first.find("MPI_TIME");
    if (id < 0 || !first.counted(id) ||
        std::all_of(reads.begin(), reads.end(), [id](const Values &v) { return v.raw[id] == 0; })) {
        return {};
    }
    Shares since_init, last;
    double seconds = 0;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const Segment &s = *job.ranks[i];
        const uint64_t inside = s.converted(id, reads[i].raw[id]);  // microseconds
        const double lived = s.since_mpi_init(reads[i]);
        if (lived > 0) {
            since_init.push_back({static_cast<double>(inside) / 1e6 / lived, s.rank()});
        }
        auto before = previous.find({s.device(), s.inode()});
        if (before == previous.end() || reads[i].unix_ns <= before->second.unix_ns) {
            continue;
        }
        seconds = static_cast<double>(reads[i].unix_ns - before->second.unix_ns) / 1e9;
        const uint64_t then = s.converted(id, before->second.raw[id]);
        last.push_back({static_cast<double>(inside - then) / 1e6 / seconds, s.rank()});
    }
    std::vector<std::string> lines;
    if (!since_init.empty()) {
        lines.push_back(spread("since MPI_Init", since_init));
    }
    if (!last.empty()) {
        lines.push_back(spread(format("over the last %.1f s", seconds), last));
    }
    return lines;
}

}  // namespace

std::vector<std::string> job_table(const Job &job, const std::vector<Values> &reads, const History &previous,
                                   const TableOptions &options)
{
    std::vector<std::string> lines;
    const Segment &first = *job.ranks.front();
    const int shown_ranks = static_cast<int>(job.ranks.size());
    if (job.jobid.empty()) {
        lines.push_back(format("process %" PRId64 " (%s), no job yet: %s", first.pid(), job.program.c_str(),
                               status_name(job.status())));
    } else {
        // Under Slurm, its job id and step too (what squeue and sacct show).
        const std::string batch = first.batch_job().empty()
                                      ? ""
                                      : ", Slurm job " + first.batch_job() + " step " + first.step();
        lines.push_back(format("job %s (%s%s), %d of %d ranks on %s: %s", job.jobid.c_str(), job.program.c_str(),
                               batch.c_str(), shown_ranks, job.size, first.node().c_str(), status_name(job.status())));
    }
    std::string statuses = " ";
    for (const Segment *s : job.ranks) {
        statuses += " " + rank_status(*s) + ";";
        if (s->blocks_overflow() > 0) {
            statuses += format(" (%" PRIu64 " threads not shown: the segment is full)", s->blocks_overflow());
        }
    }
    statuses.pop_back();
    lines.push_back(statuses);
    for (std::string &line : time_in_mpi(job, reads, previous)) {
        lines.push_back(std::move(line));
    }

    // Which ranks get a column.
    std::vector<size_t> columns;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        if (options.rank >= 0 ? job.ranks[i]->rank() == options.rank
                              : !options.sum && job.ranks.size() <= static_cast<size_t>(options.max_rank_columns)) {
            columns.push_back(i);
        }
    }
    if (options.rank >= 0 && columns.empty()) {
        lines.push_back(format("  (rank %d is not on this node)", options.rank));
        return lines;
    }
    bool any_rate = false;
    for (const Segment *s : job.ranks) {
        any_rate = any_rate || previous.count({s->device(), s->inode()}) > 0;
    }

    std::vector<Row> rows;
    std::string not_counted;
    const std::vector<Counter> &counters = first.counters();
    for (size_t id = 0; id < counters.size(); ++id) {
        const Counter &c = counters[id];
        if (!first.counted(static_cast<int>(id))) {
            not_counted += (not_counted.empty() ? "" : " ") + c.name;
            continue;
        }
        Row row{static_cast<int>(id), {}, 0, 0, false};
        bool nonzero = false, rate_known = false;
        double rate = 0;
        for (size_t i = 0; i < job.ranks.size(); ++i) {
            const Segment &s = *job.ranks[i];
            if (id >= s.counters().size()) {
                continue;  // a rank of another catalogue: no such counter
            }
            const int64_t value = c.kind == SPC_KIND_LEVEL || c.kind == SPC_KIND_HIGHWATERMARK
                                      ? Segment::level_value(reads[i].raw[id])
                                      : static_cast<int64_t>(s.converted(static_cast<int>(id), reads[i].raw[id]));
            nonzero = nonzero || value != 0;
            row.all = c.kind == SPC_KIND_HIGHWATERMARK ? std::max(row.all, value) : row.all + value;
            if (std::find(columns.begin(), columns.end(), i) != columns.end()) {
                row.values.push_back(value);
            }
            auto before = previous.find({s.device(), s.inode()});
            if (accumulates(c.kind) && before != previous.end() && reads[i].unix_ns > before->second.unix_ns) {
                const double seconds = static_cast<double>(reads[i].unix_ns - before->second.unix_ns) / 1e9;
                const uint64_t then = s.converted(static_cast<int>(id), before->second.raw[id]);
                rate += static_cast<double>(static_cast<int64_t>(value) - static_cast<int64_t>(then)) / seconds;
                rate_known = true;
            }
        }
        row.rate = rate;
        row.rate_known = rate_known;
        if (nonzero || options.all) {
            rows.push_back(row);
        }
    }
    if (options.sort == "name") {
        std::sort(rows.begin(), rows.end(),
                  [&](const Row &a, const Row &b) { return counters[a.id].name < counters[b.id].name; });
    } else if (options.sort == "value") {
        std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return a.all > b.all; });
    } else if (options.sort == "rate") {
        std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return (a.rate_known ? a.rate : -1) > (b.rate_known ? b.rate : -1); });
    }

    std::string head = format("%-36s %-12s", "counter", "unit");
    for (size_t i : columns) {
        head += format(" %15s", format("rank %d", job.ranks[i]->rank()).c_str());
    }
    head += format(" %15s", "all ranks");
    if (any_rate) {
        head += format(" %14s", "per second");
    }
    lines.push_back(head);
    for (const Row &row : rows) {
        const Counter &c = counters[row.id];
        std::string line = format("%-36s %-12s", c.name.c_str(), c.unit.c_str());
        for (int64_t value : row.values) {
            line += format(" %15" PRId64, value);
        }
        line += format(" %15" PRId64, row.all);
        if (any_rate) {
            line += row.rate_known ? format(" %14.1f", row.rate) : format(" %14s", "-");
        }
        lines.push_back(line);
    }
    if (rows.empty()) {
        lines.push_back("  (every counter is 0: counters count while on, e.g. --mca mpi_spc_attach all)");
    }
    if (!not_counted.empty()) {
        lines.push_back("  (not counted by this job's PML: " + not_counted + ")");
    }
    const bool levels_missing = std::any_of(reads.begin(), reads.end(), [](const Values &v) { return !v.levels; });
    if (levels_missing) {
        lines.push_back("  (levels and watermarks of some ranks are not published: see the job's stderr)");
    }
    return lines;
}

}  // namespace spc_live
