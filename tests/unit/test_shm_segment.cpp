// ShmSegment: a segment created here is private (mode 0600), visible to a second
// mapping, and gone from /dev/shm once unlinked or destroyed; one larger than
// /dev/shm can hold is refused when it is made, not with SIGBUS at the first touch;
// a name left by a process that died before unlinking it is removed later, and one
// whose creator lives is kept.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <regex>
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

TEST(ShmSegment, NamesCarryTheCreatorAndHundredTwentyEightRandomBits) {
  ShmSegment a = ShmSegment::create(4096), b = ShmSegment::create(4096);
  const std::regex form("/blink-([0-9]+)-([0-9]+)-([0-9a-f]+)");
  std::smatch parts;
  ASSERT_TRUE(std::regex_match(a.name(), parts, form)) << a.name();
  EXPECT_EQ(parts[1].str(), std::to_string(getpid()));
  struct stat ns {};
  ASSERT_EQ(stat("/proc/self/ns/pid", &ns), 0);
  EXPECT_EQ(parts[2].str(), std::to_string(ns.st_ino));
  EXPECT_EQ(ShmSegment::kRandomBytes, 16u);
  EXPECT_EQ(parts[3].length(), 2 * ShmSegment::kRandomBytes) << "128 random bits in hex";
  EXPECT_LT(a.name().size(), ShmSegment::kMaxNameBytes);
  EXPECT_NE(a.name(), b.name());
}

// A child creates a segment and ends without unlinking it (as a rank killed during
// set-up would): the name stays until a process of the same user sweeps it.
TEST(ShmSegment, ANameOutlivingItsCreatorIsRemoved) {
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_ends[0]);
    ShmSegment* leaked = new ShmSegment(ShmSegment::create(4096));
    const std::string& name = leaked->name();
    const bool written =
        write(pipe_ends[1], name.c_str(), name.size()) == static_cast<ssize_t>(name.size());
    _exit(written ? 0 : 1);  // no destructor: the name stays in /dev/shm
  }
  close(pipe_ends[1]);
  char buffer[ShmSegment::kMaxNameBytes] = {};
  const ssize_t got = read(pipe_ends[0], buffer, sizeof buffer - 1);
  close(pipe_ends[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_GT(got, 0);
  const std::string stale(buffer);
  ASSERT_TRUE(existsInDevShm(stale)) << stale;

  // Not the count: another Blink process of this user (a test alongside) may sweep first.
  ShmSegment::removeStaleSegments();
  EXPECT_FALSE(existsInDevShm(stale)) << stale;
  ShmSegment live = ShmSegment::create(4096);  // this process lives: its name stays
  ShmSegment::removeStaleSegments();
  EXPECT_TRUE(existsInDevShm(live.name())) << live.name();
}

// Files that only look like Blink's, or whose creator may still run, are left alone.
TEST(ShmSegment, OtherNamesInDevShmAreLeftAlone) {
  struct stat ns {};
  ASSERT_EQ(stat("/proc/self/ns/pid", &ns), 0);
  const std::string random(2 * ShmSegment::kRandomBytes, 'a');
  const std::string pid = std::to_string(getpid()), nsid = std::to_string(ns.st_ino);
  // pid 1 always runs; a namespace that is not this one; a malformed random part.
  for (const std::string& name :
       {"/blink-1-" + nsid + "-" + random, "/blink-" + pid + "1-1-" + random,
        "/blink-999999999-" + nsid + "-xyz", std::string("/blink-not-a-segment")}) {
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << name << ": " << std::strerror(errno);
    close(fd);
    ShmSegment::removeStaleSegments();
    EXPECT_TRUE(existsInDevShm(name)) << name;
    shm_unlink(name.c_str());
  }
}

}  // namespace
