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
                 [--pushgateway HOST:PORT] [--sweep SECONDS]

DESCRIPTION
    Serves, at http://ADDRESS:PORT/metrics, the software-based performance
    counters of every rank of every job on this node that runs with --mca
    mpi_spc_live 1, in Prometheus's text format: one scrape target per
    node, whatever the number of jobs and ranks.  Run one exporter per node
    (as root, or as an account of the jobs' mpi_spc_live_group) and let the
    site's Prometheus scrape them all: nothing of ours runs between nodes.

    Every catalogue counter is one metric family named after it in lower
    case, with the catalogue's description as # HELP, and these labels:
        jobid       the batch system's job id (Slurm's), else mpirun's
        step        Slurm's job step ("batch" for a rank of the batch
                    script's node under mpirun), "" outside Slurm
        rank        the rank in MPI_COMM_WORLD (from MPI)
        local_rank  its rank among the job's ranks on this node
        node        this node's name
        mpi_jobid   Open MPI's own job id (one per mpirun or srun step)
    (never "job" or "instance": Prometheus sets those).  Kinds:
        counters and sums   ompi_spc_<name>_total            (counter)
        timers              ompi_spc_<name>_seconds_total    (counter, seconds)
        levels, watermarks  ompi_spc_<name>                  (gauge)
    and per rank ompi_spc_rank_state (1 running), ompi_spc_rank_info
    (pid and program as labels) and ompi_spc_mpi_init_timestamp_seconds
    (when its MPI_Init ran, Unix seconds), so that a job's share of its
    time since MPI_Init spent inside MPI is
        sum by (jobid) (ompi_spc_mpi_time_seconds_total)
          / sum by (jobid) (time() - ompi_spc_mpi_init_timestamp_seconds)
    (above 1 when threads of a rank are inside MPI at once: their times
    add up); and of the exporter itself
    ompi_spc_exporter_series (the rank series this scrape serves),
    ompi_spc_exporter_files_unreadable and ompi_spc_exporter_scrape_seconds.
    Per-peer arrays and message-size histograms are not exported: a rank
    gives one series per catalogue counter its job counts and its own
    three, whatever the size of the job.

    Only running ranks are served: a rank appears once it is through
    MPI_Init, and a finished job's series are gone from the next scrape.
    Each scrape, and a sweep every SECONDS without one, also tidies the
    folder: the file of a rank whose process is gone (killed, cancelled)
    is removed, and with --pushgateway the final values of a job's ranks on
    this node (kept with --mca mpi_spc_live_keep 1) are pushed once to a
    Prometheus Pushgateway, under the grouping key job="ompi_spc_final",
    jobid, mpi_jobid and node, and their files removed once pushed.

    Each scrape maps every rank's file read-only and sums its threads: the
    job does nothing for it.  A value is served only once its rank's state
    says it is complete (running, its identity set); a file that is not a
    live counter segment, or is damaged, is named on stderr once and
    skipped.

OPTIONS
    --listen ADDRESS:PORT   where to listen (default 127.0.0.1:9466, this
                            host only); port 0 takes a free port; the
                            address and port are printed on stdout.  A port
                            in use (another exporter) is an error: exit 1
    --dir DIR               the folder of the live files (default /dev/shm,
                            as mpi_spc_live_dir)
    --all-nodes             also serve files written on other nodes (a
                            folder the nodes share); files of other nodes
                            are never removed
    --pushgateway HOST:PORT push finished jobs' final values there
    --sweep SECONDS         how often to tidy the folder between scrapes
                            (default 5; 0: only at scrapes)
    -h, --help              this text

PROMETHEUS
    scrape_configs:
      - job_name: ompi-spc
        scrape_interval: 5s
        file_sd_configs:
          - files: ['/etc/prometheus/ompi-spc-nodes.json']

EXIT STATUS
    0 after SIGINT or SIGTERM; 1 cannot listen; 2 bad usage.

SEE ALSO
    spc-top(1), spc-record(1), prometheus(1), docs/cluster.md
)";

struct Options {
    std::string host = "127.0.0.1";
    int port = 9466;
    std::string dir = SPC_LIVE_DEFAULT_DIR;
    bool all_nodes = false;
    std::string push_host;  // "" : no Pushgateway
    int push_port = 0;
    double sweep_seconds = 5;
};

