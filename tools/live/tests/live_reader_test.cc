// The live segment read from outside its writer: this process publishes its
// counters (spc_live_start, as libspc does for mpi_spc_live) and a reader
// of its own maps the file read-only, as spc-top does, while two threads
// count.  Also: levels, a forked child, the file's mode, damaged files, and
// the final values.  In the concurrent suite, so test.sh runs it under
// ThreadSanitizer too.  Built with -fPIC, so that this program does not
// copy spc_shared into itself (live.cc: a copy cannot be published).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "reader.hpp"
#include "table.hpp"
#include "spc/live.h"
#include "spc/spc.h"

namespace {

std::string folder;
std::string segment_path;
uint64_t before_init_ns, after_init_ns;  // this process's clock around spc_live_publish

class LiveEnvironment : public ::testing::Environment {
public:
    void SetUp() override
    {
        char name[] = "/tmp/spc-live-test-XXXXXX";
        ASSERT_NE(mkdtemp(name), nullptr);
        folder = name;
        char message[1024];
        ASSERT_EQ(spc_live_start(folder.c_str(), nullptr, message, sizeof message), SPC_SUCCESS) << message;
        EXPECT_STREQ(message, "");
        // As a rank of Slurm job 777's step 3 that srun started (PMIx, no
        // mpirun): the batch identity comes from Slurm's variables, the
        // local rank from Slurm's local task id; SLURM_PROCID is ignored.
        setenv("SLURM_JOB_ID", "777", 1);
        setenv("SLURM_STEP_ID", "3", 1);
        setenv("SLURM_LOCALID", "1", 1);
        setenv("SLURM_PROCID", "5", 1);
        setenv("PMIX_RANK", "0", 1);
        unsetenv("OMPI_COMM_WORLD_RANK");
        unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
        spc_live_identity who{folder.c_str(), nullptr, "4242", nullptr, 0, 1, 0};
        before_init_ns = spc_live::unix_ns();
        ASSERT_EQ(spc_live_publish(&who, message, sizeof message), SPC_SUCCESS) << message;
        after_init_ns = spc_live::unix_ns();
        segment_path = spc_live_path();
        EXPECT_EQ(segment_path, folder + "/" SPC_LIVE_FILE_PREFIX + std::to_string(getuid()) + ".4242.0");
    }
    void TearDown() override
    {
        std::string command = "rm -rf '" + folder + "'";
        EXPECT_EQ(std::system(command.c_str()), 0);
    }
};

const auto *environment = ::testing::AddGlobalTestEnvironment(new LiveEnvironment);

uint64_t raw(const spc_live::Segment &segment, int id) { return segment.read().raw.at(id); }

TEST(Live, SegmentIsFoundNamedAndRunning)
{
    spc_live::Scan found = spc_live::scan(folder, false);
    ASSERT_EQ(found.segments.size(), 1u);
    EXPECT_TRUE(found.errors.empty());
    const spc_live::Segment &s = *found.segments[0];
    EXPECT_EQ(s.jobid(), "4242");
    EXPECT_EQ(s.batch_job(), "777");
    EXPECT_EQ(s.site_jobid(), "777");
    EXPECT_EQ(s.step(), "3");
    EXPECT_EQ(s.local_rank(), 1);
    EXPECT_EQ(s.rank(), 0);
    EXPECT_EQ(s.size(), 1);
    EXPECT_EQ(s.pid(), getpid());
    EXPECT_EQ(s.node(), spc_live::this_node());
    EXPECT_EQ(s.status(), spc_live::Status::Running);
    ASSERT_EQ(s.counters().size(), static_cast<size_t>(OMPI_SPC_NUM_COUNTERS));
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        EXPECT_EQ(s.counters()[id].name, spc_counter_infos[id].name);
        EXPECT_EQ(s.counters()[id].description, spc_counter_infos[id].description);
        EXPECT_EQ(s.counters()[id].kind, spc_counter_infos[id].kind);
    }
}

