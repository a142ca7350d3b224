// spc-exporter: serves the live counters of this node's MPI jobs to
// Prometheus, in its text format, over HTTP (cpp-httplib).
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <httplib.h>

#include "reader.hpp"

namespace {

const char kHelp[] = R"(NAME
    spc-exporter - the live counters of this node's MPI jobs for Prometheus

SYNOPSIS
    spc-exporter [--listen ADDRESS:PORT] [--dir DIR] [--all-nodes]

DESCRIPTION
    Serves, at http://ADDRESS:PORT/metrics, the software-based performance
    counters of every job on this node that runs with --mca mpi_spc_live 1,
    in Prometheus's text format.  Run one exporter per node and let the
    Prometheus server that already watches the nodes scrape them all:
    nothing of ours runs between the nodes.

    Every catalogue counter is one metric family named after it in lower
    case, with the labels jobid (Open MPI's job id; not "job", which
    Prometheus gives the scrape job), rank and node, and the catalogue's
    description as # HELP:
        counters and sums   ompi_spc_<name>_total            (counter)
        timers              ompi_spc_<name>_seconds_total    (counter, seconds)
        levels, watermarks  ompi_spc_<name>                  (gauge)
    and per rank ompi_spc_rank_state (1 running, 2 finalized, 3 dead,
    0 starting) and ompi_spc_rank_info (pid and program as labels); and
    ompi_spc_exporter_files_unreadable and
    ompi_spc_exporter_scrape_seconds (the time this scrape took to build).
    Processes that do not know their job are left out; ranks started by
    mpirun appear from their start (state 0); dead ranks stay until spc-top
    --clean removes their files, so what they counted is not lost.

    Each scrape maps every rank's file read-only and sums its threads: the
    job does nothing for it.  The files are readable by their user only,
    unless the job gave them to a group (mpi_spc_live_group): a site
    exporter running as a service account needs that group.

OPTIONS
    --listen ADDRESS:PORT   where to listen (default 127.0.0.1:9466, this
                            host only); port 0 takes a free port; the
                            address and port are printed on stdout
    --dir DIR               the folder of the live files (default /dev/shm,
                            as mpi_spc_live_dir)
    --all-nodes             also serve files written on other nodes (a
                            folder the nodes share)
    -h, --help              this text

PROMETHEUS
    scrape_configs:
      - job_name: ompi-spc
        scrape_interval: 5s
        static_configs:
          - targets: ['node1:9466', 'node2:9466']

EXIT STATUS
    0 after SIGINT or SIGTERM; 1 cannot listen; 2 bad usage.

SEE ALSO
    spc-top(1), spc-record(1), prometheus(1)
)";

struct Options {
    std::string host = "127.0.0.1";
    int port = 9466;
    std::string dir = SPC_LIVE_DEFAULT_DIR;
    bool all_nodes = false;
};

[[noreturn]] void usage_error(const std::string &message)
{
    std::fprintf(stderr, "spc-exporter: %s\n(spc-exporter --help tells more)\n", message.c_str());
    std::exit(2);
}

Options parse(int argc, char **argv)
{
    static const option table[] = {{"listen", required_argument, nullptr, 'l'},
                                   {"dir", required_argument, nullptr, 'D'},
                                   {"all-nodes", no_argument, nullptr, 'N'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
    Options o;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", table, nullptr)) != -1) {
        switch (c) {
        case 'l': {
            std::string listen = optarg;
            size_t colon = listen.rfind(':');
            char *end = nullptr;
            long port = colon == std::string::npos ? -1 : std::strtol(listen.c_str() + colon + 1, &end, 10);
            if (colon == std::string::npos || colon == 0 || end == listen.c_str() + colon + 1 || *end != '\0' ||
                port < 0 || port > 65535) {
                usage_error("--listen takes ADDRESS:PORT (such as 127.0.0.1:9466), not '" + listen + "'");
            }
            o.host = listen.substr(0, colon);
            if (o.host.size() > 2 && o.host.front() == '[' && o.host.back() == ']') {
                o.host = o.host.substr(1, o.host.size() - 2);  // [::1]:9466
            }
            o.port = static_cast<int>(port);
            break;
        }
        case 'D': o.dir = optarg; break;
        case 'N': o.all_nodes = true; break;
        case 'h': std::fputs(kHelp, stdout); std::exit(0);
        default: usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
        }
    }
    if (optind < argc) {
        usage_error(std::string("unexpected argument '") + argv[optind] + "'");
    }
    return o;
}

std::string lower(std::string text)
{
    for (char &c : text) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return text;
}

// Prometheus's escapes: HELP text escapes \ and newline, label values also ".
std::string escape(const std::string &text, bool label)
{
    std::string out;
    for (char c : text) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '"' && label) {
            out += "\\\"";
        } else {
            out += c;
        }
    }
    return out;
}

std::string number(double value)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

int state_value(spc_live::Status status)
{
    switch (status) {
    case spc_live::Status::Running: return 1;
    case spc_live::Status::Finalized: return 2;
    case spc_live::Status::Dead: return 3;
    default: return 0;
    }
}

struct Family {
    std::string name, type, help;
    std::string samples;
};

