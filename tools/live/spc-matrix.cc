// spc-matrix: a running or killed job's communication matrix, from its
// per-peer files (mpi_spc_live with traffic attached), as the finalize
// report's NAME.matrix.csv.
#include <errno.h>
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "matrix.hpp"

namespace {

const char kHelp[] = R"(NAME
    spc-matrix - a running or killed MPI job's communication matrix

SYNOPSIS
    spc-matrix [--dir DIR] [--job ID] [--out FILE]

DESCRIPTION
    Writes the communication matrix of a job that runs with
    --mca mpi_spc_live 1 and mpi_spc_attach naming traffic, from the
    per-peer files its ranks keep beside their live files: while it runs,
    what each rank has counted so far; after it was killed (kill -9, the
    OOM killer, MPI_Abort), what it had counted until then.  The CSV is the
    one MPI_Finalize writes as NAME.matrix.csv (docs/traffic.md): columns
    rank, peer, kind (user, internal, one-sided), messages_sent, bytes_sent,
    messages_received, bytes_received, in MPI_COMM_WORLD ranks, one row per
    rank, peer and kind with traffic; traffic with processes of other jobs
    is left out, as there.  The difference: the finalize file holds the
    values of MPI_Finalize, this one those of now.  A communicator whose
    ranks were not yet written when the job was killed (inside the call
    that made it) is left out, and said on stderr with its messages.
    python3 -m analysis.matrix_plot draws the CSV.

    It reads this node's files: on several nodes, run it on each and join
    the rows (each rank is on one node).  A job that ended with
    MPI_Finalize removed its files (unless mpi_spc_live_keep kept them).
    A killed job's files stay until removed: rm DIR/ompi-spc-peers.UID.JOB.*

OPTIONS
    --dir DIR     the folder of the live files (default /dev/shm, as
                  mpi_spc_live_dir)
    --job ID      the job, by Open MPI's job id (the number after the
                  user's in the files' names) (default: the one job with
                  per-peer files in DIR; an error names them if there are
                  several)
    -o, --out FILE
                  the CSV file (default: - , stdout)
    -h, --help    this text

EXIT STATUS
    0 written; 1 no such folder, no per-peer files (of that job), a file
    that cannot be read or is of another format version, or the CSV
    cannot be written; 2 bad usage.

EXAMPLE
    mpirun -np 4 --mca mpi_spc_live 1 --mca mpi_spc_attach traffic ./app &
    spc-matrix -o app.matrix.csv
    python3 -m analysis.matrix_plot app.matrix.csv app.png

SEE ALSO
    spc-top(1), spc-record(1)
)";

struct Options {
    std::string dir = SPC_LIVE_DEFAULT_DIR, job, out = "-";
};

[[noreturn]] void usage_error(const std::string &message)
{
    std::fprintf(stderr, "spc-matrix: %s\n(spc-matrix --help tells more)\n", message.c_str());
    std::exit(2);
}

Options parse(int argc, char **argv)
{
    static const option table[] = {{"dir", required_argument, nullptr, 'D'},
                                   {"job", required_argument, nullptr, 'j'},
                                   {"out", required_argument, nullptr, 'o'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
    Options o;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "ho:", table, nullptr)) != -1) {
        switch (c) {
        case 'D': o.dir = optarg; break;
        case 'j': o.job = optarg; break;
        case 'o': o.out = optarg; break;
        case 'h': std::fputs(kHelp, stdout); std::exit(0);
        case ':': usage_error(std::string("option '") + argv[optind - 1] + "' needs a value");
        default: usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
        }
    }
    if (optind < argc) {
        usage_error(std::string("unexpected argument '") + argv[optind] + "'");
    }
    return o;
}

}  // namespace

int main(int argc, char **argv)
{
    const Options o = parse(argc, argv);
    spc_live::Matrix matrix;
    try {
        matrix = spc_live::read_matrix(o.dir, o.job);
    } catch (const spc_live::Error &e) {
        std::fprintf(stderr, "spc-matrix: %s\n", e.what());
        return 1;
    }
    std::FILE *out = o.out == "-" ? stdout : std::fopen(o.out.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "spc-matrix: %s: %s\n", o.out.c_str(), std::strerror(errno));
        return 1;
    }
    spc_live::write_matrix_csv(out, matrix);
    const bool written = std::fflush(out) == 0 && !std::ferror(out);
    if (out != stdout && std::fclose(out) != 0) {
        std::fprintf(stderr, "spc-matrix: %s: %s\n", o.out.c_str(), std::strerror(errno));
        return 1;
    }
    if (!written) {
        std::fprintf(stderr, "spc-matrix: %s: %s\n", o.out.c_str(), std::strerror(errno));
        return 1;
    }
    if (matrix.unnamed > 0) {
        std::fprintf(stderr, "spc-matrix: job %s: %d communicators' traffic (%llu messages) could not be placed "
                     "by rank and is left out\n", matrix.jobid.c_str(), matrix.unnamed,
                     static_cast<unsigned long long>(matrix.unnamed_messages));
    }
    std::fprintf(stderr, "spc-matrix: job %s, %zu of %d ranks' files, %d communicators and windows in use\n",
                 matrix.jobid.c_str(), matrix.ranks.size(), matrix.size, matrix.storages);
    return 0;
}
