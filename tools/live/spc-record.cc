// spc-record: samples every rank of a running job every T milliseconds into
// a CSV time series, until the job ends.
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "reader.hpp"

namespace {

const char kHelp[] = R"(NAME
    spc-record - record a running MPI job's counters as a time series

SYNOPSIS
    spc-record [--dir DIR] [--job ID] [--interval MS] [--counters LIST]
               [--out FILE] [--wait SECONDS] [--quiet]

DESCRIPTION
    Samples every rank of a job that runs with --mca mpi_spc_live 1 every MS
    milliseconds and writes one CSV row per sample, rank and counter, until
    every rank has finalized or died; the last sample is taken after that,
    so it holds the values at MPI_Finalize (the mpi_spc_dump_enabled
    report's) or, for a killed rank, what it had counted.  A progress line
    goes to stderr (rewritten in place on a terminal, else every 5 s).
    It records the job's ranks on this node, picked up as they appear; once
    every rank it found has ended and no other appeared for a second, it
    stops.

    Columns: sample (0, 1, ...), wall_time (Unix seconds), ticks (this
    node's cycle counter when the rank was read), job_seconds (seconds since
    the first rank's segment was made, by the cycle counter), rank, counter,
    kind (counter, aggregate, timer, level, watermark), value (timers in
    microseconds, as the finalize report), unit, and which job, node and
    rank the row is: jobid (the batch system's job id, Slurm's, else
    mpirun's), step (Slurm's step, "" outside Slurm), node, local_rank
    (among the job's ranks on this node; empty if not known); last,
    since_mpi_init (seconds since the rank's MPI_Init, by the wall clock; in
    the last sample of a finalized rank, up to its MPI_Finalize: the rank's
    share of time in MPI is its MPI_TIME over it).  New columns go last:
    scripts may take the others by position.

    analysis/live_plot.py in the ompi-spc sources plots such a file: rates
    over time per counter and queue levels, one line per rank.

OPTIONS
    --dir DIR          the folder of the live files (default /dev/shm, as
                       mpi_spc_live_dir)
    --job ID           the job to record, by Open MPI's job id or the batch
                       system's (default: the one job of this node that
                       runs; an error if there are several)
    --interval MS      milliseconds between samples (default 1000, at least 1)
    --counters LIST    comma list of counter names, with or without
                       OMPI_SPC_, any case (default: all)
    --out FILE         the CSV file (default: spc-record-<job>.csv; - for stdout)
    --wait SECONDS     how long to wait for a job to appear (default 30),
                       looking every interval, at least every 50 ms
    --quiet            no progress line
    -h, --help         this text

EXIT STATUS
    0 every rank finalized; 3 some rank died (its rows are still written);
    1 no job, or a file could not be read or written; 2 bad usage.

EXAMPLE
    mpirun -np 4 --mca mpi_spc_live 1 --mca mpi_spc_attach all ./app &
    spc-record --interval 200 --out app.csv
    /usr/bin/python3 analysis/live_plot.py app.csv --out plots/

SEE ALSO
    spc-top(1), spc-exporter(1)
)";

struct Options {
    std::string dir = SPC_LIVE_DEFAULT_DIR, job, counters, out;
    long interval_ms = 1000;
    double wait_s = 30;
    bool quiet = false;
};

volatile sig_atomic_t interrupted = 0;

[[noreturn]] void usage_error(const std::string &message)
{
    std::fprintf(stderr, "spc-record: %s\n(spc-record --help tells more)\n", message.c_str());
    std::exit(2);
}

Options parse(int argc, char **argv)
{
    static const option table[] = {
        {"dir", required_argument, nullptr, 'D'}, {"job", required_argument, nullptr, 'j'},
        {"interval", required_argument, nullptr, 'i'}, {"counters", required_argument, nullptr, 'c'},
        {"out", required_argument, nullptr, 'o'}, {"wait", required_argument, nullptr, 'w'},
        {"quiet", no_argument, nullptr, 'q'}, {"help", no_argument, nullptr, 'h'}, {nullptr, 0, nullptr, 0}};
    Options o;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", table, nullptr)) != -1) {
        char *end = nullptr;
        switch (c) {
        case 'D': o.dir = optarg; break;
        case 'j': o.job = optarg; break;
        case 'i':
            o.interval_ms = std::strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || o.interval_ms < 1 || o.interval_ms > 3600000) {
                usage_error(std::string("--interval takes milliseconds from 1 to 3600000, not '") + optarg + "'");
            }
            break;
        case 'c': o.counters = optarg; break;
        case 'o': o.out = optarg; break;
        case 'w':
            o.wait_s = std::strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(o.wait_s >= 0)) {
                usage_error(std::string("--wait takes seconds, not '") + optarg + "'");
            }
            break;
        case 'q': o.quiet = true; break;
        case 'h': std::fputs(kHelp, stdout); std::exit(0);
        default: usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
        }
    }
    if (optind < argc) {
        usage_error(std::string("unexpected argument '") + argv[optind] + "'");
    }
    return o;
}

