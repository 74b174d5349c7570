// blink_perf's output: the text table's cells and the CSV rows, and the facts about
// the job the header prints (host, MPI library, the nodes Blink sees).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "blink_perf_bench.hpp"

namespace blink_perf {

std::string fmtTime(double us);
std::string fmtFixed(double v, int decimals);
std::string fmtWrong(long long w);  // "N/A" when not checked
std::string padLeft(const std::string& s, std::size_t width);
std::string center(const std::string& s, std::size_t width);

inline constexpr std::size_t kGroupWidth =
    2 + 9 + 2 + 7 + 2 + 7 + 2 + 6;  // time algbw busbw #wrong
inline constexpr std::size_t kRatioWidth = 2 + 6;

// One measurement's cells: time, algbw, busbw, #wrong ("-" where it did not run).
std::string group(const Measurement& m);

// blink/mpi of busbw, as mpi time / blink time (defined at one rank too).
bool ratioOf(const Measurement& blink, const Measurement& mpi, double* ratio);

struct Row {
  std::size_t bytes = 0;
  Measurement m[kImpls][2];  // [impl][in_place]
};

void printCsvRow(const char* impl, const std::string& coll, std::size_t bytes,
                 const std::string& dtype, const std::string& op, int in_place,
                 const Measurement& m);

std::string hostName();
// The first line of MPI_Get_library_version.
std::string mpiLibrary();

// The nodes Blink sees (how many, their ranks, how they were told apart), which
// can differ from the MPI host names (BLINK_NODE_ID): the lines of
// blinkCommExplain before its topology.
std::vector<std::string> blinkNodes(blinkComm_t comm);

}  // namespace blink_perf
