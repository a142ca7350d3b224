// The per-peer files (spc/live.h, "Per-peer arrays in shared files") and
// their reader (tools/live/matrix.hpp) against a writer in a child process
// that plays one rank of a job: storage made as files, named, counted
// into, folded when destroyed, and the process stopped at every store of a
// fold (as kill -9 would stop it): the reader's matrix is exact each time.
// One test counts from threads while a reader reads (concurrent suite,
// also under ThreadSanitizer).
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "matrix.hpp"
#include "spc/live.h"
#include "spc/spc.h"

namespace {

// Folders of this run, removed at its end (a child's files stay in them).
std::vector<std::string> scratches;
struct RemoveScratches : ::testing::Environment {
    void TearDown() override
    {
        for (const std::string &dir : scratches) {
            std::filesystem::remove_all(dir);
        }
    }
};
const auto *const remove_scratches = ::testing::AddGlobalTestEnvironment(new RemoveScratches);

std::string scratch()
{
    char name[] = "/tmp/spc-matrix-test.XXXXXX";
    EXPECT_NE(mkdtemp(name), nullptr);
    scratches.push_back(name);
    return name;
}

std::vector<std::string> files_in(const std::string &dir)
{
    std::vector<std::string> names;
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d)) {
            if (e->d_name[0] != '.') {
                names.push_back(e->d_name);
            }
        }
        closedir(d);
    }
    return names;
}

// This process as rank `rank` of job "77" of 4 ranks, with peer files on.
void become_rank(const std::string &dir, int rank)
{
    char message[1024] = "";
    if (spc_live_start(dir.c_str(), nullptr, message, sizeof message) != SPC_SUCCESS) {
        std::fprintf(stderr, "spc_live_start: %s\n", message);
        _exit(10);
    }
    spc_live_identity who{dir.c_str(), nullptr, "77", nullptr, rank, 4, 0};
    if (spc_live_publish(&who, message, sizeof message) != SPC_SUCCESS ||
        spc_live_peers_start(message, sizeof message) != SPC_SUCCESS) {
        std::fprintf(stderr, "%s\n", message);
        _exit(11);
    }
}

