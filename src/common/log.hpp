// Diagnostics on stderr, filtered by BLINK_DEBUG. A library loaded into someone
// else's program must print nothing unless asked, and never on stdout.
#pragma once

#include <sstream>
#include <string>

namespace blink::log {

enum class Level { None = 0, Warn = 1, Info = 2, Trace = 3 };

// The level from BLINK_DEBUG (read once; default WARN).
Level threshold();
// For tests and tools that want to override the environment.
void setThreshold(Level level);
bool enabled(Level level);

// Writes one line "[blink host:pid] LEVEL message" to stderr, atomically per line.
void write(Level level, const std::string& message);

// Lets callers label lines with their MPI rank once it is known.
void setRankLabel(int rank);

// While alive (and `quiet`), INFO and TRACE lines of this thread are dropped:
// decisions every rank makes identically are reported by one rank, not by all.
class QuietInfo {
 public:
  explicit QuietInfo(bool quiet);
  ~QuietInfo();
  QuietInfo(const QuietInfo&) = delete;
  QuietInfo& operator=(const QuietInfo&) = delete;

 private:
  bool previous_;
};

}  // namespace blink::log

#define BLINK_LOG(LEVEL, STREAM_EXPR)                                           \
  do {                                                                          \
    if (::blink::log::enabled(::blink::log::Level::LEVEL)) {                    \
      std::ostringstream blink_log_stream_;                                     \
      blink_log_stream_ << STREAM_EXPR;                                         \
      ::blink::log::write(::blink::log::Level::LEVEL, blink_log_stream_.str()); \
    }                                                                           \
  } while (0)
