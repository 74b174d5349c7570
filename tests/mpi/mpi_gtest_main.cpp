// main() for GoogleTest suites that run under mpirun. Every rank runs every test;
// rank 0 prints the usual report, other ranks print only their failures (prefixed
// with the rank), and the process exits non-zero on any rank's failure, so mpirun
// and ctest see it.
//
// A fatal assertion on some ranks only sends them on to the next test while the
// others wait in a collective of this one: the job would hang until ctest's limit.
// A watchdog ends any test that runs longer than MPI_TEST_WATCHDOG_SECONDS with
// MPI_Abort and the test's name, so such a failure shows within minutes.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#ifndef MPI_TEST_WATCHDOG_SECONDS
#define MPI_TEST_WATCHDOG_SECONDS 240
#endif

namespace {

class Watchdog : public testing::EmptyTestEventListener {
 public:
  explicit Watchdog(int rank) : rank_(rank), thread_([this] { watch(); }) {}
  ~Watchdog() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void OnTestStart(const testing::TestInfo& info) override {
    std::lock_guard<std::mutex> lock(mutex_);
    test_ = std::string(info.test_suite_name()) + "." + info.name();
    deadline_ = Clock::now() + std::chrono::seconds(MPI_TEST_WATCHDOG_SECONDS);
    running_ = true;
    wake_.notify_all();
  }
  void OnTestEnd(const testing::TestInfo&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;

  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (running_ && Clock::now() >= deadline_) {
        std::fprintf(stderr,
                     "[rank %d] %s still runs after %d s: ranks have probably parted after a "
                     "failure above; aborting the job\n",
                     rank_, test_.c_str(), MPI_TEST_WATCHDOG_SECONDS);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      wake_.wait_for(lock, std::chrono::seconds(1));
    }
  }

  int rank_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool running_ = false;
  std::string test_;
  Clock::time_point deadline_;
  std::thread thread_;
};

class FailureOnlyPrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailureOnlyPrinter(int rank) : rank_(rank) {}

  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailureOnlyPrinter(rank));
  }
  testing::UnitTest::GetInstance()->listeners().Append(new Watchdog(rank));
  int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_failed && !local_failed) {
    std::fprintf(stderr, "[rank 0] other ranks failed (see their messages above)\n");
  }
  MPI_Finalize();
  return any_failed;
}
