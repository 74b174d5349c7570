// ShmSegment: a segment created here is private (mode 0600), visible to a second
// mapping, and gone from /dev/shm once unlinked or destroyed; one larger than
// /dev/shm can hold is refused when it is made, not with SIGBUS at the first touch.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "transport/shm/shm_segment.hpp"

namespace {

using blink::transport::ShmSegment;

bool existsInDevShm(const std::string& name) {
  struct stat st {};
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

TEST(ShmSegment, IsPrivateSharedAndRemovedWhenUnlinked) {
  ShmSegment made = ShmSegment::create(3 * 4096);
  const std::string name = made.name();
  EXPECT_EQ(name.rfind("/blink-" + std::to_string(getpid()) + "-", 0), 0u) << name;
  struct stat st {};
  ASSERT_EQ(stat(("/dev/shm" + name).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(made.data()[3 * 4096 - 1], std::byte{0}) << "zero-filled";
  std::memcpy(made.data() + 5000, "blink", 5);
  {
    ShmSegment seen = ShmSegment::open(name);
    EXPECT_EQ(seen.size(), 3u * 4096);
    EXPECT_EQ(std::memcmp(seen.data() + 5000, "blink", 5), 0);
  }
  made.unlink();
  EXPECT_FALSE(existsInDevShm(name));
  EXPECT_EQ(std::memcmp(made.data() + 5000, "blink", 5), 0) << "the mapping stays";
}

TEST(ShmSegment, DestroyingTheCreatorRemovesTheName) {
  std::string name;
  {
    ShmSegment made = ShmSegment::create(4096);
    name = made.name();
    EXPECT_TRUE(existsInDevShm(name));
  }
  EXPECT_FALSE(existsInDevShm(name));
}

// In a child with a mount namespace of its own, /dev/shm becomes a 64 KiB tmpfs:
// the test cannot fill the machine's memory even if the reservation is ever lost.
TEST(ShmSegment, MoreThanDevShmHoldsIsRefusedAtOnce) {
  enum Outcome { kRefused = 0, kMade = 1, kOtherError = 2, kNoNamespace = 77 };
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
        mount("blink-test", "/dev/shm", "tmpfs", 0, "size=64k") != 0) {
      _exit(kNoNamespace);
    }
    try {
      ShmSegment s = ShmSegment::create(std::size_t{1} << 20);
      _exit(kMade);
    } catch (const blink::Error& e) {
      const bool right = e.status() == blinkSystemError &&
                         std::string(e.what()).find("reserving 1048576 bytes") != std::string::npos;
      if (!right) std::fprintf(stderr, "unexpected error: %s\n", e.what());
      _exit(right ? kRefused : kOtherError);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died with signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == kNoNamespace) GTEST_SKIP() << "no mount namespace here (needs root)";
  EXPECT_NE(WEXITSTATUS(status), kMade) << "1 MiB was made in a 64 KiB /dev/shm";
  EXPECT_EQ(WEXITSTATUS(status), kRefused);
}

}  // namespace
