// Another local user against a job's shared memory (run by shm_security.sh, as root,
// with BLINK_TEST_OTHER_USER naming a throwaway user). Forked children switch to
// that user: they can neither open nor remove a segment Blink made (mode 0600 in
// the sticky /dev/shm), a segment they make under a name Blink would open is
// refused by ShmSegment::open, and Blink's sweep of stale names never removes
// theirs. Names carry 128 random bits, so none can be claimed in advance.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "common/error.hpp"
#include "transport/shm/shm_segment.hpp"

namespace {

using blink::transport::ShmSegment;

uid_t other_uid = 0;
gid_t other_gid = 0;

// Runs `body` in a child that has become the other user; returns its exit code.
int asOtherUser(const std::function<int()>& body) {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (setgid(other_gid) != 0 || setuid(other_uid) != 0) _exit(100);
    _exit(body());
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

bool existsInDevShm(const std::string& name) {
  struct stat st {};
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

TEST(ShmSecurity, AnotherUserCannotOpenOrRemoveAJobsSegment) {
  ShmSegment segment = ShmSegment::create(4096);
  const std::string name = segment.name();
  EXPECT_EQ(asOtherUser([&] {
              const int rw = shm_open(name.c_str(), O_RDWR, 0);
              if (rw >= 0 || errno != EACCES) return 1;
              const int ro = shm_open(name.c_str(), O_RDONLY, 0);
              if (ro >= 0 || errno != EACCES) return 2;
              return 0;
            }),
            0)
      << "1: read-write open did not fail with EACCES; 2: read-only open did not";
  // Nor can the other user remove the name and put one of its own in its place.
  EXPECT_EQ(asOtherUser([&] { return shm_unlink(name.c_str()) == 0 ? 1 : 0; }), 0);
  EXPECT_TRUE(existsInDevShm(name));
}

TEST(ShmSecurity, ASegmentAnotherUserMadeIsRefused) {
  const std::string name =
      "/blink-" + std::to_string(getpid()) + "-1-" + std::string(2 * ShmSegment::kRandomBytes, 'e');
  ASSERT_EQ(asOtherUser([&] {
              const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0666);
              if (fd < 0) return 1;
              // 0666 asked for; the umask may have taken some away: open it up again.
              if (fchmod(fd, 0666) != 0 || ftruncate(fd, 4096) != 0) return 2;
              close(fd);
              return 0;
            }),
            0);
  struct stat st {};
  ASSERT_EQ(stat(("/dev/shm" + name).c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, other_uid);
  try {
    ShmSegment opened = ShmSegment::open(name);
    ADD_FAILURE() << "mapped a segment of uid " << other_uid;
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), blinkSystemError);
    EXPECT_NE(std::string(e.what()).find(name + " belongs to uid " + std::to_string(other_uid)),
              std::string::npos)
        << e.what();
  }
  shm_unlink(name.c_str());
}

// To squat a name, another user must create it before Blink does: the name's last
// part is 128 bits from getrandom, so there is nothing to predict (and create()
// uses O_EXCL: a name that exists already fails, it is never opened instead).
TEST(ShmSecurity, NamesCannotBeClaimedInAdvance) {
  ShmSegment a = ShmSegment::create(4096), b = ShmSegment::create(4096);
  for (const std::string& name : {a.name(), b.name()}) {
    const std::string random = name.substr(name.rfind('-') + 1);
    EXPECT_EQ(random.size(), 2 * ShmSegment::kRandomBytes) << name;
    EXPECT_EQ(random.find_first_not_of("0123456789abcdef"), std::string::npos) << name;
  }
  EXPECT_EQ(ShmSegment::kRandomBytes * 8, 128u);
  EXPECT_NE(a.name().substr(a.name().rfind('-')), b.name().substr(b.name().rfind('-')));
}

// A stale-looking name of another user (its "creator" is dead) stays: the sweep
// removes only the names of its own user.
TEST(ShmSecurity, TheSweepLeavesOtherUsersNamesAlone) {
  struct stat ns {};
  ASSERT_EQ(stat("/proc/self/ns/pid", &ns), 0);
  const pid_t dead = fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const std::string name = "/blink-" + std::to_string(dead) + "-" + std::to_string(ns.st_ino) +
                           "-" + std::string(2 * ShmSegment::kRandomBytes, 'd');
  ASSERT_EQ(asOtherUser([&] {
              const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
              if (fd < 0) return 1;
              close(fd);
              return 0;
            }),
            0);
  ShmSegment::removeStaleSegments();
  EXPECT_TRUE(existsInDevShm(name));
  shm_unlink(name.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const char* user = std::getenv("BLINK_TEST_OTHER_USER");
  const passwd* entry = user != nullptr ? getpwnam(user) : nullptr;
  if (geteuid() != 0 || entry == nullptr || entry->pw_uid == 0) {
    std::printf("SKIP: needs root and BLINK_TEST_OTHER_USER naming another user\n");
    return 77;
  }
  other_uid = entry->pw_uid;
  other_gid = entry->pw_gid;
  return RUN_ALL_TESTS();
}