// Runs body in a child (live starts once a process) and waits for it; its
// exit status.
template <typename Body>
int in_child(Body body)
{
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        body();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// The traffic of the rank played: a communicator of 3 whose ranks are the
// job's 3, 0 and a process of another job (-1), and a window of 2 (the
// job's 2 and 1).
const int32_t kCommRanks[3] = {3, 0, -1};
const int32_t kWinRanks[2] = {2, 1};

struct spc_comm *made_comm()
{
    struct spc_comm *comm = spc_comm_create(3);
    spc_comm_live_name(comm, kCommRanks);
    spc_comm_add_peer(comm, SPC_PEER_MESSAGES_SENT, 0, 5);         // to the job's 3
    spc_comm_add_peer(comm, SPC_PEER_BYTES_SENT, 0, 80);
    spc_comm_add_peer(comm, SPC_PEER_MESSAGES_RECEIVED, 1, 2);     // from the job's 0
    spc_comm_add_peer(comm, SPC_PEER_BYTES_RECEIVED, 1, 16);
    spc_comm_add_peer(comm, SPC_PEER_INTERNAL_MESSAGES_SENT, 1, 10);
    spc_comm_add_peer(comm, SPC_PEER_INTERNAL_BYTES_SENT, 1, 640);
    spc_comm_add_peer(comm, SPC_PEER_MESSAGES_SENT, 2, 7);         // another job's: left out
    return comm;
}

struct spc_comm *made_window()
{
    struct spc_comm *win = spc_comm_create(2);
    spc_comm_live_name(win, kWinRanks);
    spc_comm_add_peer(win, SPC_PEER_ONE_SIDED_MESSAGES_SENT, 0, 3);  // on the job's 2
    spc_comm_add_peer(win, SPC_PEER_ONE_SIDED_BYTES_SENT, 0, 24);
    spc_comm_add_peer(win, SPC_PEER_ONE_SIDED_MESSAGES_RECEIVED, 1, 1);  // from the job's 1
    spc_comm_add_peer(win, SPC_PEER_ONE_SIDED_BYTES_RECEIVED, 1, 8);
    return win;
}

// What rank 1 of made_comm and made_window, times `times`, reads as.
const char *const kExpected =
    "rank,peer,kind,messages_sent,bytes_sent,messages_received,bytes_received\n"
    "1,0,user,0,0,2,16\n"
    "1,0,internal,10,640,0,0\n"
    "1,1,one-sided,0,0,1,8\n"
    "1,2,one-sided,3,24,0,0\n"
    "1,3,user,5,80,0,0\n";
const char *const kExpectedTwice =
    "rank,peer,kind,messages_sent,bytes_sent,messages_received,bytes_received\n"
    "1,0,user,0,0,4,32\n"
    "1,0,internal,20,1280,0,0\n"
    "1,1,one-sided,0,0,2,16\n"
    "1,2,one-sided,6,48,0,0\n"
    "1,3,user,10,160,0,0\n";

std::string csv_of(const spc_live::Matrix &matrix)
{
    char *text = nullptr;
    size_t size = 0;
    std::FILE *out = open_memstream(&text, &size);
    spc_live::write_matrix_csv(out, matrix);
    std::fclose(out);
    std::string csv(text, size);
    std::free(text);
    return csv;
}

TEST(LiveMatrix, StorageInUseIsReadByTheJobsRanks)
{
    const std::string dir = scratch();
    ASSERT_EQ(in_child([&] {
        become_rank(dir, 1);
        made_comm();
        made_window();
        _exit(0);  // as killed: nothing folded, nothing removed
    }), 0);
    const spc_live::Matrix matrix = spc_live::read_matrix(dir, "");
    EXPECT_EQ(matrix.jobid, "77");
    EXPECT_EQ(matrix.size, 4);
    EXPECT_EQ(matrix.storages, 2);
    EXPECT_EQ(matrix.unnamed, 0);
    EXPECT_EQ(csv_of(matrix), kExpected);
    // the matrix file and the two storages', beside the live segment
    EXPECT_EQ(files_in(dir).size(), 4u);
}

TEST(LiveMatrix, FreedStorageIsFoldedAndItsFileRemoved)
{
    const std::string dir = scratch();
    ASSERT_EQ(in_child([&] {
        become_rank(dir, 1);
        spc_comm_destroy(made_comm());
        spc_comm_destroy(made_window());
        made_comm();   // the same again, in use
        made_window();
        _exit(0);
    }), 0);
    const spc_live::Matrix matrix = spc_live::read_matrix(dir, "77");
    EXPECT_EQ(matrix.storages, 2);  // the freed two are gone
    EXPECT_EQ(csv_of(matrix), kExpectedTwice);
    EXPECT_EQ(files_in(dir).size(), 4u);
}

// The fold stopped before each of its stores in turn, as a kill -9 could
// stop it: every cell counts once.  Stores: 2 to begin, 4 per cell with
// traffic of a job's rank (6 for the communicator: 7 cells but another
// job's), 3 to end.
TEST(LiveMatrix, KillInTheMiddleOfAFoldCountsEachCellOnce)
{
    const long stores = 2 + 4 * 6 + 3;
    for (long stop = 0; stop <= stores; ++stop) {
        const std::string dir = scratch();
        ASSERT_EQ(in_child([&] {
            become_rank(dir, 1);
            made_window();
            spc_comm_destroy(made_window());  // a fold that completes: the journal holds an old one
            struct spc_comm *comm = made_comm();
            made_comm();
            spc_comm_destroy(made_window());
            spc_live_peers_test_stop_fold(stop);
            spc_comm_destroy(comm);
            _exit(stop == stores ? 0 : 1);
        }), 0) << "stopped before store " << stop;  // 1: the hook did not stop it
        const spc_live::Matrix matrix = spc_live::read_matrix(dir, "77");
        EXPECT_EQ(csv_of(matrix),
                  "rank,peer,kind,messages_sent,bytes_sent,messages_received,bytes_received\n"
                  "1,0,user,0,0,4,32\n"
                  "1,0,internal,20,1280,0,0\n"
                  "1,1,one-sided,0,0,3,24\n"
                  "1,2,one-sided,9,72,0,0\n"
                  "1,3,user,10,160,0,0\n")
            << "stopped before store " << stop;
    }
}

// The control: the stop hook does stop the fold there (a fold stopped
// after its first cell, read without the journal, counts that cell twice).
TEST(LiveMatrix, TheStopHookStopsTheFoldThere)
{
    const std::string dir = scratch();
    ASSERT_EQ(in_child([&] {
        become_rank(dir, 1);
        struct spc_comm *comm = made_comm();
        spc_live_peers_test_stop_fold(2 + 4);
        spc_comm_destroy(comm);
        _exit(1);  // not reached
    }), 0);
    // the storage is still there, named, not folded; the matrix has its first cell
    const std::string stem = dir + "/" SPC_PEERS_FILE_PREFIX + std::to_string(getuid()) + ".77.1.";
    int fd = open((stem + SPC_PEERS_MATRIX_NAME).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    struct stat st;
    fstat(fd, &st);
    auto *m = static_cast<const spc_live_peers_header *>(
        mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0));
    close(fd);
    const auto *cells = reinterpret_cast<const uint64_t *>(reinterpret_cast<const char *>(m) + m->arrays_offset);
    EXPECT_EQ(m->fold_serial, 1u);
    EXPECT_EQ(m->fold_cell, 0u);  // the first cell with traffic: messages sent to peer 0, the job's 3
    EXPECT_EQ(cells[SPC_PEER_MESSAGES_SENT * 4 + 3], 5u);
    EXPECT_EQ(access((stem + "1").c_str(), F_OK), 0);
    munmap(const_cast<spc_live_peers_header *>(m), static_cast<size_t>(st.st_size));
    // and the reader counts those 5 messages once
    EXPECT_EQ(csv_of(spc_live::read_matrix(dir, "77")),
              "rank,peer,kind,messages_sent,bytes_sent,messages_received,bytes_received\n"
              "1,0,user,0,0,2,16\n"
              "1,0,internal,10,640,0,0\n"
              "1,3,user,5,80,0,0\n");
}

// A forked child counts into a private copy: its adds and its free (which
// would fold and remove the file) do not reach the files.
TEST(LiveMatrix, ForkedChildDoesNotCountIntoTheFiles)
{
    const std::string dir = scratch();
    ASSERT_EQ(in_child([&] {
        become_rank(dir, 1);
        struct spc_comm *comm = made_comm();
        const int child = in_child([&] {
            spc_comm_add_peer(comm, SPC_PEER_MESSAGES_SENT, 0, 100);
            spc_comm_destroy(comm);
            _exit(spc_comm_create(3) != nullptr && spc_comm_live_unnamed(comm) == 0 ? 0 : 3);
        });
        _exit(child);
    }), 0);
    const spc_live::Matrix matrix = spc_live::read_matrix(dir, "77");
    EXPECT_EQ(matrix.storages, 1);
    EXPECT_EQ(csv_of(matrix),
              "rank,peer,kind,messages_sent,bytes_sent,messages_received,bytes_received\n"
              "1,0,user,0,0,2,16\n"
              "1,0,internal,10,640,0,0\n"
              "1,3,user,5,80,0,0\n");
    EXPECT_EQ(files_in(dir).size(), 3u);  // the child's new storage is private too
}

TEST(LiveMatrix, UnnamedStorageIsLeftOutAndCounted)
{
    const std::string dir = scratch();
    ASSERT_EQ(in_child([&] {
        become_rank(dir, 1);
        struct spc_comm *comm = spc_comm_create(3);
        spc_comm_add_peer(comm, SPC_PEER_MESSAGES_SENT, 0, 5);
        spc_comm_add_peer(comm, SPC_PEER_INTERNAL_MESSAGES_RECEIVED, 2, 4);
        spc_comm_add_peer(comm, SPC_PEER_BYTES_SENT, 0, 80);
        _exit(0);
    }), 0);
    const spc_live::Matrix matrix = spc_live::read_matrix(dir, "77");
    EXPECT_EQ(matrix.unnamed, 1);
    EXPECT_EQ(matrix.unnamed_messages, 9u);
    EXPECT_EQ(csv_of(matrix), "rank,peer,kind,messages_sent,bytes_sent,messages_received,bytes_received\n");
}

TEST(LiveMatrix, FinalizeRemovesTheFilesUnlessKept)
{
    for (int keep = 0; keep <= 1; ++keep) {
        const std::string dir = scratch();
        ASSERT_EQ(in_child([&] {
            become_rank(dir, 1);
            struct spc_comm *comm = made_comm();
            made_window();
            spc_live_finalize(keep);
            spc_comm_destroy(comm);  // after MPI_Finalize began, as Open MPI frees its communicators
            _exit(0);
        }), 0);
        if (keep) {
            // the kept matrix holds the communicator freed after finalize; the window is still a file
            EXPECT_EQ(csv_of(spc_live::read_matrix(dir, "77")), kExpected);
            EXPECT_EQ(files_in(dir).size(), 3u);
        } else {
            EXPECT_EQ(files_in(dir).size(), 0u);
        }
    }
}

TEST(LiveMatrix, BadFoldersJobsAndFilesAreNamed)
{
    auto error_of = [](const std::string &dir, const std::string &job) {
        try {
            spc_live::read_matrix(dir, job);
        } catch (const spc_live::Error &e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error_of("/nonexistent-spc", ""), "/nonexistent-spc: No such file or directory");
    const std::string empty = scratch();
    EXPECT_EQ(error_of(empty, ""), empty + ": no per-peer files (a job writes them with --mca mpi_spc_live 1 and "
                                           "mpi_spc_attach naming traffic)");
    const std::string dir = scratch();
    ASSERT_EQ(in_child([&] {
        become_rank(dir, 2);
        made_comm();
        _exit(0);
    }), 0);
    EXPECT_EQ(error_of(dir, "78"), dir + ": no per-peer files of job 78");
    EXPECT_EQ(error_of(dir, "77"), "no error");
    // a file of another format version
    const std::string path = dir + "/" SPC_PEERS_FILE_PREFIX + std::to_string(getuid()) + ".77.2.1";
    int fd = open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint32_t version = SPC_PEERS_VERSION + 1;
    ASSERT_EQ(pwrite(fd, &version, sizeof version, offsetof(spc_live_peers_header, version)),
              static_cast<ssize_t>(sizeof version));
    EXPECT_EQ(error_of(dir, "77"), path + ": format version 2, this reader reads version 1");
    // damaged: its arrays past its end
    version = SPC_PEERS_VERSION;
    int32_t peers = 1 << 20;
    ASSERT_EQ(pwrite(fd, &version, sizeof version, offsetof(spc_live_peers_header, version)),
              static_cast<ssize_t>(sizeof version));
    ASSERT_EQ(pwrite(fd, &peers, sizeof peers, offsetof(spc_live_peers_header, peers)),
              static_cast<ssize_t>(sizeof peers));
    struct stat st;
    fstat(fd, &st);
    EXPECT_EQ(error_of(dir, "77"),
              path + ": damaged: its header does not fit its " + std::to_string(st.st_size) + " bytes");
    close(fd);
    // a job with live segments but no per-peer files: run without traffic
    const std::string plain = scratch();
    ASSERT_EQ(in_child([&] {
        char message[256];
        spc_live_start(plain.c_str(), nullptr, message, sizeof message);
        spc_live_identity who{plain.c_str(), nullptr, "79", nullptr, 0, 1, 0};
        spc_live_publish(&who, message, sizeof message);
        _exit(0);
    }), 0);
    EXPECT_EQ(error_of(plain, "79"), plain + ": no per-peer files of job 79 (its live segments are there: it ran "
                                             "without mpi_spc_attach naming traffic)");
    // two jobs: one must be named
    ASSERT_EQ(in_child([&] {
        char message[256];
        spc_live_start(dir.c_str(), nullptr, message, sizeof message);
        spc_live_identity who{dir.c_str(), nullptr, "80", nullptr, 0, 1, 0};
        spc_live_publish(&who, message, sizeof message);
        spc_live_peers_start(message, sizeof message);
        _exit(0);
    }), 0);
    EXPECT_EQ(error_of(dir, ""), dir + ": per-peer files of 2 jobs; name one with --job (77, 80)");
}

// Threads count into a communicator in use while others are made, counted
// and freed (folded), and a reader reads all along: no cell ever goes back,
// and the last read is exact.  Runs in this process (no fork), so that
// ThreadSanitizer sees the writer's side.
TEST(LiveMatrix, ConcurrentReaderNeverSeesACellGoBack)
{
    const std::string dir = scratch();
    become_rank(dir, 1);
    struct spc_comm *world = spc_comm_create(4);
    const int32_t world_ranks[4] = {0, 1, 2, 3};
    spc_comm_live_name(world, world_ranks);
    constexpr int kSends = 20000, kFolds = 200;
    std::atomic<bool> done{false};
    std::thread sender([&] {
        for (int i = 0; i < kSends; ++i) {
            spc_comm_add_peer(world, SPC_PEER_MESSAGES_SENT, 2, 1);
        }
    });
    std::thread folder([&] {
        const int32_t split[2] = {3, 0};
        for (int i = 0; i < kFolds; ++i) {
            struct spc_comm *comm = spc_comm_create(2);
            spc_comm_live_name(comm, split);
            spc_comm_add_peer(comm, SPC_PEER_MESSAGES_SENT, 0, 1);     // to the job's 3
            spc_comm_add_peer(comm, SPC_PEER_BYTES_RECEIVED, 1, 8);    // from the job's 0
            spc_comm_destroy(comm);
        }
    });
    std::thread reader([&] {
        uint64_t last_sent = 0, last_to_3 = 0, last_from_0 = 0;
        int reads = 0;
        while (!done.load()) {
            const spc_live::Matrix m = spc_live::read_matrix(dir, "77");
            const uint64_t sent = m.at(1, SPC_PEER_MESSAGES_SENT, 2), to_3 = m.at(1, SPC_PEER_MESSAGES_SENT, 3),
                           from_0 = m.at(1, SPC_PEER_BYTES_RECEIVED, 0);
            EXPECT_GE(sent, last_sent);
            EXPECT_GE(to_3, last_to_3);
            EXPECT_GE(from_0, last_from_0);
            last_sent = sent, last_to_3 = to_3, last_from_0 = from_0;
            ++reads;
        }
        EXPECT_GT(reads, 0);
    });
    sender.join();
    folder.join();
    done.store(true);
    reader.join();
    const spc_live::Matrix m = spc_live::read_matrix(dir, "77");
    EXPECT_EQ(m.at(1, SPC_PEER_MESSAGES_SENT, 2), static_cast<uint64_t>(kSends));
    EXPECT_EQ(m.at(1, SPC_PEER_MESSAGES_SENT, 3), static_cast<uint64_t>(kFolds));
    EXPECT_EQ(m.at(1, SPC_PEER_BYTES_RECEIVED, 0), 8u * kFolds);
    EXPECT_EQ(m.storages, 1);
}

}  // namespace
