// spc-top: the live counters of the MPI jobs on this node, on the terminal
// (ncurses) or, with --once, as a plain table for scripts and tests.
#include <curses.h>
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "matrix.hpp"
#include "reader.hpp"
#include "table.hpp"

namespace {

const char kHelp[] = R"(NAME
    spc-top - the live counters of the MPI jobs on this node

SYNOPSIS
    spc-top [--dir DIR] [--job ID] [--rank N] [--sum] [--all] [--sort KEY]
            [--delay SECONDS] [--all-nodes]
    spc-top --once [same options]
    spc-top --clean [--dir DIR]

DESCRIPTION
    Shows the software-based performance counters of every job on this node
    that runs with --mca mpi_spc_live 1 (Open MPI with SPC, this build):
    per job, each counter's value per rank and over all ranks, and its rate
    per second over the last interval; levels (queue lengths) and their
    watermarks as they are now (the all-ranks column of a watermark is the
    highest of the ranks).  Counters that are 0 on every rank are left out.
    Timers are in microseconds.

    Under each job's ranks, once their MPI_TIME timer counts: the share of
    each rank's time spent inside MPI since its MPI_Init (from one read,
    also with --once; up to MPI_Finalize for a finalized rank) and over the
    last interval (from two reads), each as the lowest and highest rank and
    the mean.  A share above 100% is said to be a rank's threads inside MPI
    at once (MPI_THREAD_MULTIPLE), whose times add up.

    Each rank publishes its counters in a shared-memory file (one per rank,
    in DIR); spc-top maps it read-only and sums the rank's threads itself,
    so reading costs the job nothing but the cache lines read.  It shows
    each rank as running, finalized (the job kept its file with
    mpi_spc_live_keep: the values at MPI_Finalize), dead (its process is
    gone: killed, or exited without MPI_Finalize; its values are what it
    had counted) or starting (before MPI_Init).

OPTIONS
    --dir DIR        the folder of the files (default /dev/shm, as
                     mpi_spc_live_dir)
    --job ID         only this job
    --rank N         only rank N's column
    --sum            only the all-ranks column (default when a job has more
                     than 4 ranks here)
    --all            also the counters that are 0 everywhere
    --sort KEY       row order: catalogue (default), name, value, rate
    -d, --delay SECONDS
                     refresh interval (default 1); with --once, the time
                     between the two reads that give the rates (default: one
                     read, no rates)
    --once           print the table once and exit
    --clean          remove the files of processes that have ended (dead, or
                     finalized and exited), their per-peer files (spc-matrix's)
                     too, then exit
    --all-nodes      also show files written on other nodes (a folder that
                     nodes share); their state cannot be told from here
    --time N         measure: N full reads (list, map, check, sum every
                     rank) and print the mean time of one in microseconds
    -h, --help       this text

KEYS
    q quit   s next sort order   r per rank / all ranks   a all counters
    j next job   + / - slower / faster   arrows, PgUp, PgDn scroll

EXIT STATUS
    0 success; 1 a file could not be read (named on stderr; the others are
    still shown); 2 bad usage.

EXAMPLES
    mpirun -np 2 --mca mpi_spc_live 1 --mca mpi_spc_attach all ./app &
    spc-top
    spc-top --once -d 1 --job 123456

SEE ALSO
    spc-record(1), spc-exporter(1), ompi_info --param mpi all --level 9
)";

struct Options {
    std::string dir = SPC_LIVE_DEFAULT_DIR;
    std::string job;
    double delay = 1.0;
    bool delay_given = false, once = false, clean = false, all_nodes = false;
    int time_reads = 0;
    spc_live::TableOptions table;
};

[[noreturn]] void usage_error(const std::string &message)
{
    std::fprintf(stderr, "spc-top: %s\n(spc-top --help tells more)\n", message.c_str());
    std::exit(2);
}