// The batch identity's other cases, as the finalize report also takes it.
TEST(Live, BatchIdentityFromTheLauncher)
{
    struct Case {
        const char *job, *step, *procid, *localid, *pmix_rank, *world_rank, *world_local;
        const char *want_job, *want_step;
        int want_local;
    } cases[] = {
        // mpirun outside Slurm: its own local rank, no batch job
        {nullptr, nullptr, nullptr, nullptr, "1", "1", "1", "", "", 1},
        // salloc + mpirun: the daemons' step, mpirun's local rank (SLURM_PROCID/LOCALID are the daemon's)
        {"12", "0", "2", "0", "3", "3", "1", "12", "0", 1},
        // sbatch + mpirun, a rank beside mpirun in the batch script: no step id
        {"13", nullptr, "0", "0", "1", "1", "1", "13", "batch", 1},
        // srun --mpi=pmix: Slurm's local task id
        {"14", "2", "4", "1", "4", nullptr, nullptr, "14", "2", 1},
        // nothing known
        {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "", "", -1},
        // a damaged value is not a local rank
        {nullptr, nullptr, nullptr, nullptr, "1", "1", "x1", "", "", -1},
    };
    auto put = [](const char *name, const char *value) { value ? setenv(name, value, 1) : unsetenv(name); };
    for (const Case &c : cases) {
        put("SLURM_JOB_ID", c.job);
        put("SLURM_STEP_ID", c.step);
        put("SLURM_PROCID", c.procid);
        put("SLURM_LOCALID", c.localid);
        put("PMIX_RANK", c.pmix_rank);
        put("OMPI_COMM_WORLD_RANK", c.world_rank);
        put("OMPI_COMM_WORLD_LOCAL_RANK", c.world_local);
        char job[32] = "?", step[16] = "?";
        int local = -7;
        spc_batch_identity(job, sizeof job, step, sizeof step, &local);
        EXPECT_STREQ(job, c.want_job) << (c.job ? c.job : "no job");
        EXPECT_STREQ(step, c.want_step) << (c.job ? c.job : "no job");
        EXPECT_EQ(local, c.want_local) << (c.job ? c.job : "no job");
    }
}

