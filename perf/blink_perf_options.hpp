// blink_perf's command line: the collectives, datatypes and ops it measures, its
// options, and their parsing (blink_perf_options.cpp; kHelp says what each does).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "blink/blink.h"

namespace blink_perf {

// nccl-tests' --help text, with blink_perf's own options.
extern const char* const kHelp;

// ---- Collectives, datatypes and ops -------------------------------------------------

enum class Coll { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter };

std::string collName(Coll c);
// Whether a collective reduces, takes a root, or gives each rank a block of the buffer.
bool reduces(Coll c);
bool rooted(Coll c);
bool blocked(Coll c);
// nccl-tests' bus bandwidth factor: busbw = algbw * busFactor.
double busFactor(Coll c, int n);

inline constexpr blinkDataType_t kTypes[] = {
    blinkInt8,  blinkUint8,  blinkInt16,   blinkUint16,   blinkInt32,   blinkUint32,
    blinkInt64, blinkUint64, blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64};
inline constexpr blinkRedOp_t kOps[] = {blinkSum, blinkProd, blinkMin, blinkMax, blinkAvg};

bool isUnsigned(blinkDataType_t t);

// ---- The command line ---------------------------------------------------------------

struct Options {
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
  // --timed-bytes / --warmup-bytes: at small sizes, more calls, so that each
  // measurement moves at least this many bytes of buffer (0: -n and -w as given).
  std::size_t timed_bytes = 0;
  std::size_t warmup_bytes = 0;
  // --setup-calls: Blink calls before its first timing of a small size (Options' help).
  int setup_calls = 100;
  bool check = true;
  blinkRedOp_t op = blinkSum;
  blinkDataType_t type = blinkFloat32;
  Coll coll = Coll::AllReduce;
  int root = 0;
  bool out_of_place = true;
  bool in_place = true;
  bool baseline_mpi = false;
  bool baseline_nccl = false;
  std::string nccl_library = "libnccl.so.2";
  bool device_memory = false;
  bool csv = false;
  bool help = false;
  bool version = false;
  // -d all / -o all: the sweeps to run, one after another (type and op above are
  // the current one's).
  std::vector<blinkDataType_t> types = {blinkFloat32};
  std::vector<blinkRedOp_t> ops = {blinkSum};
  bool csv_header = true;  // the CSV header line, before the first sweep only
};

// The timed (warm-up) calls of a measurement of `bytes`: -n (-w), or more where
// --timed-bytes (--warmup-bytes) asks for more bytes than that many calls move.
int timedCalls(const Options& o, std::size_t bytes);
int warmupCalls(const Options& o, std::size_t bytes);

// Throws blink::cli::UsageError for a bad command line.
Options parseOptions(int argc, char** argv);

// The rank the launcher gave this process, before MPI starts (for --help and errors).
int launcherRank();

}  // namespace blink_perf