Options parse(int argc, char **argv)
{
    static const option table[] = {
        {"dir", required_argument, nullptr, 'D'}, {"job", required_argument, nullptr, 'j'},
        {"rank", required_argument, nullptr, 'r'}, {"sum", no_argument, nullptr, 's'},
        {"all", no_argument, nullptr, 'a'}, {"sort", required_argument, nullptr, 'o'},
        {"delay", required_argument, nullptr, 'd'}, {"once", no_argument, nullptr, '1'},
        {"clean", no_argument, nullptr, 'c'}, {"all-nodes", no_argument, nullptr, 'N'},
        {"time", required_argument, nullptr, 't'}, {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0}};
    Options o;
    auto number = [](const char *text, const char *what) {
        char *end = nullptr;
        double value = std::strtod(text, &end);
        if (end == text || *end != '\0' || !(value >= 0)) {
            usage_error(std::string(what) + " must be a number of 0 or more, not '" + text + "'");
        }
        return value;
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "d:h", table, nullptr)) != -1) {
        switch (c) {
        case 'D': o.dir = optarg; break;
        case 'j': o.job = optarg; break;
        case 'r': o.table.rank = static_cast<int>(number(optarg, "--rank")); break;
        case 's': o.table.sum = true; break;
        case 'a': o.table.all = true; break;
        case 'o':
            o.table.sort = optarg;
            if (o.table.sort != "catalogue" && o.table.sort != "name" && o.table.sort != "value" &&
                o.table.sort != "rate") {
                usage_error("--sort takes catalogue, name, value or rate, not '" + o.table.sort + "'");
            }
            break;
        case 'd':
            o.delay = number(optarg, "--delay");
            o.delay_given = true;
            break;
        case '1': o.once = true; break;
        case 'c': o.clean = true; break;
        case 'N': o.all_nodes = true; break;
        case 't': o.time_reads = static_cast<int>(number(optarg, "--time")); break;
        case 'h': std::fputs(kHelp, stdout); std::exit(0);
        default: usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
        }
    }
    if (optind < argc) {
        usage_error(std::string("unexpected argument '") + argv[optind] + "'");
    }
    if (!o.once && !o.clean && o.time_reads == 0 && o.delay < 0.05) {
        usage_error("--delay must be at least 0.05 seconds on the terminal");
    }
    return o;
}

// The jobs to show, with this read of each of their segments.
struct Snapshot {
    spc_live::Scan found;
    std::vector<spc_live::Job> jobs;
    std::vector<std::vector<spc_live::Values>> reads;
};

Snapshot take(const Options &o)
{
    Snapshot s;
    s.found = spc_live::scan(o.dir, o.all_nodes);
    for (spc_live::Job &job : spc_live::jobs(s.found)) {
        if (!o.job.empty() && job.jobid != o.job) {
            continue;
        }
        std::vector<spc_live::Values> reads;
        std::vector<spc_live::Segment *> readable;
        for (spc_live::Segment *segment : job.ranks) {
            try {
                reads.push_back(segment->read());
                readable.push_back(segment);
            } catch (const spc_live::Error &error) {
                s.found.errors.push_back(error.what());
            }
        }
        if (!readable.empty()) {
            job.ranks = readable;
            s.jobs.push_back(job);
            s.reads.push_back(std::move(reads));
        }
    }
    return s;
}

void remember(const Snapshot &s, spc_live::History &history)
{
    history.clear();
    for (size_t j = 0; j < s.jobs.size(); ++j) {
        for (size_t i = 0; i < s.jobs[j].ranks.size(); ++i) {
            const spc_live::Segment *segment = s.jobs[j].ranks[i];
            history[{segment->device(), segment->inode()}] = s.reads[j][i];
        }
    }
}

std::vector<std::string> screen(const Options &o, const Snapshot &s, const spc_live::History &previous)
{
    std::vector<std::string> lines;
    for (size_t j = 0; j < s.jobs.size(); ++j) {
        for (std::string &line : spc_live::job_table(s.jobs[j], s.reads[j], previous, o.table)) {
            lines.push_back(std::move(line));
        }
        lines.push_back("");
    }
    if (s.found.others > 0) {
        lines.push_back(std::to_string(s.found.others) + " live file" + (s.found.others == 1 ? "" : "s") +
                        " of other users, not readable by this user, not shown");
    }
    if (s.jobs.empty()) {
        lines.push_back("no live counters" + (o.job.empty() ? std::string() : " of job " + o.job) + " in " + o.dir +
                        " (a job publishes them with --mca mpi_spc_live 1)");
    }
    return lines;
}

int report_errors(const Snapshot &s)
{
    for (const std::string &error : s.found.errors) {
        std::fprintf(stderr, "spc-top: %s\n", error.c_str());
    }
    return s.found.errors.empty() ? 0 : 1;
}

int once(const Options &o)
{
    spc_live::History previous;
    if (o.delay_given) {
        remember(take(o), previous);
        usleep(static_cast<useconds_t>(o.delay * 1e6));
    }
    Snapshot s = take(o);
    for (const std::string &line : screen(o, s, previous)) {
        std::puts(line.c_str());
    }
    std::fflush(stdout);
    return report_errors(s);
}

