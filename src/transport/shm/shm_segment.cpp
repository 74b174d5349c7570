#include "transport/shm/shm_segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "common/error.hpp"
#include "common/log.hpp"

namespace blink::transport {
namespace {

constexpr const char* kNamePrefix = "blink-";

[[noreturn]] void fail(const std::string& what) {
  throw Error(blinkSystemError, "shared memory: " + what + ": " + std::strerror(errno));
}

// The pid namespace's inode (0 where /proc cannot tell): a pid in a segment's name
// means this process's pid only within the same namespace, and containers or
// emulated hosts with namespaces of their own may share one /dev/shm.
unsigned long long pidNamespace() {
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<unsigned long long>(st.st_ino);
}

std::string randomName() {
  unsigned char bytes[ShmSegment::kRandomBytes];
  std::size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("getrandom");
    }
    got += static_cast<std::size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string name = std::string("/") + kNamePrefix + std::to_string(getpid()) + "-" +
                     std::to_string(pidNamespace()) + "-";
  for (unsigned char b : bytes) {
    name += hex[b >> 4];
    name += hex[b & 15];
  }
  if (name.size() >= ShmSegment::kMaxNameBytes) {
    errno = ENAMETOOLONG;
    fail("naming a segment " + name);
  }
  return name;
}

// A name this process could have made: "blink-PID-NAMESPACE-" and 32 hex digits.
struct ParsedName {
  long pid = 0;
  unsigned long long pid_namespace = 0;
};
std::optional<ParsedName> parseName(const char* file_name) {
  const std::size_t prefix = std::strlen(kNamePrefix);
  if (std::strncmp(file_name, kNamePrefix, prefix) != 0) return std::nullopt;
  ParsedName parsed;
  int random_at = 0;
  if (std::sscanf(file_name + prefix, "%ld-%llu-%n", &parsed.pid, &parsed.pid_namespace,
                  &random_at) != 2 ||
      random_at == 0 || parsed.pid <= 0) {
    return std::nullopt;
  }
  const char* random = file_name + prefix + random_at;
  if (std::strlen(random) != 2 * ShmSegment::kRandomBytes ||
      std::strspn(random, "0123456789abcdef") != 2 * ShmSegment::kRandomBytes) {
    return std::nullopt;
  }
  return parsed;
}

void* mapWhole(int fd, std::size_t bytes) {
  // MAP_POPULATE: every page is faulted in now, once, not inside a collective.
  return mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
}

}  // namespace

std::size_t ShmSegment::removeStaleSegments() {
  const unsigned long long own_namespace = pidNamespace();
  if (own_namespace == 0) return 0;  // no way to tell a dead creator from one elsewhere
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  std::size_t removed = 0;
  while (const dirent* entry = readdir(dir)) {
    const std::optional<ParsedName> parsed = parseName(entry->d_name);
    if (!parsed || parsed->pid_namespace != own_namespace) continue;
    struct stat st {};
    if (fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid()) {
      continue;
    }
    if (kill(static_cast<pid_t>(parsed->pid), 0) == 0 || errno != ESRCH) continue;
    if (shm_unlink((std::string("/") + entry->d_name).c_str()) == 0) {
      ++removed;
      BLINK_LOG(Info, "shm: removed /dev/shm/" << entry->d_name << ", left by process "
                                               << parsed->pid << ", which has ended");
    }
  }
  closedir(dir);
  return removed;
}

ShmSegment ShmSegment::create(std::size_t bytes) {
  // Once per process: a rank killed while its peers were still mapping a segment
  // left the name behind (the names live only while a structure is set up).
  static std::once_flag swept;
  std::call_once(swept, [] { removeStaleSegments(); });
  ShmSegment s;
  s.name_ = randomName();
  int fd = shm_open(s.name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) fail("shm_open " + s.name_);
  s.linked_ = true;  // from here on the destructor removes the name on failure
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    fail("ftruncate of " + std::to_string(bytes) + " bytes");
  }
  // Reserve the pages now: where /dev/shm is too small (64 MiB in a default Docker
  // container) mapping still succeeds, and the first touch of a missing page would
  // kill the process with SIGBUS inside a collective.
  if (const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
    close(fd);
    errno = rc;
    fail("reserving " + std::to_string(bytes) + " bytes in /dev/shm");
  }
  void* base = mapWhole(fd, bytes);
  const int saved = errno;
  close(fd);
  errno = saved;
  if (base == MAP_FAILED) fail("mmap of " + std::to_string(bytes) + " bytes");
  s.base_ = base;
  s.size_ = bytes;
  return s;
}

ShmSegment ShmSegment::open(const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) fail("shm_open " + name);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    fail("fstat of " + name);
  }
  // A peer's segment is ours (same uid, mode 0600). As root, shm_open would open
  // anyone's: a segment another user made under the expected name is refused.
  if (st.st_uid != geteuid()) {
    close(fd);
    throw Error(blinkSystemError, "shared memory: " + name + " belongs to uid " +
                                      std::to_string(st.st_uid) + ", not to this process's uid " +
                                      std::to_string(geteuid()) + "; refusing to map it");
  }
  const auto bytes = static_cast<std::size_t>(st.st_size);
  void* base = mapWhole(fd, bytes);
  const int saved = errno;
  close(fd);
  errno = saved;
  if (base == MAP_FAILED) fail("mmap of " + name);
  ShmSegment s;
  s.base_ = base;
  s.size_ = bytes;
  s.name_ = name;
  return s;
}

void ShmSegment::unlink() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

void ShmSegment::release() noexcept {
  if (base_ != nullptr) munmap(base_, size_);
  if (linked_) shm_unlink(name_.c_str());
  base_ = nullptr;
  size_ = 0;
  linked_ = false;
}

ShmSegment::~ShmSegment() {
  release();
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      name_(std::move(other.name_)),
      linked_(std::exchange(other.linked_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    name_ = std::move(other.name_);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

}  // namespace blink::transport