// ADDRESS:PORT (or [v6]:PORT) into its parts; false if it is not one.
bool address_port(const std::string &text, std::string &host, int &port)
{
    size_t colon = text.rfind(':');
    char *end = nullptr;
    long number = colon == std::string::npos ? -1 : std::strtol(text.c_str() + colon + 1, &end, 10);
    if (colon == std::string::npos || colon == 0 || end == text.c_str() + colon + 1 || *end != '\0' ||
        number < 0 || number > 65535) {
        return false;
    }
    host = text.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);  // [::1]:9466
    }
    port = static_cast<int>(number);
    return true;
}

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
                                   {"pushgateway", required_argument, nullptr, 'P'},
                                   {"sweep", required_argument, nullptr, 'S'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
    Options o;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", table, nullptr)) != -1) {
        switch (c) {
        case 'l':
            if (!address_port(optarg, o.host, o.port)) {
                usage_error(std::string("--listen takes ADDRESS:PORT (such as 127.0.0.1:9466), not '") + optarg + "'");
            }
            break;
        case 'P':
            if (!address_port(optarg, o.push_host, o.push_port) || o.push_port == 0) {
                usage_error(std::string("--pushgateway takes HOST:PORT (such as 127.0.0.1:9091), not '") + optarg +
                            "'");
            }
            break;
        case 'S': {
            char *end = nullptr;
            o.sweep_seconds = std::strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(o.sweep_seconds >= 0) || o.sweep_seconds > 86400) {
                usage_error(std::string("--sweep takes seconds from 0 to 86400, not '") + optarg + "'");
            }
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

struct Family {
    std::string name, type, help;
    std::string samples;
};

// Metric families in the order first seen: one HELP and TYPE each.
struct Families {
    std::map<std::string, Family> by_name;
    std::vector<std::string> order;
    size_t series = 0;

    Family &get(const std::string &name, const char *type, const std::string &help)
    {
        auto it = by_name.find(name);
        if (it == by_name.end()) {
            order.push_back(name);
            it = by_name.emplace(name, Family{name, type, help, ""}).first;
        }
        return it->second;
    }
    void add(const std::string &name, const char *type, const std::string &help, const std::string &labels,
             const std::string &value)
    {
        get(name, type, help).samples += name + "{" + labels + "} " + value + "\n";
        ++series;
    }
    std::string text() const
    {
        std::string out;
        for (const std::string &name : order) {
            const Family &f = by_name.at(name);
            out += "# HELP " + f.name + " " + escape(f.help, false) + "\n# TYPE " + f.name + " " + f.type + "\n" +
                   f.samples;
        }
        return out;
    }
};

std::string rank_labels(const spc_live::Segment &segment)
{
    const int local_rank = segment.local_rank();
    return "jobid=\"" + escape(segment.site_jobid(), true) + "\",step=\"" + escape(segment.step(), true) +
           "\",rank=\"" + std::to_string(segment.rank()) + "\",local_rank=\"" +
           (local_rank >= 0 ? std::to_string(local_rank) : "") + "\",node=\"" + escape(segment.node(), true) +
           "\",mpi_jobid=\"" + escape(segment.jobid(), true) + "\"";
}

// One rank's series: every catalogue counter its job counts, its state and
// its info (a counter the job's PML does not count has no series, not a 0).
void add_rank(Families &families, const spc_live::Segment &segment, const spc_live::Values &v, int state)
{
    const std::string labels = rank_labels(segment);
    families.add("ompi_spc_rank_state", "gauge",
                 "State of an MPI rank publishing live counters: 1 running, 2 finalized (pushed final values).",
                 labels, std::to_string(state));
    families.add("ompi_spc_rank_info", "gauge", "An MPI rank publishing live counters: its process id and program.",
                 labels + ",pid=\"" + std::to_string(segment.pid()) + "\",program=\"" +
                     escape(segment.program(), true) + "\"",
                 "1");
    // A timestamp, so that a job's share of time in MPI since MPI_Init is
    // one PromQL expression: sum by (jobid) (ompi_spc_mpi_time_seconds_total)
    // / sum by (jobid) (time() - ompi_spc_mpi_init_timestamp_seconds).
    families.add("ompi_spc_mpi_init_timestamp_seconds", "gauge",
                 "When the rank's MPI_Init ran, in Unix seconds (this node's clock).", labels,
                 number(static_cast<double>(segment.mpi_init_unix_ns()) / 1e9));
    const auto &counters = segment.counters();
    for (size_t id = 0; id < counters.size(); ++id) {
        const spc_live::Counter &c = counters[id];
        const bool gauge = c.kind == SPC_KIND_LEVEL || c.kind == SPC_KIND_HIGHWATERMARK;
        if ((gauge && !v.levels) || !segment.counted(static_cast<int>(id))) {
            continue;  // not published by this rank, or not counted by its PML
        }
        std::string name = lower(c.name);
        std::string help = c.description;
        std::string value;
        if (c.kind == SPC_KIND_TIMER) {
            name += "_seconds_total";
            help += " Exported in seconds.";
            value = number(segment.seconds(static_cast<int>(id), v.raw[id]));
        } else if (gauge) {
            help += " (" + c.unit + ")";
            value = std::to_string(spc_live::Segment::level_value(v.raw[id]));
        } else {
            name += "_total";
            help += " (" + c.unit + ")";
            value = std::to_string(v.raw[id]);
        }
        families.add(name, gauge ? "gauge" : "counter", help, labels, value);
    }
}

// A Pushgateway grouping-key label: as it is when plain, else in the
// base64url form the Pushgateway reads ("label@base64/..."), which also
// carries an empty value.
std::string group_label(const std::string &name, const std::string &value)
{
    bool plain = !value.empty();
    for (char c : value) {
        plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
    }
    if (plain) {
        return "/" + name + "/" + value;
    }
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    for (size_t i = 0; i < value.size(); i += 3) {
        uint32_t n = static_cast<unsigned char>(value[i]) << 16;
        n |= i + 1 < value.size() ? static_cast<unsigned char>(value[i + 1]) << 8 : 0;
        n |= i + 2 < value.size() ? static_cast<unsigned char>(value[i + 2]) : 0;
        out += digits[(n >> 18) & 63];
        out += digits[(n >> 12) & 63];
        out += i + 1 < value.size() ? digits[(n >> 6) & 63] : '=';
        out += i + 2 < value.size() ? digits[n & 63] : '=';
    }
    return "/" + name + "@base64/" + (out.empty() ? "=" : out);
}

class Exporter {
public:
    explicit Exporter(const Options &o) : o_(o) {}

    // One scrape: tidies the folder, then every running rank as metric families.
    std::string scrape()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto started = std::chrono::steady_clock::now();
        Families families;
        size_t unreadable = 0;
        sweep([&](const spc_live::Segment &segment, const spc_live::Values &v) { add_rank(families, segment, v, 1); },
              unreadable);
        std::string text = families.text();
        text += "# HELP ompi_spc_exporter_series Series of MPI ranks this scrape serves (the exporter's own not "
                "counted).\n# TYPE ompi_spc_exporter_series gauge\nompi_spc_exporter_series " +
                std::to_string(families.series) + "\n";
        text += "# HELP ompi_spc_exporter_files_unreadable Files of the folder this scrape could not read (the "
                "exporter's stderr names each once, with the reason).\n"
                "# TYPE ompi_spc_exporter_files_unreadable gauge\n"
                "ompi_spc_exporter_files_unreadable " + std::to_string(unreadable) + "\n";
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        text += "# HELP ompi_spc_exporter_scrape_seconds Time this scrape took to read the files and format them.\n"
                "# TYPE ompi_spc_exporter_scrape_seconds gauge\n"
                "ompi_spc_exporter_scrape_seconds " + number(seconds) + "\n";
        return text;
    }

    // Between scrapes: the same tidying, serving nothing.
    void sweep_only()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        size_t unreadable = 0;
        sweep([](const spc_live::Segment &, const spc_live::Values &) {}, unreadable);
    }

private:
    // Says MESSAGE once for KEY (a file and what is wrong with it), not at
    // every scrape.
    void say_once(const std::string &key, const std::string &message)
    {
        if (said_.insert(key).second) {
            std::fprintf(stderr, "spc-exporter: %s\n", message.c_str());
        }
    }

    // Reads the folder: calls serve(segment, values) for each running rank;
    // removes the files of ranks whose process is gone; pushes finished
    // jobs' final values (and removes their files once pushed).
    template <typename Serve>
    void sweep(Serve serve, size_t &unreadable)
    {
        spc_live::Scan found = spc_live::scan(o_.dir, o_.all_nodes);
        std::map<std::string, std::vector<const spc_live::Segment *>> finished;  // by Open MPI job id
        std::set<std::string> still_running;
        for (const auto &segment : found.segments) {
            // The state first, with acquire: a running rank's identity was
            // set before it, so no label below is half written.
            const uint64_t state = segment->state();
            const spc_live::Status status = segment->status();
            if (status == spc_live::Status::Dead) {
                if (unlink(segment->path().c_str()) == 0) {
                    std::fprintf(stderr, "spc-exporter: removed %s (rank %d of job %s: its process is gone)\n",
                                 segment->path().c_str(), segment->rank(), segment->site_jobid().c_str());
                } else {
                    say_once(segment->path() + " unlink", "cannot remove " + segment->path() + " of a dead rank: " +
                                                              std::strerror(errno));
                }
                continue;
            }
            if (state == SPC_LIVE_STARTING || segment->jobid().empty()) {
                if (!segment->jobid().empty()) {
                    still_running.insert(segment->jobid());  // named by mpirun, not through MPI_Init yet
                }
                continue;  // no identity to label it with yet
            }
            if (status == spc_live::Status::Finalized) {
                if (segment->node() == spc_live::this_node()) {  // another node's exporter pushes its own
                    finished[segment->jobid()].push_back(segment.get());
                }
                continue;
            }
            still_running.insert(segment->jobid());
            spc_live::Values v;
            try {
                v = segment->read();
            } catch (const spc_live::Error &error) {
                ++unreadable;
                say_once(segment->path() + " read", error.what());
                continue;
            }
            serve(*segment, v);
        }
        for (const std::string &error : found.errors) {
            ++unreadable;
            say_once(error, std::string(error) + " (skipped)");
        }
        if (o_.push_host.empty()) {
            return;
        }
        for (const auto &[jobid, ranks] : finished) {
            if (still_running.count(jobid) == 0) {
                push(ranks);
            }
        }
    }

    // PUTs the final values of one job's ranks on this node to the
    // Pushgateway, then removes their files.
    void push(const std::vector<const spc_live::Segment *> &ranks)
    {
        Families families;
        for (const spc_live::Segment *segment : ranks) {
            try {
                add_rank(families, *segment, segment->read(), 2);
            } catch (const spc_live::Error &error) {
                say_once(segment->path() + " read", error.what());
                return;
            }
        }
        const spc_live::Segment &first = *ranks.front();
        const std::string path = "/metrics/job/ompi_spc_final" + group_label("jobid", first.site_jobid()) +
                                 group_label("mpi_jobid", first.jobid()) + group_label("node", first.node());
        httplib::Client client(o_.push_host, o_.push_port);
        client.set_connection_timeout(2);
        client.set_read_timeout(5);
        client.set_write_timeout(5);
        auto result = client.Put(path.c_str(), families.text(), "text/plain; version=0.0.4");
        if (!result || result->status / 100 != 2) {
            say_once("push " + path, "cannot push to the Pushgateway " + o_.push_host + ":" +
                                         std::to_string(o_.push_port) + path + ": " +
                                         (result ? "HTTP " + std::to_string(result->status) + " " + result->body
                                                 : httplib::to_string(result.error())) +
                                         " (the files stay; tried again at each sweep)");
            return;
        }
        for (const spc_live::Segment *segment : ranks) {
            unlink(segment->path().c_str());
        }
        std::fprintf(stderr, "spc-exporter: pushed the final values of %zu rank%s of job %s (step %s) to %s:%d%s\n",
                     ranks.size(), ranks.size() == 1 ? "" : "s", first.site_jobid().c_str(),
                     first.step().empty() ? "-" : first.step().c_str(), o_.push_host.c_str(), o_.push_port,
                     path.c_str());
    }

    const Options o_;
    std::mutex mutex_;  // one scrape or sweep at a time: keeps the exporter's cost to one core
    std::set<std::string> said_;
};