const char *kind_name(spc_kind kind)
{
    switch (kind) {
    case SPC_KIND_COUNTER: return "counter";
    case SPC_KIND_AGGREGATE: return "aggregate";
    case SPC_KIND_TIMER: return "timer";
    case SPC_KIND_LEVEL: return "level";
    case SPC_KIND_HIGHWATERMARK: return "watermark";
    }
    return "?";
}

// The job to record: o.job, or the one running job; waits for it.
std::string choose_job(const Options &o)
{
    const uint64_t deadline = spc_live::unix_ns() + static_cast<uint64_t>(o.wait_s * 1e9);
    for (;;) {
        spc_live::Scan found = spc_live::scan(o.dir, false);
        std::vector<std::string> running;
        for (const spc_live::Job &job : spc_live::jobs(found)) {
            if (job.jobid.empty()) {
                continue;
            }
            if (!o.job.empty() && (job.jobid == o.job || job.ranks.front()->site_jobid() == o.job)) {
                return job.jobid;  // the segments' own (Open MPI's) job id
            }
            const spc_live::Status status = job.status();
            if (o.job.empty() && (status == spc_live::Status::Running || status == spc_live::Status::Starting)) {
                running.push_back(job.jobid);
            }
        }
        if (running.size() == 1) {
            return running[0];
        }
        if (running.size() > 1) {
            std::string list;
            for (const std::string &id : running) {
                list += " " + id;
            }
            std::fprintf(stderr, "spc-record: several jobs run in %s:%s; choose one with --job\n", o.dir.c_str(),
                         list.c_str());
            std::exit(1);
        }
        if (interrupted || spc_live::unix_ns() >= deadline) {
            std::fprintf(stderr, "spc-record: no %s in %s after %g s (a job publishes its counters with --mca "
                         "mpi_spc_live 1)\n", o.job.empty() ? "running job" : ("job " + o.job).c_str(),
                         o.dir.c_str(), o.wait_s);
            for (const std::string &error : found.errors) {
                std::fprintf(stderr, "spc-record: %s\n", error.c_str());
            }
            std::exit(1);
        }
        // A short job (the README's demo runs about 0.1 s) must not end
        // between two looks: look as often as the user samples.
        usleep(static_cast<useconds_t>(std::min(o.interval_ms, 50L) * 1000));
    }
}

}  // namespace

