#include "transport/shm/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.hpp"

namespace blink::transport {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw Error(blinkSystemError, "shared memory: " + what + ": " + std::strerror(errno));
}

std::string randomName() {
  unsigned char bytes[16];
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
  std::string name = "/blink-" + std::to_string(getpid()) + "-";
  for (unsigned char b : bytes) {
    name += hex[b >> 4];
    name += hex[b & 15];
  }
  return name;
}

void* mapWhole(int fd, std::size_t bytes) {
  // MAP_POPULATE: every page is faulted in now, once, not inside a collective.
  return mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
}

}  // namespace

ShmSegment ShmSegment::create(std::size_t bytes) {
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