// One scrape: every readable rank of the folder, as metric families.
std::string scrape(const Options &o)
{
    const auto started = std::chrono::steady_clock::now();
    spc_live::Scan found = spc_live::scan(o.dir, o.all_nodes);
    std::map<std::string, Family> families;  // by name: one HELP and TYPE each
    std::vector<std::string> order;
    auto family = [&](const std::string &name, const char *type, const std::string &help) -> Family & {
        auto it = families.find(name);
        if (it == families.end()) {
            order.push_back(name);
            it = families.emplace(name, Family{name, type, help, ""}).first;
        }
        return it->second;
    };
    for (const auto &segment : found.segments) {
        if (segment->jobid().empty()) {
            continue;  // not an MPI rank (yet): no job to label it with
        }
        spc_live::Values v;
        try {
            v = segment->read();
        } catch (const spc_live::Error &error) {
            found.errors.push_back(error.what());
            continue;
        }
        const spc_live::Status status = segment->status();
        const std::string labels = "jobid=\"" + escape(segment->jobid(), true) + "\",rank=\"" +
                                   std::to_string(segment->rank()) + "\",node=\"" + escape(segment->node(), true) + "\"";
        family("ompi_spc_rank_state", "gauge",
               "State of an MPI rank publishing live counters: 1 running, 2 finalized, 3 dead (its process is gone), "
               "0 starting.")
            .samples += "ompi_spc_rank_state{" + labels + "} " + std::to_string(state_value(status)) + "\n";
        family("ompi_spc_rank_info", "gauge", "An MPI rank publishing live counters: its process id and program.")
            .samples += "ompi_spc_rank_info{" + labels + ",pid=\"" + std::to_string(segment->pid()) + "\",program=\"" +
                        escape(segment->program(), true) + "\"} 1\n";
        const auto &counters = segment->counters();
        for (size_t id = 0; id < counters.size(); ++id) {
            const spc_live::Counter &c = counters[id];
            const bool gauge = c.kind == SPC_KIND_LEVEL || c.kind == SPC_KIND_HIGHWATERMARK;
            if (gauge && !v.levels) {
                continue;  // not published by this rank
            }
            std::string name = lower(c.name);
            std::string help = c.description;
            std::string value;
            if (c.kind == SPC_KIND_TIMER) {
                name += "_seconds_total";
                help += " Exported in seconds.";
                value = number(segment->seconds(static_cast<int>(id), v.raw[id]));
            } else if (gauge) {
                help += " (" + c.unit + ")";
                value = std::to_string(spc_live::Segment::level_value(v.raw[id]));
            } else {
                name += "_total";
                help += " (" + c.unit + ")";
                value = std::to_string(v.raw[id]);
            }
            family(name, gauge ? "gauge" : "counter", help).samples += name + "{" + labels + "} " + value + "\n";
        }
    }
    for (const std::string &error : found.errors) {
        std::fprintf(stderr, "spc-exporter: %s\n", error.c_str());
    }
    std::string text;
    for (const std::string &name : order) {
        const Family &f = families[name];
        text += "# HELP " + f.name + " " + escape(f.help, false) + "\n# TYPE " + f.name + " " + f.type + "\n" +
                f.samples;
    }
    text += "# HELP ompi_spc_exporter_files_unreadable Live counter files of the folder this scrape could not read "
            "(the exporter's stderr names them and says why).\n"
            "# TYPE ompi_spc_exporter_files_unreadable gauge\n"
            "ompi_spc_exporter_files_unreadable " + std::to_string(found.errors.size()) + "\n";
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    text += "# HELP ompi_spc_exporter_scrape_seconds Time this scrape took to read the files and format them.\n"
            "# TYPE ompi_spc_exporter_scrape_seconds gauge\n"
            "ompi_spc_exporter_scrape_seconds " + number(seconds) + "\n";
    return text;
}

}  // namespace

int main(int argc, char **argv)
{
    Options o = parse(argc, argv);
    httplib::Server server;
    std::mutex one_scrape_at_a_time;  // keeps the exporter's cost to one core
    server.Get("/metrics", [&](const httplib::Request &, httplib::Response &response) {
        std::lock_guard<std::mutex> lock(one_scrape_at_a_time);
        response.set_content(scrape(o), "text/plain; version=0.0.4; charset=utf-8");
    });
    server.Get("/", [](const httplib::Request &, httplib::Response &response) {
        response.set_content("spc-exporter: the live counters of this node's MPI jobs are at /metrics\n",
                             "text/plain; charset=utf-8");
    });

    // SIGINT and SIGTERM stop the server from a thread of their own (stop()
    // is not for a signal handler).
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::thread stopper([&] {
        int signal = 0;
        sigwait(&signals, &signal);
        server.stop();
    });
    stopper.detach();

    int port = o.port;
    if (port == 0) {
        port = server.bind_to_any_port(o.host.c_str());
    } else if (!server.bind_to_port(o.host.c_str(), port)) {
        port = -1;
    }
    if (port < 0) {
        std::fprintf(stderr, "spc-exporter: cannot listen on %s:%d: %s\n", o.host.c_str(), o.port,
                     std::strerror(errno));
        return 1;
    }
    std::printf("spc-exporter: serving http://%s:%d/metrics from %s (node %s)\n", o.host.c_str(), port,
                o.dir.c_str(), spc_live::this_node().c_str());
    std::fflush(stdout);
    server.listen_after_bind();
    return 0;
}