int main(int argc, char **argv)
{
    Options o = parse(argc, argv);
    struct sigaction stop = {};
    stop.sa_handler = [](int) { interrupted = 1; };
    sigaction(SIGINT, &stop, nullptr);
    sigaction(SIGTERM, &stop, nullptr);

    const std::string job = choose_job(o);
    if (o.out.empty()) {
        o.out = "spc-record-" + job + ".csv";
    }
    FILE *csv = o.out == "-" ? stdout : std::fopen(o.out.c_str(), "w");
    if (csv == nullptr) {
        std::fprintf(stderr, "spc-record: cannot write %s: %s\n", o.out.c_str(), std::strerror(errno));
        return 1;
    }
    std::fputs("sample,wall_time,ticks,job_seconds,rank,counter,kind,value,unit,jobid,step,node,local_rank,since_mpi_init\n",
               csv);

    // The job's segments by rank, kept mapped: a rank's file disappears at
    // MPI_Finalize, but its mapping still holds the final values.
    std::map<int, std::unique_ptr<spc_live::Segment>> ranks;
    std::set<int> done;  // ranks whose last sample is written
    int size = 0, dead = 0;
    uint64_t samples = 0, rows = 0, start_ticks = 0, ticks_per_second = 0;
    std::vector<std::string> wanted;
    for (size_t at = 0; at <= o.counters.size();) {
        size_t comma = std::min(o.counters.find(',', at), o.counters.size());
        if (comma > at) {
            wanted.push_back(o.counters.substr(at, comma - at));
        }
        at = comma + 1;
    }
    const bool tty = isatty(STDERR_FILENO) != 0;
    const uint64_t began = spc_live::unix_ns();
    uint64_t last_progress = began, ended_since = 0;
    for (;;) {
        const uint64_t tick_start = spc_live::unix_ns();
        // New ranks of the job (and the rest of a job that is starting).
        if (static_cast<int>(ranks.size()) < std::max(size, 1)) {
            spc_live::Scan found = spc_live::scan(o.dir, false);
            for (auto &segment : found.segments) {
                if (segment->jobid() == job &&
                    ranks.count(segment->rank()) == 0) {
                    size = std::max(size, segment->size());
                    if (ranks.empty() || segment->created_ticks() < start_ticks) {
                        start_ticks = segment->created_ticks();
                    }
                    const int rank = segment->rank();
                    ranks[rank] = std::move(segment);
                }
            }
        }
        // Every rank's state first: a rank that ended gets one last sample.
        // Ranks of other nodes never appear here: once every rank seen has
        // ended, a second without a new one ends the recording.
        bool all_ended = !ranks.empty();
        std::map<int, spc_live::Status> status;
        for (auto &[rank, segment] : ranks) {
            status[rank] = segment->status();
            const bool ended = status[rank] == spc_live::Status::Finalized || status[rank] == spc_live::Status::Dead;
            all_ended = all_ended && ended;
        }
        for (auto &[rank, segment] : ranks) {
            // Before MPI_Init a rank counts nothing yet, and which counters
            // its PML counts is not known: its samples start at MPI_Init.
            if (done.count(rank) != 0 || status[rank] == spc_live::Status::Starting) {
                continue;
            }
            spc_live::Values v;
            try {
                v = segment->read();
            } catch (const spc_live::Error &error) {
                std::fprintf(stderr, "\nspc-record: %s\n", error.what());
                return 1;
            }
            // The clock rate is known from MPI_Init on (the job calibrates it).
            ticks_per_second = std::max(ticks_per_second, segment->ticks_per_second());
            const double job_seconds =
                ticks_per_second ? static_cast<double>(v.ticks - start_ticks) / static_cast<double>(ticks_per_second) : 0;
            const auto &counters = segment->counters();
            for (const std::string &w : wanted) {
                if (w != "all" && segment->find(w) < 0) {
                    std::fprintf(stderr, "spc-record: --counters: no counter named '%s' in %s\n", w.c_str(),
                                 segment->path().c_str());
                    return 2;
                }
            }
            const int local_rank = segment->local_rank();
            // A starting rank was skipped above: -1 only if the clock went back past MPI_Init.
            char since_init[32];
            std::snprintf(since_init, sizeof since_init, "%.6f", segment->since_mpi_init(v));
            const std::string who = segment->site_jobid() + "," + segment->step() + "," + segment->node() + "," +
                                    (local_rank >= 0 ? std::to_string(local_rank) : "") + "," + since_init;
            for (size_t id = 0; id < counters.size(); ++id) {
                if (!segment->counted(static_cast<int>(id))) {
                    continue;  // its PML does not count it: no rows, as in the finalize CSV
                }
                if (!wanted.empty() && std::none_of(wanted.begin(), wanted.end(), [&](const std::string &w) {
                        return w == "all" || segment->find(w) == static_cast<int>(id);
                    })) {
                    continue;
                }
                const spc_kind kind = counters[id].kind;
                const bool signed_value = kind == SPC_KIND_LEVEL || kind == SPC_KIND_HIGHWATERMARK;
                std::fprintf(csv, "%" PRIu64 ",%.6f,%" PRIu64 ",%.6f,%d,%s,%s,", samples,
                             static_cast<double>(v.unix_ns) / 1e9, v.ticks, job_seconds, rank,
                             counters[id].name.c_str(), kind_name(kind));
                if (signed_value) {
                    std::fprintf(csv, "%" PRId64, spc_live::Segment::level_value(v.raw[id]));
                } else {
                    std::fprintf(csv, "%" PRIu64, segment->converted(static_cast<int>(id), v.raw[id]));
                }
                std::fprintf(csv, ",%s,%s\n", counters[id].unit.c_str(), who.c_str());
                ++rows;
            }
            // v.final too: a rank that finalized between its status and
            // this read has given its last sample already.
            if (v.final || status[rank] == spc_live::Status::Finalized || status[rank] == spc_live::Status::Dead) {
                done.insert(rank);
                dead += status[rank] == spc_live::Status::Dead;
            }
        }
        ++samples;
        if (std::ferror(csv)) {
            std::fprintf(stderr, "\nspc-record: error writing %s\n", o.out.c_str());
            return 1;
        }
        std::fflush(csv);
        if (!o.quiet && tty) {
            std::fprintf(stderr, "\rspc-record: job %s, %zu of %d ranks, %d ended, %" PRIu64 " samples, %.1f s -> %s  ",
                         job.c_str(), ranks.size(), size, static_cast<int>(done.size()), samples,
                         static_cast<double>(spc_live::unix_ns() - began) / 1e9, o.out.c_str());
        }
        const uint64_t now = spc_live::unix_ns();
        if (ranks.empty() && now - began > static_cast<uint64_t>(o.wait_s * 1e9)) {
            std::fprintf(stderr, "spc-record: job %s ended before any of its ranks could be read\n", job.c_str());
            return 1;
        }
        if (!o.quiet && !tty && now - last_progress > 5000000000u) {
            std::fprintf(stderr, "spc-record: job %s, %zu of %d ranks, %d ended, %" PRIu64 " samples, %.1f s -> %s\n",
                         job.c_str(), ranks.size(), size, static_cast<int>(done.size()), samples,
                         static_cast<double>(now - began) / 1e9, o.out.c_str());
            last_progress = now;
        }
        if (!all_ended) {
            ended_since = 0;
        } else if (static_cast<int>(ranks.size()) >= size) {
            break;
        } else if (ended_since == 0) {
            ended_since = now;
        } else if (now - ended_since > 1000000000u) {
            break;
        }
        if (interrupted) {
            break;
        }
        const uint64_t spent = spc_live::unix_ns() - tick_start;
        const uint64_t period = static_cast<uint64_t>(o.interval_ms) * 1000000u;
        if (spent < period) {
            usleep(static_cast<useconds_t>((period - spent) / 1000));
        }
    }
    if (csv != stdout && std::fclose(csv) != 0) {
        std::fprintf(stderr, "\nspc-record: error writing %s: %s\n", o.out.c_str(), std::strerror(errno));
        return 1;
    }
    if (!o.quiet) {
        std::fprintf(stderr, "%sspc-record: job %s: %" PRIu64 " samples of %zu ranks (%d finalized, %d dead), %" PRIu64
                     " rows in %s%s\n", tty ? "\n" : "", job.c_str(), samples, ranks.size(),
                     static_cast<int>(done.size()) - dead, dead, rows, o.out.c_str(),
                     interrupted ? " (interrupted)" : "");
    }
    return dead > 0 ? 3 : interrupted ? 1 : 0;
}