// Listening options: SO_REUSEADDR only.  cpp-httplib's default also sets
// SO_REUSEPORT, with which a second exporter on the same port would bind
// and share the scrapes silently instead of failing.
void listen_options(socket_t sock)
{
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

}  // namespace

int main(int argc, char **argv)
{
    // Never destroyed: the sweeper thread may still run while main returns.
    static const Options o = parse(argc, argv);
    Exporter &exporter = *new Exporter(o);
    httplib::Server server;
    server.set_socket_options(listen_options);
    server.Get("/metrics", [&](const httplib::Request &, httplib::Response &response) {
        response.set_content(exporter.scrape(), "text/plain; version=0.0.4; charset=utf-8");
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
        const int error = errno;
        std::fprintf(stderr, "spc-exporter: cannot listen on %s:%d: %s%s\n", o.host.c_str(), o.port,
                     std::strerror(error), error == EADDRINUSE ? " (is another spc-exporter serving it?)" : "");
        return 1;
    }
    std::printf("spc-exporter: serving http://%s:%d/metrics from %s (node %s)\n", o.host.c_str(), port,
                o.dir.c_str(), spc_live::this_node().c_str());
    std::fflush(stdout);
    // The sweep between scrapes: dead ranks' files go, finished jobs are
    // pushed even when no one scrapes.
    if (o.sweep_seconds > 0) {
        std::thread sweeper([&exporter] {
            for (;;) {
                std::this_thread::sleep_for(std::chrono::duration<double>(o.sweep_seconds));
                exporter.sweep_only();
            }
        });
        sweeper.detach();
    }
    server.listen_after_bind();
    return 0;
}