TEST(Live, FileIsReadableByItsUserOnly)
{
    struct stat st;
    ASSERT_EQ(stat(segment_path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(st.st_uid, getuid());
    // 32 thread blocks by default (SPC_LIVE_DEFAULT_THREADS): within 128 KiB
    EXPECT_GT(st.st_size, 64 * 1024);
    EXPECT_LE(st.st_size, 128 * 1024);
}

// 10^6 updates from 2 threads, each a chain of 10 short-lived threads (so
// exited threads' blocks are handed on), while a reader sums the segment in
// a tight loop: no counter ever goes back, and the totals are exact. Every
// writer waits halfway for a whole read, so the reader provably read while
// counters moved.
TEST(Live, ReaderNeverSeesACounterGoBackAndTotalsAreExact)
{
    constexpr int kChains = 2, kThreadsPerChain = 10, kUpdates = 50000;
    const int send = OMPI_SPC_SEND, bytes = OMPI_SPC_BYTES_SENT_USER;
    spc_live::Segment reader(segment_path);
    const uint64_t send_before = raw(reader, send), bytes_before = raw(reader, bytes);
    ASSERT_EQ(spc_counter_enable(send), SPC_SUCCESS);
    ASSERT_EQ(spc_counter_enable(bytes), SPC_SUCCESS);

    std::atomic<bool> writing{true};
    std::atomic<uint64_t> reads{0}, backwards{0};
    std::thread watcher([&] {
        uint64_t last_send = 0, last_bytes = 0;
        while (writing.load(std::memory_order_relaxed)) {
            spc_live::Values v = reader.read();
            backwards += (v.raw[send] < last_send) + (v.raw[bytes] < last_bytes);
            last_send = v.raw[send];
            last_bytes = v.raw[bytes];
            ++reads;
        }
    });
    std::vector<std::thread> chains;
    for (int c = 0; c < kChains; ++c) {
        chains.emplace_back([&] {
            for (int t = 0; t < kThreadsPerChain; ++t) {
                std::thread([&] {
                    for (int i = 0; i < kUpdates; ++i) {
                        SPC_RECORD(OMPI_SPC_SEND, 1);
                        SPC_RECORD(OMPI_SPC_BYTES_SENT_USER, 3);
                        if (i == kUpdates / 2) {
                            // A fast machine counts a chain before the reader
                            // is scheduled: hold until one whole read has run
                            // inside this thread's counting.
                            const uint64_t seen = reads.load();
                            while (reads.load() < seen + 2) {
                                std::this_thread::yield();
                            }
                        }
                    }
                }).join();
            }
        });
    }
    for (std::thread &chain : chains) {
        chain.join();
    }
    writing = false;
    watcher.join();
    spc_counter_disable(send);
    spc_counter_disable(bytes);

    const uint64_t total = uint64_t{kChains} * kThreadsPerChain * kUpdates;
    EXPECT_EQ(total, 1000000u);
    EXPECT_EQ(backwards.load(), 0u);
    EXPECT_GE(reads.load(), 2u * kChains * kThreadsPerChain)
        << "the reader must have read while the threads counted";
    EXPECT_EQ(raw(reader, send) - send_before, total);
    EXPECT_EQ(raw(reader, bytes) - bytes_before, 3 * total);
    EXPECT_EQ(spc_read(send), raw(reader, send)) << "the job's own read and the outside read agree";
    // 20 writer threads ran, at most 2 at once: exited threads' blocks were
    // handed on (2 writers, and this thread if it ever counted).
    EXPECT_LE(reader.blocks_used(), 3u);
    EXPECT_EQ(reader.blocks_overflow(), 0u);
}

TEST(Live, LevelsAndWatermarksAreTheJobsOwn)
{
    spc_live::Segment reader(segment_path);
    const int level = OMPI_SPC_UNEXPECTED_IN_QUEUE, watermark = OMPI_SPC_MAX_UNEXPECTED_IN_QUEUE;
    ASSERT_TRUE(reader.read().levels) << "levels must be published (this test is built with -fPIC)";
    SPC_LEVEL_ADD(level, 5);
    SPC_LEVEL_ADD(level, -2);
    EXPECT_EQ(spc_live::Segment::level_value(raw(reader, level)), 3);
    EXPECT_EQ(spc_live::Segment::level_value(raw(reader, watermark)), 5);
    SPC_LEVEL_ADD(level, -3);
    EXPECT_EQ(spc_live::Segment::level_value(raw(reader, level)), 0);
    EXPECT_EQ(spc_read(level), 0u);
    EXPECT_EQ(spc_read(watermark), 5u);
}

// spc-top's line of each rank's share of the last interval inside MPI:
// none while MPI_TIME has not counted (a 0% that would mean nothing), then
// the rank's time in MPI over the interval between two reads, and a share
// above 100% said to be threads adding up.
TEST(Live, TopShowsTheShareOfTimeInMpiOnceItCounts)
{
    spc_live::Scan found = spc_live::scan(folder, false);
    std::vector<spc_live::Job> jobs = spc_live::jobs(found);
    ASSERT_EQ(jobs.size(), 1u);
    const spc_live::Segment &s = *jobs[0].ranks[0];
    auto share_line = [&](const spc_live::Values &before, const spc_live::Values &now) {
        spc_live::History previous{{{s.device(), s.inode()}, before}};
        for (const std::string &line : spc_live::job_table(jobs[0], {now}, previous, spc_live::TableOptions{})) {
            if (line.find("time in MPI over the last") != std::string::npos) {
                return line;
            }
        }
        return std::string();
    };
    ASSERT_EQ(s.read().raw[OMPI_SPC_MPI_TIME], 0u);
    spc_live::Values first = s.read();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(share_line(first, s.read()), "") << "MPI_TIME has not counted: no share";

    ASSERT_EQ(spc_counter_enable(OMPI_SPC_MPI_TIME), SPC_SUCCESS);
    first = s.read();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    SPC_RECORD(OMPI_SPC_MPI_TIME, static_cast<uint64_t>(0.05 * spc_ticks_per_second()));  // 50 ms inside MPI
    spc_live::Values second = s.read();
    const double seconds = static_cast<double>(second.unix_ns - first.unix_ns) / 1e9;
    const double expected = 100 * (static_cast<double>(s.converted(OMPI_SPC_MPI_TIME, second.raw[OMPI_SPC_MPI_TIME]) -
                                                       s.converted(OMPI_SPC_MPI_TIME, first.raw[OMPI_SPC_MPI_TIME])) /
                                   1e6) / seconds;
    char want[64];
    std::snprintf(want, sizeof want, "min %.0f%% (rank 0), mean %.0f%%", expected, expected);
    std::string line = share_line(first, second);
    EXPECT_NE(line.find(want), std::string::npos) << line << " (expected " << want << ")";
    EXPECT_GT(expected, 10);
    EXPECT_LT(expected, 50.5);
    EXPECT_EQ(line.find("above 100%"), std::string::npos) << line;

    first = s.read();
    SPC_RECORD(OMPI_SPC_MPI_TIME, static_cast<uint64_t>(3.0 * spc_ticks_per_second()));  // 3 s in MPI in no time
    line = share_line(first, s.read());
    EXPECT_NE(line.find("above 100%: a rank's threads inside MPI at once add up"), std::string::npos) << line;
    ASSERT_EQ(spc_counter_disable(OMPI_SPC_MPI_TIME), SPC_SUCCESS);
}

// A forked child counts into its own copy, not into its parent's segment,
// and leaves the parent's file in place.
TEST(Live, ForkedChildDoesNotWriteIntoTheSegment)
{
    spc_live::Segment reader(segment_path);
    ASSERT_EQ(spc_counter_enable(OMPI_SPC_RECV), SPC_SUCCESS);
    SPC_RECORD(OMPI_SPC_RECV, 7);
    const spc_live::Values before = reader.read();
    pid_t child = fork();
    if (child == 0) {
        SPC_RECORD(OMPI_SPC_RECV, 1000);
        std::thread([] { SPC_RECORD(OMPI_SPC_RECV, 1000); }).join();
        SPC_LEVEL_ADD(OMPI_SPC_OOS_IN_QUEUE, 9);
        _exit(spc_read(OMPI_SPC_RECV) == before.raw[OMPI_SPC_RECV] + 2000 ? 0 : 1);
    }
    ASSERT_GT(child, 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child counts in its own copy";
    const spc_live::Values after = reader.read();
    EXPECT_EQ(after.raw[OMPI_SPC_RECV], before.raw[OMPI_SPC_RECV]);
    EXPECT_EQ(after.raw[OMPI_SPC_OOS_IN_QUEUE], before.raw[OMPI_SPC_OOS_IN_QUEUE]);
    EXPECT_EQ(access(segment_path.c_str(), F_OK), 0);
    spc_counter_disable(OMPI_SPC_RECV);
}

std::string contents(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string &path, const std::string &bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

// The message a damaged file gives: it names the file and says why.
std::string open_error(const std::string &path)
{
    try {
        spc_live::Segment segment(path);
        segment.read();
    } catch (const spc_live::Error &error) {
        return error.what();
    }
    return "";
}

// A copy of this process's segment in dir, its header changed by edit: a
// rank of the same job with another rank number or MPI_Init time.
template <typename Edit>
std::string copy_segment(const std::string &dir, const std::string &name, Edit edit)
{
    std::string bytes = contents(segment_path);
    spc_live_header h;
    std::memcpy(&h, bytes.data(), sizeof h);
    edit(h);
    std::memcpy(bytes.data(), &h, sizeof h);
    const std::string path = dir + "/" SPC_LIVE_FILE_PREFIX + name;
    write_file(path, bytes);
    return path;
}

// The header holds when MPI_Init ran (spc_live_publish), by this node's
// wall clock: between this process's clock before and after it.  The time
// since it is a read's time minus it; there is none before MPI_Init, nor
// when the clock went back past it.
TEST(Live, HeaderHoldsTheTimeOfMpiInit)
{
    spc_live::Segment s(segment_path);
    const uint64_t init = s.mpi_init_unix_ns();
    EXPECT_GE(init, before_init_ns);
    EXPECT_LE(init, after_init_ns);
    spc_live::Values v = s.read();
    v.unix_ns = init + 1500000000u;
    EXPECT_EQ(s.since_mpi_init(v), 1.5);
    v.unix_ns = init - 1;
    EXPECT_EQ(s.since_mpi_init(v), -1);

    char name[] = "/tmp/spc-live-starting-XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    spc_live::Segment starting(copy_segment(name, "starting", [](spc_live_header &h) { h.state = SPC_LIVE_STARTING; }));
    EXPECT_EQ(starting.mpi_init_unix_ns(), 0u);
    v.unix_ns = init + 1500000000u;
    EXPECT_EQ(starting.since_mpi_init(v), -1) << "before MPI_Init there is no time since it";
    EXPECT_EQ(std::system(("rm -rf '" + std::string(name) + "'").c_str()), 0);
}

// spc-top's line of each rank's share of its time since MPI_Init spent
// inside MPI, from one read (as spc-top --once): rank 0 1 s of MPI_TIME
// 4 s after its MPI_Init, rank 1 (a copy of the segment whose MPI_Init
// was 4 s earlier) 6 s in 8 s, then 18 s in 8 s, which only threads
// adding up can give; no line while MPI_TIME has not counted.
TEST(Live, TopShowsTheShareSinceMpiInitFromOneRead)
{
    char name[] = "/tmp/spc-live-ranks-XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    spc_live::Segment rank0(segment_path);
    const uint64_t init = rank0.mpi_init_unix_ns();
    spc_live::Segment rank1(copy_segment(name, "rank1", [init](spc_live_header &h) {
        h.rank = 1;
        h.size = 2;
        h.running_unix_ns = init - 4000000000u;
    }));
    spc_live::Job job{"4242", rank0.program(), 2, {&rank0, &rank1}};
    const uint64_t second = rank0.ticks_per_second();  // MPI_TIME's raw value of 1 s
    ASSERT_EQ(rank0.converted(OMPI_SPC_MPI_TIME, second), 1000000u);
    auto shares = [&](uint64_t rank0_mpi, uint64_t rank1_mpi) {
        std::vector<spc_live::Values> reads{rank0.read(), rank1.read()};
        reads[0].raw[OMPI_SPC_MPI_TIME] = rank0_mpi;
        reads[1].raw[OMPI_SPC_MPI_TIME] = rank1_mpi;
        reads[0].unix_ns = reads[1].unix_ns = init + 4000000000u;
        std::vector<std::string> lines;
        for (const std::string &line : spc_live::job_table(job, reads, {}, spc_live::TableOptions{})) {
            if (line.find("time in MPI") != std::string::npos) {
                lines.push_back(line);
            }
        }
        return lines;
    };
    using Lines = std::vector<std::string>;
    EXPECT_EQ(shares(0, 0), Lines{}) << "MPI_TIME has not counted: no share";
    EXPECT_EQ(shares(second, 6 * second),
              Lines{"  time in MPI since MPI_Init (MPI_TIME): min 25% (rank 0), mean 50%, max 75% (rank 1)"});
    EXPECT_EQ(shares(second, 18 * second),
              Lines{"  time in MPI since MPI_Init (MPI_TIME): min 25% (rank 0), mean 125%, max 225% (rank 1); "
                    "above 100%: a rank's threads inside MPI at once add up"});
    EXPECT_EQ(std::system(("rm -rf '" + std::string(name) + "'").c_str()), 0);
}

// spc-exporter serves each rank's MPI_Init as a Unix timestamp, one more
// series of the rank, which ompi_spc_exporter_series counts.
TEST(Live, ExporterServesTheTimeOfMpiInit)
{
    const char *exporter = std::getenv("SPC_EXPORTER");
    ASSERT_NE(exporter, nullptr) << "meson test names spc-exporter in SPC_EXPORTER";
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    const char *argv[] = {exporter, "--listen", "127.0.0.1:0", "--dir", folder.c_str(), "--sweep", "0", nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, exporter, &actions, nullptr, const_cast<char **>(argv), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    // Its first line: "spc-exporter: serving http://127.0.0.1:PORT/metrics from ..."
    FILE *said = fdopen(out[0], "r");
    char line[1024] = "";
    int port = 0;
    if (std::fgets(line, sizeof line, said) != nullptr && std::strstr(line, "127.0.0.1:") != nullptr) {
        std::sscanf(std::strstr(line, "127.0.0.1:"), "127.0.0.1:%d", &port);
    }
    std::string text;
    if (port > 0) {
        httplib::Client client("127.0.0.1", port);
        if (auto result = client.Get("/metrics")) {
            text = result->body;
        }
    }
    // Killed: its orderly stop is not what this tests (and cpp-httplib's
    // stop() from another thread is a race ThreadSanitizer reports).
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    std::fclose(said);
    ASSERT_GT(port, 0) << line;

    spc_live::Segment s(segment_path);
    char want[512];
    std::snprintf(want, sizeof want,
                  "\nompi_spc_mpi_init_timestamp_seconds{jobid=\"777\",step=\"3\",rank=\"0\",local_rank=\"1\","
                  "node=\"%s\",mpi_jobid=\"4242\"} %.17g\n",
                  spc_live::this_node().c_str(), static_cast<double>(s.mpi_init_unix_ns()) / 1e9);
    EXPECT_NE(text.find(want), std::string::npos) << "expected" << want << "in\n" << text.substr(0, 2000);
    // Every counter of the catalogue (all counted here, levels published),
    // the rank's state and info, and its MPI_Init.
    const size_t series = OMPI_SPC_NUM_COUNTERS + 3;
    size_t lines = 0;
    for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
        const std::string row = text.substr(at, text.find('\n', at) - at);
        lines += row.rfind("ompi_spc_", 0) == 0 && row.rfind("ompi_spc_exporter_", 0) != 0 &&
                 row.find('{') != std::string::npos;
    }
    EXPECT_EQ(lines, series);
    EXPECT_NE(text.find("\nompi_spc_exporter_series " + std::to_string(series) + "\n"), std::string::npos);
}

TEST(Live, DamagedFilesGiveAnErrorNamingTheFile)
{
    const std::string good = contents(segment_path);
    ASSERT_GT(good.size(), 4096u);
    char name[] = "/tmp/spc-live-damaged-XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    const std::string dir = name;
    struct Case {
        std::string file, bytes, why;
    };
    std::string garbage(4096, '\0');
    for (size_t i = 0; i < garbage.size(); ++i) {
        garbage[i] = static_cast<char>((i * 2654435761u) >> 13);
    }
    std::string other_version = good;
    other_version[8] = 99;  // version, after the 8-byte mark
    std::string bad_layout = good;
    bad_layout[offsetof(spc_live_header, blocks_offset)] ^= 0x40;
    bad_layout[offsetof(spc_live_header, blocks_offset) + 3] = 0x7f;
    const std::vector<Case> cases = {
        {"empty", "", "shorter than its header"},
        {"garbage", garbage, "no " SPC_LIVE_MAGIC " mark"},
        {"truncated", good.substr(0, good.size() / 2), "cut short or damaged"},
        {"version", other_version, "segment format 99"},
        {"layout", bad_layout, "its layout does not fit the file"},
    };
    for (const Case &c : cases) {
        const std::string path = dir + "/" SPC_LIVE_FILE_PREFIX + c.file;
        write_file(path, c.bytes);
        const std::string error = open_error(path);
        EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << c.file << ": " << error;
        EXPECT_NE(error.find(c.why), std::string::npos) << c.file << ": " << error;
    }
    // A scan lists each of them as an error and still finds a good one.
    write_file(dir + "/" SPC_LIVE_FILE_PREFIX "good", good);
    spc_live::Scan found = spc_live::scan(dir, false);
    EXPECT_EQ(found.segments.size(), 1u);
    EXPECT_EQ(found.errors.size(), cases.size());
    // A file cut short after it was mapped: refused, not a fault.
    {
        const std::string path = dir + "/" SPC_LIVE_FILE_PREFIX "shrinking";
        write_file(path, good);
        spc_live::Segment segment(path);
        EXPECT_NO_THROW(segment.read());
        ASSERT_EQ(truncate(path.c_str(), 100), 0);
        try {
            segment.read();
            ADD_FAILURE() << "a read of a file cut short must throw";
        } catch (const spc_live::Error &error) {
            EXPECT_NE(std::string(error.what()).find(path + ": cut short while being read"), std::string::npos)
                << error.what();
        }
    }
    std::string command = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);
}

// Last: MPI_Finalize's step.  The final values are the job's own reads.
TEST(Live, ZFinalizeFreezesTheValuesAndKeepsTheFile)
{
    spc_live::Segment reader(segment_path);
    ASSERT_EQ(spc_counter_enable(OMPI_SPC_SEND), SPC_SUCCESS);
    SPC_RECORD(OMPI_SPC_SEND, 11);
    const uint64_t sends = spc_read_raw(OMPI_SPC_SEND);
    spc_live_finalize(1);
    SPC_RECORD(OMPI_SPC_SEND, 5);  // after MPI_Finalize: not in the final values
    spc_counter_disable(OMPI_SPC_SEND);
    spc_live::Values v = reader.read();
    EXPECT_TRUE(v.final);
    EXPECT_EQ(v.raw[OMPI_SPC_SEND], sends);
    EXPECT_EQ(reader.status(), spc_live::Status::Finalized);
    EXPECT_EQ(access(segment_path.c_str(), F_OK), 0) << "kept";
}

// spc-record's column of the time since MPI_Init: for a finalized rank, up
// to its MPI_Finalize, from the header's two times.
TEST(Live, ZZRecordWritesTheTimeSinceMpiInit)
{
    const char *record = std::getenv("SPC_RECORD");
    ASSERT_NE(record, nullptr) << "meson test names spc-record in SPC_RECORD";
    spc_live_header h;
    std::memcpy(&h, contents(segment_path).data(), sizeof h);
    ASSERT_EQ(h.state, SPC_LIVE_FINALIZED);
    ASSERT_GT(h.finalized_unix_ns, h.running_unix_ns);
    char want[32];
    std::snprintf(want, sizeof want, "%.6f", static_cast<double>(h.finalized_unix_ns - h.running_unix_ns) / 1e9);
    const std::string out = folder + "/record.csv";
    const std::string command = std::string("'") + record + "' --dir '" + folder +
                                "' --job 4242 --interval 1 --wait 5 --quiet --out '" + out + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    std::ifstream csv(out);
    std::string line;
    ASSERT_TRUE(std::getline(csv, line));
    // the last column: the columns of scripts that take them by position stay where they were
    EXPECT_EQ(line, "sample,wall_time,ticks,job_seconds,rank,counter,kind,value,unit,jobid,step,node,local_rank,"
                    "since_mpi_init");
    size_t rows = 0;
    while (std::getline(csv, line)) {
        EXPECT_EQ(line.substr(line.rfind(',') + 1), want) << line;
        ++rows;
    }
    EXPECT_EQ(rows, static_cast<size_t>(OMPI_SPC_NUM_COUNTERS)) << "one sample of every counter";
}

}  // namespace
