#include "common/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace blink::log {
namespace {

Level parseLevel(const char* text) {
  if (text == nullptr || *text == '\0') return Level::Warn;
  std::string s(text);
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s == "NONE") return Level::None;
  if (s == "WARN") return Level::Warn;
  if (s == "INFO") return Level::Info;
  if (s == "TRACE") return Level::Trace;
  // An invalid value is reported by env::validateAll(); until then be helpful.
  return Level::Warn;
}

std::atomic<int>& thresholdStorage() {
  static std::atomic<int> level{static_cast<int>(parseLevel(std::getenv("BLINK_DEBUG")))};
  return level;
}

std::atomic<int> rankLabel{-1};

const char* levelName(Level level) {
  switch (level) {
    case Level::Warn:
      return "WARN";
    case Level::Info:
      return "INFO";
    case Level::Trace:
      return "TRACE";
    case Level::None:
      break;
  }
  return "";
}

}  // namespace

Level threshold() {
  return static_cast<Level>(thresholdStorage().load());
}
void setThreshold(Level level) {
  thresholdStorage().store(static_cast<int>(level));
}
namespace {
thread_local bool quiet_info = false;
}

bool enabled(Level level) {
  if (quiet_info && level >= Level::Info) return false;
  return level != Level::None && level <= threshold();
}

QuietInfo::QuietInfo(bool quiet) : previous_(quiet_info) {
  quiet_info = quiet_info || quiet;
}
QuietInfo::~QuietInfo() {
  quiet_info = previous_;
}
void setRankLabel(int rank) {
  rankLabel.store(rank);
}

void write(Level level, const std::string& message) {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string line = "[blink " + std::string(host) + ":" + std::to_string(getpid());
  int rank = rankLabel.load();
  if (rank >= 0) line += " r" + std::to_string(rank);
  line += "] " + std::string(levelName(level)) + " " + message + "\n";
  // One write(2) per line so that lines of concurrent ranks do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace blink::log
