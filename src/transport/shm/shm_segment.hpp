// One POSIX shared-memory segment, mapped into this process. Segments are created
// with mode 0600 under unguessable names, /blink-PID-PIDNS-RANDOM (the creator's pid,
// its pid namespace and 128 random bits in hex), and their pages are faulted in when
// mapped: a page fault costs tens of microseconds on some VMs, which must not land
// inside a collective. The creator unlinks the name once every peer has mapped it;
// a creator killed before that leaves the name behind, and the next process of the
// same user that creates a segment removes it.
#pragma once

#include <cstddef>
#include <string>

namespace blink::transport {

class ShmSegment {
 public:
  static constexpr std::size_t kRandomBytes = 16;   // of a name, so 128 bits
  static constexpr std::size_t kMaxNameBytes = 64;  // names are shorter, with the NUL

  ShmSegment() = default;
  // A new segment of `bytes` bytes (zero-filled), named name(). Throws blink::Error.
  static ShmSegment create(std::size_t bytes);
  // Maps the existing segment `name`, all of it. Throws blink::Error, also where
  // another user owns it.
  static ShmSegment open(const std::string& name);
  // Removes the names in /dev/shm that this user's processes of this pid namespace
  // created and that outlived them; returns how many. create() calls it once per
  // process.
  static std::size_t removeStaleSegments();

  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Removes the name (the mapping stays). Only the creator calls it; idempotent.
  void unlink();

  std::byte* data() const { return static_cast<std::byte*>(base_); }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void release() noexcept;

  void* base_ = nullptr;
  std::size_t size_ = 0;
  std::string name_;
  bool linked_ = false;  // this process created the name and has not unlinked it yet
};

}  // namespace blink::transport
