#include "blink_perf_report.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace blink_perf {

std::string fmtTime(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 1e5 ? "%.2f" : "%.1f", us);
  return buf;
}

std::string fmtFixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmtWrong(long long w) {
  return w < 0 ? "N/A" : std::to_string(w);
}

std::string padLeft(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string center(const std::string& s, std::size_t width) {
  if (s.size() >= width) return s;
  const std::size_t left = (width - s.size()) / 2;
  return std::string(left, ' ') + s + std::string(width - s.size() - left, ' ');
}

std::string group(const Measurement& m) {
  if (!m.ran) {
    return "  " + padLeft("-", 9) + "  " + padLeft("-", 7) + "  " + padLeft("-", 7) + "  " +
           padLeft("-", 6);
  }
  return "  " + padLeft(fmtTime(m.time_us), 9) + "  " + padLeft(fmtFixed(m.algbw, 3), 7) + "  " +
         padLeft(fmtFixed(m.busbw, 3), 7) + "  " + padLeft(fmtWrong(m.wrong), 6);
}

// blink/mpi of busbw, as mpi time / blink time (defined at one rank too).
bool ratioOf(const Measurement& blink, const Measurement& mpi, double* ratio) {
  if (!blink.ran || !mpi.ran || blink.time_us <= 0 || mpi.time_us <= 0) return false;
  *ratio = mpi.time_us / blink.time_us;
  return true;
}

void printCsvRow(const char* impl, const std::string& coll, std::size_t bytes,
                 const std::string& dtype, const std::string& op, int in_place,
                 const Measurement& m) {
  std::printf("%s,%s,%zu,%s,%s,%d,%.3f,%.6f,%.6f,%lld\n", impl, coll.c_str(), bytes, dtype.c_str(),
              op.c_str(), in_place, m.time_us, m.algbw, m.busbw, m.wrong);
  std::fflush(stdout);
}

std::string hostName() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

std::string mpiLibrary() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, static_cast<std::size_t>(std::max(length, 0)));
  if (auto nl = s.find_first_of("\n,"); nl != std::string::npos) s = s.substr(0, nl);
  return s;
}

std::vector<std::string> blinkNodes(blinkComm_t comm) {
  std::vector<char> text(1 << 16);
  std::size_t length = 0;
  if (blinkCommExplain(comm, text.data(), text.size(), &length) != blinkSuccess) {
    return {std::string("Blink's nodes: unknown (") + blinkGetLastError() + ")"};
  }
  std::vector<std::string> lines;
  std::istringstream in(std::string(text.data()));
  for (std::string line; std::getline(in, line) && line.rfind("Topology:", 0) != 0;) {
    if (line.rfind("Blink communicator: rank ", 0) == 0) {
      line = "Blink sees" + line.substr(line.find(',') + 1);  // " N node(s) by ..."
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace blink_perf