int clean(const Options &o)
{
    spc_live::Scan found = spc_live::scan(o.dir, false);
    int removed = 0;
    for (const auto &segment : found.segments) {
        const spc_live::Status status = segment->status();
        // Dead, or kept after MPI_Finalize by a process that has exited.
        const bool gone = status == spc_live::Status::Dead ||
                          (status == spc_live::Status::Finalized && segment->node() == spc_live::this_node() &&
                           !segment->process_running());
        if (!gone) {
            continue;
        }
        // Its per-peer files first (spc-matrix's): a folder left with them
        // and no segment would name no process to clean them by.
        std::vector<std::string> files;
        try {
            files = spc_live::peer_files_of(segment->path());
        } catch (const spc_live::Error &e) {
            found.errors.push_back(e.what());
            continue;
        }
        files.push_back(segment->path());
        for (const std::string &file : files) {
            if (unlink(file.c_str()) == 0) {
                std::printf("removed %s (job %s rank %d, pid %lld, %s)\n", file.c_str(), segment->jobid().c_str(),
                            segment->rank(), static_cast<long long>(segment->pid()), spc_live::status_name(status));
                ++removed;
            } else {
                found.errors.push_back(file + ": cannot remove it: " + std::strerror(errno));
            }
        }
    }
    std::printf("%d file%s removed from %s\n", removed, removed == 1 ? "" : "s", o.dir.c_str());
    for (const std::string &error : found.errors) {
        std::fprintf(stderr, "spc-top: %s\n", error.c_str());
    }
    return found.errors.empty() ? 0 : 1;
}

int time_reads(const Options &o)
{
    size_t segments = 0;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.time_reads; ++i) {
        Snapshot s = take(o);
        segments = 0;
        for (const auto &job : s.jobs) {
            segments += job.ranks.size();
        }
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"reads\": %d, \"segments\": %zu, \"microseconds_per_read\": %.2f}\n", o.time_reads, segments,
                us / o.time_reads);
    return segments > 0 ? 0 : 1;
}

int interactive(Options o)
{
    if (!isatty(STDOUT_FILENO)) {
        std::fprintf(stderr, "spc-top: standard output is not a terminal; use --once for a plain table\n");
        return 2;
    }
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    const char *sorts[] = {"catalogue", "name", "value", "rate"};
    spc_live::History previous;
    size_t job_choice = 0, top = 0;
    std::vector<std::string> errors;
    for (;;) {
        Snapshot s = take(o);
        std::vector<std::string> lines;
        if (!s.jobs.empty()) {
            // One job at a time on the screen, j for the next.
            job_choice %= s.jobs.size();
            Snapshot one;
            one.jobs.push_back(s.jobs[job_choice]);
            one.reads.push_back(s.reads[job_choice]);
            lines = screen(o, one, previous);
        } else {
            lines = screen(o, s, previous);
        }
        remember(s, previous);
        erase();
        attron(A_REVERSE);
        mvprintw(0, 0, "spc-top  %s  job %zu of %zu  every %.2g s  sort %s  %s  (q s r a j + - arrows)", o.dir.c_str(),
                 s.jobs.empty() ? 0 : job_choice + 1, s.jobs.size(), o.delay, o.table.sort.c_str(),
                 o.table.sum ? "all ranks" : "per rank");
        attroff(A_REVERSE);
        int row = 1;
        for (const std::string &error : s.found.errors) {
            if (row < LINES - 1) {
                mvaddnstr(row++, 0, error.c_str(), COLS - 1);
            }
        }
        const int room = LINES - row;
        top = std::min(top, lines.size() > static_cast<size_t>(room) ? lines.size() - room : 0);
        for (size_t i = top; i < lines.size() && row < LINES; ++i) {
            mvaddnstr(row++, 0, lines[i].c_str(), COLS - 1);
        }
        refresh();
        timeout(static_cast<int>(o.delay * 1000));
        const int key = getch();
        switch (key) {
        case 'q': case 'Q': endwin(); return 0;
        case 's': {
            size_t k = 0;
            while (k < 4 && o.table.sort != sorts[k]) ++k;
            o.table.sort = sorts[(k + 1) % 4];
            break;
        }
        case 'r': o.table.sum = !o.table.sum; break;
        case 'a': o.table.all = !o.table.all; break;
        case 'j': ++job_choice; top = 0; break;
        case '+': o.delay = std::min(60.0, o.delay * 2); break;
        case '-': o.delay = std::max(0.05, o.delay / 2); break;
        case KEY_DOWN: ++top; break;
        case KEY_UP: top = top > 0 ? top - 1 : 0; break;
        case KEY_NPAGE: top += static_cast<size_t>(std::max(1, room - 1)); break;
        case KEY_PPAGE: top = top > static_cast<size_t>(room) ? top - room : 0; break;
        default: break;
        }
    }
}

}  // namespace

int main(int argc, char **argv)
{
    Options o = parse(argc, argv);
    if (o.clean) {
        return clean(o);
    }
    if (o.time_reads > 0) {
        return time_reads(o);
    }
    return o.once ? once(o) : interactive(o);
}
