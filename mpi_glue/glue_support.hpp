// What the interposer uses of Blink: the public C API (blink/blink.h) for
// communicators and collectives, and the narrow internal one
// (runtime/interposer_support.h) for failure kinds, diagnostics and settings,
// wrapped here in the glue's own C++ names. libblink_mpi.so links libblink.so and
// nothing of its insides, so a process has one Blink runtime, whichever way it
// reaches it.
#pragma once

#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "blink/blink.h"
#include "runtime/interposer_support.h"

namespace blink::glue {

// The glue's own failures (bad settings, staging errors), with a C API status.
class Error : public std::runtime_error {
 public:
  Error(blinkResult_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  blinkResult_t status() const noexcept { return status_; }

 private:
  blinkResult_t status_;
};

// A Blink call that failed, and whether every rank failed alike before data moved.
class CallFailed : public Error {
 public:
  CallFailed(blinkResult_t status, blinkFailureKind_t kind)
      : Error(status, blinkGetLastError()), kind_(kind) {}
  blinkFailureKind_t kind() const noexcept { return kind_; }

 private:
  blinkFailureKind_t kind_;
};

// Throws CallFailed unless `rc` is blinkSuccess.
inline void check(blinkResult_t rc) {
  if (rc != blinkSuccess) throw CallFailed(rc, blinkLastFailureKind());
}

namespace log {
enum class Level { None = 0, Warn = 1, Info = 2, Trace = 3 };
inline bool enabled(Level level) {
  return blinkLogEnabled(static_cast<int>(level)) != 0;
}
inline void write(Level level, const std::string& message) {
  blinkLogWrite(static_cast<int>(level), message.c_str());
}
inline void setRankLabel(int rank) {
  blinkLogSetRank(rank);
}
}  // namespace log

// A BLINK_* setting as set, or nullopt.
std::optional<std::string> setting(const char* name);
// Checks every BLINK_* setting; throws Error naming a bad one.
void validateSettings();

// One Blink communicator, through the C API; each call throws CallFailed.
class BlinkComm {
 public:
  explicit BlinkComm(blinkComm_t comm) : comm_(comm) {
    blinkCommUserRank(comm, &rank_);
    blinkCommCount(comm, &size_);
  }
  blinkComm_t handle() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  void allReduce(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                 blinkRedOp_t op) {
    check(blinkAllReduce(send, recv, count, type, op, comm_));
  }
  void broadcast(const void* send, void* recv, std::size_t count, blinkDataType_t type, int root) {
    check(blinkBroadcast(send, recv, count, type, root, comm_));
  }
  void reduce(const void* send, void* recv, std::size_t count, blinkDataType_t type,
              blinkRedOp_t op, int root) {
    check(blinkReduce(send, recv, count, type, op, root, comm_));
  }
  void allGather(const void* send, void* recv, std::size_t count, blinkDataType_t type) {
    check(blinkAllGather(send, recv, count, type, comm_));
  }
  void reduceScatter(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                     blinkRedOp_t op) {
    check(blinkReduceScatter(send, recv, count, type, op, comm_));
  }
  void barrier() { check(blinkBarrier(comm_)); }

 private:
  blinkComm_t comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace blink::glue

// As BLINK_LOG inside the library: the message is built only when the level is on.
#define GLUE_LOG(LEVEL, STREAM_EXPR)                                                       \
  do {                                                                                     \
    if (::blink::glue::log::enabled(::blink::glue::log::Level::LEVEL)) {                   \
      std::ostringstream glue_log_stream_;                                                 \
      glue_log_stream_ << STREAM_EXPR;                                                     \
      ::blink::glue::log::write(::blink::glue::log::Level::LEVEL, glue_log_stream_.str()); \
    }                                                                                      \
  } while (0)
