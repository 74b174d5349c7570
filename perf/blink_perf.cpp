// perf/blink_perf: an nccl-tests-style benchmark of Blink's collectives, run under
// mpirun on host buffers. One collective, datatype and op over a size sweep, out of
// place and in place, timed as nccl-tests does (barrier, n iterations, the slowest
// rank's average), with time, algbw, busbw and #wrong per measurement; with
// --baseline mpi the same sweep also runs through PMPI_* in the same job, on the same
// buffers, interleaved size by size, for side-by-side ratios; with -m device and
// --baseline nccl, through NCCL (nccl_baseline.hpp). --format csv is a stable
// interface for scripts (see kHelp).
#include <mpi.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "nccl_baseline.hpp"
#include "runtime/mpi_reference.hpp"
#include "runtime/process_device.hpp"
#include "runtime/reduce_cpu.hpp"
#include "tools/cli.hpp"

namespace {

namespace rt = blink::runtime;
using blink::cli::UsageError;

const char* kHelp =
    R"(Usage: mpirun -np N blink_perf [options]

Benchmarks one Blink collective on host buffers over a size sweep, as nccl-tests does:
for every size, out of place and then in place, -w warm-up calls, a barrier, -n timed
calls; time is the slowest rank's average per call. With --baseline mpi the same sweep
runs through the MPI library (PMPI_*, so an LD_PRELOADed libblink_mpi.so is bypassed)
in the same job, on the same buffers, size by size right after Blink's, and the text
table gains the ratio blink/mpi. Only rank 0 prints; Blink's diagnostics
(BLINK_DEBUG=INFO shows the trees and plans chosen) go to stderr.

Options (a value may follow as the next word, or as -bVALUE / --name=VALUE):
  -b, --minbytes SIZE      smallest size (default 1K); K, M, G, T suffixes (x1024),
                           fractions allowed (1.5M)
  -e, --maxbytes SIZE      largest size (default 64M)
  -f, --stepfactor F       multiply the size by F (an integer >= 2) each step (default 2)
  -n, --iters N            timed calls per measurement (default 20)
  -w, --warmup_iters N     untimed calls before each measurement (default 5; they also
                           build Blink's plan for the size)
  -c, --check 0|1          check the results (default 1): after timing, one more call
                           on known inputs, compared with the exact expected value on
                           every rank; #wrong = wrong elements, max over ranks
  -o, --op OP              sum, prod, min, max, avg, or all of them in turn (default
                           sum; avg needs a floating-point type, and `all` skips it
                           for integer types; ignored by broadcast and allgather)
  -d, --datatype T         int8, uint8, int16, uint16, int32, uint32, int64, uint64,
                           float16, bfloat16, float32, float64, nccl-tests' names half,
                           float, double, or all (every type in turn; default float32)
      --collective C       allreduce, broadcast, reduce, allgather, reducescatter
                           (default allreduce)
  -r, --root R             root rank of broadcast and reduce (default 0)
      --inplace 0|1|both   out of place only, in place only, or both (default both)
      --baseline none|mpi|nccl  also run the sweep through PMPI_*, or (with -m
                           device) through NCCL, one communicator per rank (default
                           none); where libnccl.so.2 cannot be loaded, or the device is
                           emulated, it prints "nccl baseline: skipped" and the reason,
                           and runs Blink's sweep alone
      --nccl-library PATH  the NCCL library to dlopen (default libnccl.so.2)
  -m, --memory host|device  the buffers: host memory (default), or memory of Blink's
                           device (BLINK_DEVICE: a GPU, or EMULATED without one); with
                           device buffers the MPI baseline is skipped (it would need a
                           CUDA-aware MPI), inputs and results cross by device copies
                           outside the timing, and "memcpy" is a device-to-device copy
      --format text|csv    nccl-tests-style table (default) or CSV
  -h, --help               this text
      --version            the build (blinkGetBuildInfo)

Sizes: every size is rounded down to whole elements, and for allgather and
reducescatter to whole elements x ranks; as in nccl-tests, `size` (`bytes`) is then the
whole gathered (scattered) buffer: N x each rank's block. Sizes that round to zero, or
to the size before them, are skipped. Every buffer is allocated once for the largest
size and written before any timing (fresh pages are slow to fault in on some VMs), and
the MPI baseline uses the same buffers.

Bandwidths (GB/s, 1 GB = 10^9 bytes): algbw = size / time; busbw = algbw x factor,
the factor being 2(N-1)/N for allreduce, (N-1)/N for allgather and reducescatter, 1 for
broadcast and reduce (nccl-tests' definitions). The header also gives a plain memcpy
bandwidth of the largest size on rank 0 (bytes copied / time, average of -n after -w),
measured in the same run while the other ranks sleep.

Check inputs are small integers (|x| <= 16; products of +-1 and +-2), so every sum,
product, min and max is exact in every type whatever the reduction order (bfloat16
sums up to 32 ranks, float16 up to 128); expected values are computed locally and
compared bit for bit; integers wrap as in C. In place, as in NCCL: allgather's input is
the rank's own block of the receive buffer, reducescatter's output is the rank's block
of the send buffer (MPI's in-place reducescatter writes the start of it instead).

MPI baseline: float16 and bfloat16 have no MPI type, so reductions on them are
skipped (broadcast and allgather move them as 16-bit integers), and so is avg (MPI has
no such op); the output says so. MPI's out-of-place broadcast is a memcpy on the root
followed by MPI_Bcast, which is what an out-of-place broadcast has to do. Open MPI's
AVX reduction code saturates 8-bit (and 16-bit) integer sums instead of wrapping (ompi
issue 8045), so the baseline may report wrong elements for int8/uint8 sums whose
results overflow (the check's inputs overflow only beyond 17 ranks; `--mca op ^avx`
avoids it); that is the MPI library's result, not Blink's, and does not change the exit
status.

Output, text: a header (build, MPI library, ranks and MPI hosts, the nodes Blink sees
with their ranks and how they were told apart (host name or BLINK_NODE_ID), memcpy
GB/s), one row
per size: size, count (elements), type, redop, root (-1: none), then time(us),
algbw(GB/s), busbw(GB/s), #wrong (N/A without -c 1) for each of out-of-place and in-place
(blink, then mpi), then the ratio blink/mpi of busbw (= mpi time / blink time) for each;
at the end the out-of-bounds count and "# Avg bus bandwidth" (the mean of every busbw
measured), per implementation, with the ratio of the two means and the geometric mean
of the per-measurement ratios.

Output, csv (a stable interface): the header line
  impl,collective,bytes,dtype,op,inplace,time_us,algbw_gbps,busbw_gbps,wrong
and one row per measurement: impl blink or mpi; op "none" for broadcast and allgather;
inplace 0 or 1; wrong -1 without -c 1. First comes one row with impl and collective
"memcpy" (bytes = the largest size, op none, inplace 0, busbw = algbw). Skipped MPI
measurements have no row.

Exit status: 0 success, 1 a Blink result was wrong or a Blink call failed (the error is
printed with blinkGetErrorString and blinkGetLastError, then the job is aborted),
2 bad command line.
)";

// ---- Collectives, datatypes and ops -------------------------------------------------

enum class Coll { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter };

const std::map<std::string, Coll> kCollectives = {{"allreduce", Coll::AllReduce},
                                                  {"broadcast", Coll::Broadcast},
                                                  {"reduce", Coll::Reduce},
                                                  {"allgather", Coll::AllGather},
                                                  {"reducescatter", Coll::ReduceScatter}};

std::string collName(Coll c) {
  for (const auto& [name, value] : kCollectives) {
    if (value == c) return name;
  }
  return "unknown";
}

bool reduces(Coll c) {
  return c != Coll::Broadcast && c != Coll::AllGather;
}
bool rooted(Coll c) {
  return c == Coll::Broadcast || c == Coll::Reduce;
}
bool blocked(Coll c) {
  return c == Coll::AllGather || c == Coll::ReduceScatter;
}

double busFactor(Coll c, int n) {
  switch (c) {
    case Coll::AllReduce:
      return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
      return static_cast<double>(n - 1) / n;
    default:
      return 1.0;
  }
}

const blinkDataType_t kTypes[] = {blinkInt8,    blinkUint8,    blinkInt16,   blinkUint16,
                                  blinkInt32,   blinkUint32,   blinkInt64,   blinkUint64,
                                  blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64};
const blinkRedOp_t kOps[] = {blinkSum, blinkProd, blinkMin, blinkMax, blinkAvg};

bool isUnsigned(blinkDataType_t t) {
  return t == blinkUint8 || t == blinkUint16 || t == blinkUint32 || t == blinkUint64;
}

using rt::mpiOp;  // blink_perf's ops (kOps) all have one
using rt::mpiType;

// ---- The command line ---------------------------------------------------------------

struct Options {
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
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

struct OptionSpec {
  char short_name;  // 0: long form only
  const char* long_name;
  bool takes_value;
};

const OptionSpec kOptionSpecs[] = {
    {'b', "minbytes", true}, {'e', "maxbytes", true},     {'f', "stepfactor", true},
    {'n', "iters", true},    {'w', "warmup_iters", true}, {'c', "check", true},
    {'o', "op", true},       {'d', "datatype", true},     {'r', "root", true},
    {0, "collective", true}, {0, "inplace", true},        {0, "baseline", true},
    {0, "format", true},     {'h', "help", false},        {'m', "memory", true},
    {0, "version", false},   {0, "nccl-library", true}};

const OptionSpec* findLong(const std::string& name) {
  for (const OptionSpec& s : kOptionSpecs) {
    if (name == s.long_name) return &s;
  }
  return nullptr;
}

const OptionSpec* findShort(char c) {
  for (const OptionSpec& s : kOptionSpecs) {
    if (s.short_name != 0 && c == s.short_name) return &s;
  }
  return nullptr;
}

std::string spelling(const OptionSpec& s) {
  std::string out = "--" + std::string(s.long_name);
  if (s.short_name != 0) out = "-" + std::string(1, s.short_name) + "/" + out;
  return out;
}

// Long name -> value (the last one given wins, as with getopt); flags map to "".
std::map<std::string, std::string> tokenize(int argc, char** argv) {
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const OptionSpec* spec = nullptr;
    std::string value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
      std::string name = arg.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_inline = true;
      }
      spec = findLong(name);
      if (spec == nullptr) throw UsageError{"unknown option '--" + name + "'"};
    } else if (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-') {
      spec = findShort(arg[1]);
      if (spec == nullptr) throw UsageError{"unknown option '" + arg.substr(0, 2) + "'"};
      if (arg.size() > 2) {
        value = arg.substr(2);
        has_inline = true;
      }
    } else {
      throw UsageError{"unexpected argument '" + arg + "'"};
    }
    if (spec->takes_value) {
      if (!has_inline) {
        if (i + 1 >= argc) throw UsageError{"option " + spelling(*spec) + " needs a value"};
        value = argv[++i];
      }
    } else if (has_inline) {
      throw UsageError{"option " + spelling(*spec) + " takes no value"};
    }
    values[spec->long_name] = value;
  }
  return values;
}

std::size_t parseSize(const std::string& option, const std::string& text) {
  const std::uint64_t v = blink::cli::parseByteSize(text, "--" + option);
  if (v > (std::uint64_t{1} << 62)) throw UsageError{"--" + option + ": too large"};
  return static_cast<std::size_t>(v);
}

long long parseInteger(const std::string& option, const std::string& text, long long lo,
                       long long hi) {
  long long v = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end || text.empty() || v < lo || v > hi) {
    throw UsageError{"--" + option + ": '" + text + "' is not an integer in " + std::to_string(lo) +
                     ".." + std::to_string(hi)};
  }
  return v;
}

template <typename T>
T parseChoice(const std::string& option, const std::string& text,
              const std::vector<std::pair<std::string, T>>& choices) {
  std::string names;
  for (const auto& [name, value] : choices) {
    if (name == text) return value;
    names += (names.empty() ? "" : ", ") + name;
  }
  throw UsageError{"--" + option + ": unknown value '" + text + "' (one of " + names + ")"};
}

Options parseOptions(int argc, char** argv) {
  const std::map<std::string, std::string> v = tokenize(argc, argv);
  Options o;
  if (v.contains("help")) {
    o.help = true;
    return o;
  }
  if (v.contains("version")) {
    o.version = true;
    return o;
  }
  auto get = [&v](const char* name) -> const std::string* {
    auto it = v.find(name);
    return it == v.end() ? nullptr : &it->second;
  };
  if (auto* s = get("minbytes")) o.min_bytes = parseSize("minbytes", *s);
  if (auto* s = get("maxbytes")) o.max_bytes = parseSize("maxbytes", *s);
  if (auto* s = get("stepfactor")) {
    o.step_factor = static_cast<std::size_t>(parseInteger("stepfactor", *s, 2, 1 << 20));
  }
  if (auto* s = get("iters")) o.iters = static_cast<int>(parseInteger("iters", *s, 1, INT_MAX));
  if (auto* s = get("warmup_iters")) {
    o.warmup = static_cast<int>(parseInteger("warmup_iters", *s, 0, INT_MAX));
  }
  if (auto* s = get("check")) o.check = parseInteger("check", *s, 0, 1) == 1;
  if (auto* s = get("root")) o.root = static_cast<int>(parseInteger("root", *s, 0, INT_MAX));
  if (auto* s = get("op")) {
    if (*s == "all") {
      o.ops.assign(std::begin(kOps), std::end(kOps));
    } else {
      std::vector<std::pair<std::string, blinkRedOp_t>> ops;
      for (blinkRedOp_t op : kOps) ops.emplace_back(rt::toString(op), op);
      o.ops = {parseChoice("op", *s, ops)};
    }
  }
  if (auto* s = get("datatype")) {
    if (*s == "all") {
      o.types.assign(std::begin(kTypes), std::end(kTypes));
    } else {
      std::vector<std::pair<std::string, blinkDataType_t>> types;
      for (blinkDataType_t t : kTypes) types.emplace_back(rt::toString(t), t);
      // nccl-tests' spellings of the floating types.
      types.emplace_back("half", blinkFloat16);
      types.emplace_back("float", blinkFloat32);
      types.emplace_back("double", blinkFloat64);
      o.types = {parseChoice("datatype", *s, types)};
    }
  }
  o.type = o.types.front();
  o.op = o.ops.front();
  if (auto* s = get("collective")) {
    o.coll = parseChoice<Coll>("collective", *s,
                               {{"allreduce", Coll::AllReduce},
                                {"broadcast", Coll::Broadcast},
                                {"reduce", Coll::Reduce},
                                {"allgather", Coll::AllGather},
                                {"reducescatter", Coll::ReduceScatter}});
  }
  if (auto* s = get("inplace")) {
    const int mode = parseChoice<int>("inplace", *s, {{"0", 0}, {"1", 1}, {"both", 2}});
    o.out_of_place = mode != 1;
    o.in_place = mode != 0;
  }
  if (auto* s = get("baseline")) {
    const int b = parseChoice<int>("baseline", *s, {{"none", 0}, {"mpi", 1}, {"nccl", 2}});
    o.baseline_mpi = b == 1;
    o.baseline_nccl = b == 2;
  }
  if (auto* s = get("nccl-library")) {
    o.nccl_library = *s;
  }
  if (auto* s = get("memory")) {
    o.device_memory = parseChoice<bool>("memory", *s, {{"host", false}, {"device", true}});
  }
  if (auto* s = get("format")) {
    o.csv = parseChoice<bool>("format", *s, {{"text", false}, {"csv", true}});
  }
  if (o.min_bytes > o.max_bytes) {
    throw UsageError{"--minbytes (" + std::to_string(o.min_bytes) +
                     ") is larger than --maxbytes (" + std::to_string(o.max_bytes) + ")"};
  }
  if (reduces(o.coll) && o.ops.size() == 1 && o.types.size() == 1 && o.op == blinkAvg &&
      !rt::isFloating(o.type)) {
    throw UsageError{"--op avg needs a floating-point datatype, not " + rt::toString(o.type)};
  }
  return o;
}

// The rank the launcher gave this process, before MPI starts (for --help and errors).
int launcherRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

// ---- Known inputs and exact expected values -------------------------------------------
//
// Rank r's input at index g depends on g only through g mod kPeriod, so inputs and
// expected values are periods of kPeriod elements, written and compared block by block.
constexpr std::size_t kPeriod = 17;

double inputValue(int rank, std::size_t residue, blinkRedOp_t op, blinkDataType_t t) {
  const std::size_t h = (residue * 7 + static_cast<std::size_t>(rank) * 5) % kPeriod;  // 0..16
  if (op == blinkProd) {
    static const double f[] = {1, 2, -1, 1, -2, 1, 1};
    const double v = f[h % 7];
    return isUnsigned(t) ? std::fabs(v) : v;
  }
  return isUnsigned(t) ? static_cast<double>(h) : static_cast<double>(h) - 8.0;  // 0..16, -8..8
}

void storeValue(std::byte* p, blinkDataType_t t, double v) {
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (t) {
    case blinkFloat16:
      put(rt::floatToHalf(static_cast<float>(v)));
      break;
    case blinkBfloat16:
      put(rt::floatToBfloat16(static_cast<float>(v)));
      break;
    case blinkFloat32:
      put(static_cast<float>(v));
      break;
    case blinkFloat64:
      put(v);
      break;
    default: {
      // Integers wrap modulo 2^bits, as C's unsigned arithmetic: the low bytes of the
      // exact value (little-endian).
      const auto w = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
      std::memcpy(p, &w, blinkDataTypeSize(t));
    }
  }
}

using Period = std::vector<std::byte>;  // kPeriod elements

Period inputPeriod(int rank, blinkRedOp_t op, blinkDataType_t t) {
  const std::size_t es = blinkDataTypeSize(t);
  Period p(kPeriod * es);
  for (std::size_t k = 0; k < kPeriod; ++k)
    storeValue(p.data() + k * es, t, inputValue(rank, k, op, t));
  return p;
}

// The reduction over ranks 0..n-1 of inputValue, exact, then stored once in the type
// (avg: the exact sum divided once in the type's own precision, as Blink's divideBy).
Period expectedPeriod(int n, blinkRedOp_t op, blinkDataType_t t) {
  const std::size_t es = blinkDataTypeSize(t);
  Period p(kPeriod * es);
  for (std::size_t k = 0; k < kPeriod; ++k) {
    double acc = inputValue(0, k, op, t);
    for (int r = 1; r < n; ++r) {
      const double v = inputValue(r, k, op, t);
      switch (op) {
        case blinkProd:
          acc *= v;
          break;
        case blinkMin:
          acc = std::min(acc, v);
          break;
        case blinkMax:
          acc = std::max(acc, v);
          break;
        default:
          acc += v;
      }
    }
    if (op == blinkAvg) {
      acc = t == blinkFloat64
                ? acc / n
                : static_cast<double>(static_cast<float>(acc) / static_cast<float>(n));
    }
    storeValue(p.data() + k * es, t, acc);
  }
  return p;
}

// Elements [first, first + count) of the periodic sequence, written to dst.
void fillPeriodic(std::byte* dst, std::size_t count, std::size_t first, const Period& period,
                  std::size_t es) {
  constexpr std::size_t kBlock = kPeriod * 64;
  std::vector<std::byte> block(kBlock * es);
  for (std::size_t i = 0; i < kBlock; ++i) {
    std::memcpy(block.data() + i * es, period.data() + ((first + i) % kPeriod) * es, es);
  }
  for (std::size_t i = 0; i < count; i += kBlock) {
    std::memcpy(dst + i * es, block.data(), std::min(kBlock, count - i) * es);
  }
}

// How many of got[0, count) differ, bit for bit, from elements [first, first + count).
long long countWrong(const std::byte* got, std::size_t count, std::size_t first,
                     const Period& period, std::size_t es) {
  constexpr std::size_t kBlock = kPeriod * 64;
  std::vector<std::byte> block(kBlock * es);
  for (std::size_t i = 0; i < kBlock; ++i) {
    std::memcpy(block.data() + i * es, period.data() + ((first + i) % kPeriod) * es, es);
  }
  long long wrong = 0;
  for (std::size_t i = 0; i < count; i += kBlock) {
    const std::size_t m = std::min(kBlock, count - i);
    if (std::memcmp(got + i * es, block.data(), m * es) == 0) continue;
    for (std::size_t j = 0; j < m; ++j) {
      if (std::memcmp(got + (i + j) * es, block.data() + j * es, es) != 0) ++wrong;
    }
  }
  return wrong;
}

// ---- The benchmark ------------------------------------------------------------------

enum class Impl { Blink, Mpi, Nccl };
constexpr int kImpls = 3;

const char* implName(Impl i) {
  return i == Impl::Blink ? "blink" : i == Impl::Mpi ? "mpi" : "nccl";
}
int implIndex(Impl i) {
  return static_cast<int>(i);
}

struct Measurement {
  bool ran = false;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  long long wrong = -1;  // -1: not checked
};

[[noreturn]] void blinkFailed(const char* call, blinkResult_t rc, int rank) {
  std::fprintf(stderr, "blink_perf: rank %d: %s failed: %s: %s\n", rank, call,
               blinkGetErrorString(rc), blinkGetLastError());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

#define BLINK_PERF_CHECK(call)                               \
  do {                                                       \
    const blinkResult_t rc_ = (call);                        \
    if (rc_ != blinkSuccess) blinkFailed(#call, rc_, rank_); \
  } while (0)

class Bench {
 public:
  Bench(const Options& o, int rank, int n, blinkComm_t comm, std::size_t max_bytes)
      : o_(o), rank_(rank), n_(n), comm_(comm), es_(blinkDataTypeSize(o.type)), bytes_(max_bytes) {
    const std::size_t page = 4096;
    const std::size_t alloc = (std::max<std::size_t>(bytes_, 1) + page - 1) / page * page;
    send_ = static_cast<std::byte*>(std::aligned_alloc(page, alloc));
    recv_ = static_cast<std::byte*>(std::aligned_alloc(page, alloc));
    if (send_ == nullptr || recv_ == nullptr) {
      std::fprintf(stderr, "blink_perf: rank %d: cannot allocate 2 x %zu bytes\n", rank, alloc);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    // Touch every page now, so that no timing pays for a page fault.
    const std::size_t elements = bytes_ / es_;
    fillPeriodic(send_, elements, 0, inputPeriod(rank_, patternOp(), o_.type), es_);
    fillPeriodic(recv_, elements, 0, inputPeriod(rank_, patternOp(), o_.type), es_);
    mpi_type_ = mpiType(o_.type);
    if (mpi_type_ == MPI_DATATYPE_NULL && !reduces(o_.coll)) mpi_type_ = MPI_UINT16_T;
    if (o_.device_memory) {
      // The host buffers stay as the staging of inputs and results.
      device_ = rt::processDevice(0);  // made by blinkCommInitFromMPI with the local rank
      if (device_ == nullptr) {
        std::fprintf(stderr, "blink_perf: rank %d: --memory device, but %s\n", rank,
                     rt::processDeviceNote().c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      stream_ = device_->createStream();
      alloc_ = alloc;
      dsend_ = static_cast<std::byte*>(device_->allocate(alloc));
      drecv_ = static_cast<std::byte*>(device_->allocate(alloc));
      upload();
    }
    if (o_.baseline_nccl && device_ != nullptr) {
      nccl_ = std::make_unique<blink::perf::NcclBaseline>(o_.nccl_library, device_->emulated(),
                                                          o_.type, o_.op, reduces(o_.coll));
    }
  }
  ~Bench() {
    nccl_.reset();
    if (device_ != nullptr) {
      device_->release(dsend_);
      device_->release(drecv_);
    }
    std::free(send_);
    std::free(recv_);
  }

  const char* memoryName() const { return device_ != nullptr ? "device" : "host"; }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  // Why the MPI library cannot run this benchmark ("" if it can).
  std::string mpiSkipReason() const {
    if (device_ != nullptr) {
      return "device buffers: the MPI baseline is skipped (it needs a CUDA-aware MPI)";
    }
    if (mpi_type_ == MPI_DATATYPE_NULL) {
      return rt::toString(o_.type) + " has no MPI datatype: the MPI baseline is skipped";
    }
    if (reduces(o_.coll) && o_.op == blinkAvg) {
      return "MPI has no avg op: the MPI baseline is skipped";
    }
    return "";
  }

  // Why NCCL cannot run this benchmark ("" if it can).
  std::string ncclSkipReason() const {
    if (device_ == nullptr) return "host buffers (NCCL moves device memory: -m device)";
    return nccl_->skipReason();
  }

  // Rank 0 copies the largest size between the two buffers; the others sleep.
  Measurement memcpyBandwidth() {
    Measurement m;
    m.ran = true;
    if (rank_ == 0) {
      auto copy = [this] {
        if (device_ == nullptr) {
          std::memcpy(recv_, send_, bytes_);
          return;
        }
        device_->copy(drecv_, dsend_, bytes_, stream_);
        device_->synchronize(stream_);
      };
      for (int i = 0; i < o_.warmup; ++i) copy();
      const double t0 = PMPI_Wtime();
      for (int i = 0; i < o_.iters; ++i) copy();
      m.time_us = (PMPI_Wtime() - t0) / o_.iters * 1e6;
      if (device_ != nullptr) download();
      if (o_.check) {
        m.wrong = countWrong(recv_, bytes_ / es_, 0, inputPeriod(rank_, patternOp(), o_.type), es_);
      }
      m.algbw = m.busbw = m.time_us > 0 ? static_cast<double>(bytes_) / (m.time_us * 1e3) : 0;
    }
    sleepyBarrier();
    return m;
  }

  // One measurement of `bytes` (the nccl-tests size: whole buffer for allgather and
  // reducescatter).
  Measurement measure(Impl impl, bool in_place, std::size_t bytes) {
    const std::size_t count = bytes / es_ / (blocked(o_.coll) ? static_cast<std::size_t>(n_) : 1);
    Measurement m;
    m.ran = true;
    for (int i = 0; i < o_.warmup; ++i) run(impl, in_place, count);
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = PMPI_Wtime();
    for (int i = 0; i < o_.iters; ++i) run(impl, in_place, count);
    const double mine = (PMPI_Wtime() - t0) / o_.iters * 1e6;
    PMPI_Allreduce(&mine, &m.time_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    m.algbw = m.time_us > 0 ? static_cast<double>(bytes) / (m.time_us * 1e3) : 0;
    m.busbw = m.algbw * busFactor(o_.coll, n_);
    if (o_.check) {
      prepareCheck(in_place, count);
      if (device_ != nullptr) upload();
      run(impl, in_place, count);
      if (device_ != nullptr) download();
      const long long wrong = verify(impl, in_place, count);
      PMPI_Allreduce(&wrong, &m.wrong, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    }
    return m;
  }

 private:
  // Broadcast and allgather do no arithmetic: they move the sum pattern.
  blinkRedOp_t patternOp() const { return reduces(o_.coll) ? o_.op : blinkSum; }

  void sleepyBarrier() const {
    MPI_Request req = MPI_REQUEST_NULL;
    PMPI_Ibarrier(MPI_COMM_WORLD, &req);
    int done = 0;
    while (!done) {
      PMPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (!done) {
        const timespec pause{0, 200000};  // 0.2 ms
        nanosleep(&pause, nullptr);
      }
    }
  }

  // One call; `count` is the API's count (each rank's block for allgather/reducescatter).
  void run(Impl impl, bool in_place, std::size_t count) {
    std::byte* s = device_ != nullptr ? dsend_ : send_;
    std::byte* r = device_ != nullptr ? drecv_ : recv_;
    const std::size_t block = count * es_;
    std::byte* mine = r + static_cast<std::size_t>(rank_) * block;
    const blinkDataType_t t = o_.type;
    if (impl == Impl::Blink) {
      switch (o_.coll) {
        case Coll::AllReduce:
          BLINK_PERF_CHECK(blinkAllReduce(in_place ? r : s, r, count, t, o_.op, comm_));
          break;
        case Coll::Broadcast:
          BLINK_PERF_CHECK(blinkBroadcast(in_place ? r : s, r, count, t, o_.root, comm_));
          break;
        case Coll::Reduce:
          BLINK_PERF_CHECK(blinkReduce(in_place ? r : s, r, count, t, o_.op, o_.root, comm_));
          break;
        case Coll::AllGather:
          BLINK_PERF_CHECK(blinkAllGather(in_place ? mine : s, r, count, t, comm_));
          break;
        case Coll::ReduceScatter:
          BLINK_PERF_CHECK(
              blinkReduceScatter(in_place ? r : s, in_place ? mine : r, count, t, o_.op, comm_));
          break;
      }
      return;
    }
    if (impl == Impl::Nccl) {
      using blink::perf::NcclCollective;
      switch (o_.coll) {
        case Coll::AllReduce:
          nccl_->run(NcclCollective::AllReduce, in_place ? r : s, r, count, 0);
          break;
        case Coll::Broadcast:
          nccl_->run(NcclCollective::Broadcast, in_place ? r : s, r, count, o_.root);
          break;
        case Coll::Reduce:
          nccl_->run(NcclCollective::Reduce, in_place ? r : s, r, count, o_.root);
          break;
        case Coll::AllGather:
          nccl_->run(NcclCollective::AllGather, in_place ? mine : s, r, count, 0);
          break;
        case Coll::ReduceScatter:
          nccl_->run(NcclCollective::ReduceScatter, in_place ? r : s, in_place ? mine : r, count,
                     0);
          break;
      }
      // NCCL's call returns once queued; Blink's once done: wait, as the caller would.
      device_->synchronizeCaller();
      return;
    }
    const int c = static_cast<int>(count);
    const MPI_Datatype mt = mpi_type_;
    const MPI_Op mo = mpiOp(o_.op);
    switch (o_.coll) {
      case Coll::AllReduce:
        PMPI_Allreduce(in_place ? MPI_IN_PLACE : s, r, c, mt, mo, MPI_COMM_WORLD);
        break;
      case Coll::Broadcast:
        // MPI_Bcast has one buffer: out of place, the root copies first.
        if (!in_place && rank_ == o_.root) std::memcpy(r, s, block);
        PMPI_Bcast(r, c, mt, o_.root, MPI_COMM_WORLD);
        break;
      case Coll::Reduce:
        if (in_place) {
          if (rank_ == o_.root) {
            PMPI_Reduce(MPI_IN_PLACE, r, c, mt, mo, o_.root, MPI_COMM_WORLD);
          } else {
            PMPI_Reduce(r, nullptr, c, mt, mo, o_.root, MPI_COMM_WORLD);
          }
        } else {
          PMPI_Reduce(s, r, c, mt, mo, o_.root, MPI_COMM_WORLD);
        }
        break;
      case Coll::AllGather:
        if (in_place) {
          PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, c, mt, MPI_COMM_WORLD);
        } else {
          PMPI_Allgather(s, c, mt, r, c, mt, MPI_COMM_WORLD);
        }
        break;
      case Coll::ReduceScatter:
        PMPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : s, r, c, mt, mo, MPI_COMM_WORLD);
        break;
    }
  }

  void poison(std::byte* p, std::size_t bytes) const { std::memset(p, 0x5a, bytes); }

  // The host buffers to the device buffers and back, whole (outside any timing).
  void upload() {
    device_->copy(dsend_, send_, alloc_, stream_);
    device_->copy(drecv_, recv_, alloc_, stream_);
    device_->synchronize(stream_);
  }
  void download() {
    device_->copy(send_, dsend_, alloc_, stream_);
    device_->copy(recv_, drecv_, alloc_, stream_);
    device_->synchronize(stream_);
  }

  void prepareCheck(bool in_place, std::size_t count) {
    const Period own = inputPeriod(rank_, patternOp(), o_.type);
    const std::size_t block = count * es_;
    const auto n = static_cast<std::size_t>(n_);
    switch (o_.coll) {
      case Coll::AllReduce:
      case Coll::Reduce:
        if (in_place) {
          fillPeriodic(recv_, count, 0, own, es_);
        } else {
          fillPeriodic(send_, count, 0, own, es_);
          poison(recv_, block);
        }
        break;
      case Coll::Broadcast: {
        const Period root = inputPeriod(o_.root, patternOp(), o_.type);
        poison(recv_, block);
        if (rank_ == o_.root) fillPeriodic(in_place ? recv_ : send_, count, 0, root, es_);
        break;
      }
      case Coll::AllGather:
        poison(recv_, n * block);
        fillPeriodic(in_place ? recv_ + static_cast<std::size_t>(rank_) * block : send_, count, 0,
                     own, es_);
        break;
      case Coll::ReduceScatter:
        if (in_place) {
          fillPeriodic(recv_, n * count, 0, own, es_);
        } else {
          fillPeriodic(send_, n * count, 0, own, es_);
          poison(recv_, block);
        }
        break;
    }
  }

  long long verify(Impl impl, bool in_place, std::size_t count) const {
    const std::size_t block = count * es_;
    const auto rank = static_cast<std::size_t>(rank_);
    switch (o_.coll) {
      case Coll::AllReduce:
        return countWrong(recv_, count, 0, expectedPeriod(n_, o_.op, o_.type), es_);
      case Coll::Reduce:
        if (rank_ != o_.root) return 0;
        return countWrong(recv_, count, 0, expectedPeriod(n_, o_.op, o_.type), es_);
      case Coll::Broadcast:
        return countWrong(recv_, count, 0, inputPeriod(o_.root, blinkSum, o_.type), es_);
      case Coll::AllGather: {
        long long wrong = 0;
        for (int q = 0; q < n_; ++q) {
          wrong += countWrong(recv_ + static_cast<std::size_t>(q) * block, count, 0,
                              inputPeriod(q, blinkSum, o_.type), es_);
        }
        return wrong;
      }
      case Coll::ReduceScatter: {
        // Blink (as NCCL) leaves the in-place result in the rank's own block; MPI at the start.
        const std::byte* got = in_place && impl != Impl::Mpi ? recv_ + rank * block : recv_;
        return countWrong(got, count, rank * count, expectedPeriod(n_, o_.op, o_.type), es_);
      }
    }
    return 0;
  }

  const Options& o_;
  int rank_;
  int n_;
  blinkComm_t comm_;
  std::size_t es_;
  std::size_t bytes_;
  std::byte* send_ = nullptr;
  std::byte* recv_ = nullptr;
  MPI_Datatype mpi_type_ = MPI_DATATYPE_NULL;
  // --memory device: the buffers the collectives run on.
  blink::device::Device* device_ = nullptr;
  blink::device::Device::Stream stream_ = -1;
  std::size_t alloc_ = 0;
  std::byte* dsend_ = nullptr;
  std::byte* drecv_ = nullptr;
  std::unique_ptr<blink::perf::NcclBaseline> nccl_;  // --baseline nccl with -m device
};

// The sweep's sizes, rounded down to whole elements (x ranks for allgather/reducescatter).
std::vector<std::size_t> sweepSizes(const Options& o, int n) {
  const std::size_t unit =
      blinkDataTypeSize(o.type) * (blocked(o.coll) ? static_cast<std::size_t>(n) : 1);
  std::vector<std::size_t> sizes;
  for (std::size_t b = o.min_bytes; b <= o.max_bytes;) {
    const std::size_t rounded = b / unit * unit;
    if (rounded > 0 && (sizes.empty() || sizes.back() != rounded)) sizes.push_back(rounded);
    if (b > o.max_bytes / o.step_factor) break;
    b = std::max<std::size_t>(b * o.step_factor, b + 1);
  }
  return sizes;
}

// ---- Output -------------------------------------------------------------------------

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

constexpr std::size_t kGroupWidth = 2 + 9 + 2 + 7 + 2 + 7 + 2 + 6;  // time algbw busbw #wrong
constexpr std::size_t kRatioWidth = 2 + 6;

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

struct Row {
  std::size_t bytes = 0;
  Measurement m[kImpls][2];  // [impl][in_place]
};

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

// The nodes Blink sees (how many, their ranks, how they were told apart), which
// can differ from the MPI host names (BLINK_NODE_ID): the lines of
// blinkCommExplain before its topology.
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

int benchmark(const Options& o) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  // Checks that need the rank count: every rank finds the same answer.
  std::string usage;
  const std::vector<std::size_t> sizes = sweepSizes(o, n);
  const std::size_t es = blinkDataTypeSize(o.type);
  if (rooted(o.coll) && o.root >= n) {
    usage =
        "--root " + std::to_string(o.root) + " is not a rank (0.." + std::to_string(n - 1) + ")";
  } else if (sizes.empty()) {
    usage = "--maxbytes " + std::to_string(o.max_bytes) + " is smaller than one element" +
            (blocked(o.coll)
                 ? " per rank (" + std::to_string(es * static_cast<std::size_t>(n)) + " bytes)"
                 : " (" + std::to_string(es) + " bytes)");
  } else if (o.baseline_mpi &&
             sizes.back() / es / (blocked(o.coll) ? static_cast<std::size_t>(n) : 1) >
                 static_cast<std::size_t>(INT_MAX)) {
    usage =
        "--baseline mpi: MPI counts are ints; --maxbytes is too large for " + rt::toString(o.type);
  }
  if (!usage.empty()) {
    if (rank == 0) std::fprintf(stderr, "blink_perf: %s (see --help)\n", usage.c_str());
    return blink::cli::kUsage;
  }

  // Who runs where (rank 0 prints).
  const std::string host = hostName();
  constexpr int kHostLen = 128;
  std::vector<char> host_buf(kHostLen, '\0');
  std::strncpy(host_buf.data(), host.c_str(), kHostLen - 1);
  std::vector<char> hosts(static_cast<std::size_t>(kHostLen) * static_cast<std::size_t>(n));
  PMPI_Gather(host_buf.data(), kHostLen, MPI_CHAR, hosts.data(), kHostLen, MPI_CHAR, 0,
              MPI_COMM_WORLD);
  const int pid = static_cast<int>(getpid());
  std::vector<int> pids(static_cast<std::size_t>(n));
  PMPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);

  blinkComm_t comm = nullptr;
  const int rank_ = rank;  // for BLINK_PERF_CHECK
  BLINK_PERF_CHECK(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD));

  const std::string coll = collName(o.coll);
  const std::string dtype = rt::toString(o.type);
  const std::string op = reduces(o.coll) ? rt::toString(o.op) : "none";
  const int root = rooted(o.coll) ? o.root : -1;
  int exit_code = blink::cli::kOk;
  {
    Bench bench(o, rank, n, comm, sizes.back());
    const std::string mpi_skip = o.baseline_mpi ? bench.mpiSkipReason() : "";
    const bool run_mpi = o.baseline_mpi && mpi_skip.empty();
    const std::string nccl_skip = o.baseline_nccl ? bench.ncclSkipReason() : "";
    const bool run_nccl = o.baseline_nccl && nccl_skip.empty();
    if (rank == 0 && o.csv && !nccl_skip.empty()) {
      // On stderr, so that the CSV stays rows only.
      std::fprintf(stderr, "nccl baseline: skipped (%s)\n", nccl_skip.c_str());
    }
    const Measurement memcpy_m = bench.memcpyBandwidth();

    std::vector<bool> modes;  // in_place values to run
    if (o.out_of_place) modes.push_back(false);
    if (o.in_place) modes.push_back(true);
    std::vector<Impl> impls = {Impl::Blink};
    if (run_mpi) impls.push_back(Impl::Mpi);
    if (run_nccl) impls.push_back(Impl::Nccl);

    if (rank == 0 && o.csv) {
      if (o.csv_header) {
        std::printf("impl,collective,bytes,dtype,op,inplace,time_us,algbw_gbps,busbw_gbps,wrong\n");
      }
      printCsvRow("memcpy", "memcpy", sizes.back(), dtype, "none", 0, memcpy_m);
    } else if (rank == 0) {
      std::set<std::string> distinct;
      for (int r = 0; r < n; ++r)
        distinct.insert(std::string(&hosts[static_cast<std::size_t>(r) * kHostLen]));
      std::printf(
          "# blink_perf: %s, %s, op %s, root %d, %zu..%zu bytes (x%zu), %d iterations, "
          "%d warm-ups, check %d, in-place %s, baseline %s\n",
          coll.c_str(), dtype.c_str(), op.c_str(), root, sizes.front(), sizes.back(), o.step_factor,
          o.iters, o.warmup, o.check ? 1 : 0,
          o.out_of_place && o.in_place ? "both" : (o.in_place ? "1" : "0"),
          o.baseline_mpi ? "mpi" : (o.baseline_nccl ? "nccl" : "none"));
      std::printf("# %s\n# MPI: %s\n", blinkGetBuildInfo(), mpiLibrary().c_str());
      std::printf("# %d rank(s) on %zu MPI host(s), %s buffers\n", n, distinct.size(),
                  bench.memoryName());
      for (const std::string& line : blinkNodes(comm)) std::printf("# %s\n", line.c_str());
      for (int r = 0; r < n; ++r) {
        std::printf("#  Rank %2d Pid %7d on %s\n", r, pids[static_cast<std::size_t>(r)],
                    &hosts[static_cast<std::size_t>(r) * kHostLen]);
      }
      std::printf(
          "# memcpy GB/s: %.3f (%zu bytes on rank 0, %s us per copy, average of %d after %d "
          "warm-ups)\n",
          memcpy_m.algbw, sizes.back(), fmtTime(memcpy_m.time_us).c_str(), o.iters, o.warmup);
      if (!mpi_skip.empty()) std::printf("# Note: %s\n", mpi_skip.c_str());
      if (!nccl_skip.empty()) std::printf("# nccl baseline: skipped (%s)\n", nccl_skip.c_str());
      if (run_mpi && (o.type == blinkFloat16 || o.type == blinkBfloat16)) {
        std::printf("# Note: the MPI baseline moves %s as MPI_UINT16_T\n", dtype.c_str());
      }
      std::printf("#\n");
      // Three header lines: group titles, column names, units.
      std::string titles = "#" + std::string(11 + 2 + 12 + 2 + 8 + 2 + 6 + 2 + 6, ' ');
      std::string names = "#" + padLeft("size", 11) + "  " + padLeft("count", 12) + "  " +
                          padLeft("type", 8) + "  " + padLeft("redop", 6) + "  " +
                          padLeft("root", 6);
      std::string units = "#" + padLeft("(B)", 11) + "  " + padLeft("(elements)", 12) +
                          std::string(2 + 8 + 2 + 6 + 2 + 6, ' ');
      for (Impl impl : impls) {
        for (bool ip : modes) {
          std::string title = ip ? "in-place" : "out-of-place";
          if (o.baseline_mpi || o.baseline_nccl) title = std::string(implName(impl)) + " " + title;
          titles += center(title, kGroupWidth);
          names += "  " + padLeft("time", 9) + "  " + padLeft("algbw", 7) + "  " +
                   padLeft("busbw", 7) + "  " + padLeft("#wrong", 6);
          units += "  " + padLeft("(us)", 9) + "  " + padLeft("(GB/s)", 7) + "  " +
                   padLeft("(GB/s)", 7) + "  " + std::string(6, ' ');
        }
      }
      if (run_mpi) {
        titles += center("blink/mpi busbw", kRatioWidth * modes.size());
        for (bool ip : modes) {
          names += "  " + padLeft(ip ? "in" : "out", 6);
          units += std::string(kRatioWidth, ' ');
        }
      }
      auto rstrip = [](std::string s) {
        while (!s.empty() && s.back() == ' ') s.pop_back();
        return s;
      };
      std::printf("%s\n%s\n%s\n", rstrip(titles).c_str(), names.c_str(), rstrip(units).c_str());
      std::fflush(stdout);
    }

    long long blink_wrong = 0, mpi_wrong = 0, nccl_wrong = 0;
    double busbw_sum[kImpls] = {0, 0, 0};
    int busbw_n[kImpls] = {0, 0, 0};
    double log_ratio_sum = 0;
    int ratio_n = 0;
    double ratio_min = 0, ratio_max = 0;
    for (std::size_t bytes : sizes) {
      Row row;
      row.bytes = bytes;
      for (Impl impl : impls) {
        for (bool ip : modes) {
          Measurement m = bench.measure(impl, ip, bytes);
          const int i = implIndex(impl);
          row.m[i][ip ? 1 : 0] = m;
          busbw_sum[i] += m.busbw;
          ++busbw_n[i];
          if (m.wrong > 0) {
            (impl == Impl::Blink ? blink_wrong
             : impl == Impl::Mpi ? mpi_wrong
                                 : nccl_wrong) += m.wrong;
          }
          if (rank == 0 && o.csv)
            printCsvRow(implName(impl), coll, bytes, dtype, op, ip ? 1 : 0, m);
        }
      }
      for (bool ip : modes) {
        double r = 0;
        if (ratioOf(row.m[0][ip ? 1 : 0], row.m[1][ip ? 1 : 0], &r)) {
          log_ratio_sum += std::log(r);
          ratio_min = ratio_n == 0 ? r : std::min(ratio_min, r);
          ratio_max = ratio_n == 0 ? r : std::max(ratio_max, r);
          ++ratio_n;
        }
      }
      if (rank == 0 && !o.csv) {
        std::string line = padLeft(std::to_string(bytes), 12) + "  " +
                           padLeft(std::to_string(bytes / es), 12) + "  " + padLeft(dtype, 8) +
                           "  " + padLeft(op, 6) + "  " + padLeft(std::to_string(root), 6);
        for (Impl impl : impls) {
          for (bool ip : modes) line += group(row.m[implIndex(impl)][ip ? 1 : 0]);
        }
        if (run_mpi) {
          for (bool ip : modes) {
            double r = 0;
            line += "  " + padLeft(ratioOf(row.m[0][ip ? 1 : 0], row.m[1][ip ? 1 : 0], &r)
                                       ? fmtFixed(r, 2)
                                       : "-",
                                   6);
          }
        }
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      }
    }
    if (blink_wrong > 0) exit_code = blink::cli::kFailure;
    if (rank == 0 && !o.csv) {
      const double avg_blink = busbw_n[0] ? busbw_sum[0] / busbw_n[0] : 0;
      // "N/A (no check)", "0 OK" or the count and what it means.
      auto outOfBounds = [&o](long long wrong, const char* meaning) {
        return !o.check ? std::string("N/A (no check)")
                        : std::to_string(wrong) + (wrong ? meaning : " OK");
      };
      std::printf("# Out of bounds values : %s\n", outOfBounds(blink_wrong, " FAILED").c_str());
      std::printf("# Avg bus bandwidth    : %.4f\n", avg_blink);
      if (run_mpi) {
        const double avg_mpi = busbw_n[1] ? busbw_sum[1] / busbw_n[1] : 0;
        std::printf("#\n# mpi: Out of bounds values : %s\n",
                    outOfBounds(mpi_wrong, " (the MPI library's results; see --help)").c_str());
        std::printf("# mpi: Avg bus bandwidth    : %.4f\n", avg_mpi);
        if (ratio_n > 0) {
          std::printf(
              "# Ratio blink/mpi busbw: %s of the averages; per measurement: geometric "
              "mean %.2f, min %.2f, max %.2f\n",
              avg_mpi > 0 ? fmtFixed(avg_blink / avg_mpi, 2).c_str() : "-",
              std::exp(log_ratio_sum / ratio_n), ratio_min, ratio_max);
        }
      }
      if (run_nccl) {
        const double avg_nccl = busbw_n[2] ? busbw_sum[2] / busbw_n[2] : 0;
        std::printf("#\n# nccl: Out of bounds values : %s\n",
                    outOfBounds(nccl_wrong, " (NCCL's results)").c_str());
        std::printf("# nccl: Avg bus bandwidth    : %.4f\n", avg_nccl);
        if (avg_nccl > 0) {
          std::printf("# Ratio blink/nccl busbw: %s of the averages\n",
                      fmtFixed(avg_blink / avg_nccl, 2).c_str());
        }
      }
      std::printf("#\n");
      std::fflush(stdout);
    }
  }
  if (rank == 0 && !o.csv) {
    // What deciding cost: the first call packs the trees, later sizes only lower them.
    std::size_t length = 0;
    BLINK_PERF_CHECK(blinkCommExplain(comm, nullptr, 0, &length));
    std::string text(length + 1, '\0');
    BLINK_PERF_CHECK(blinkCommExplain(comm, text.data(), text.size(), &length));
    const auto at = text.find("Planning: ");
    if (at != std::string::npos) {
      std::printf("# %s\n", text.substr(at, text.find('\n', at) - at).c_str());
    }
  }
  BLINK_PERF_CHECK(blinkCommDestroy(comm));
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parseOptions(argc, argv);
  } catch (const UsageError& e) {
    if (launcherRank() == 0)
      std::fprintf(stderr, "blink_perf: %s (see --help)\n", e.message.c_str());
    return blink::cli::kUsage;
  }
  if (o.help) {
    if (launcherRank() == 0) std::fputs(kHelp, stdout);
    return blink::cli::kOk;
  }
  if (o.version) {
    if (launcherRank() == 0) blink::cli::printVersion("blink_perf");
    return blink::cli::kOk;
  }
  MPI_Init(&argc, &argv);
  // One sweep per datatype and op (-d all, -o all), the ops only where they apply.
  int rc = blink::cli::kOk;
  bool first = true;
  for (blinkDataType_t type : o.types) {
    for (blinkRedOp_t op : o.ops) {
      if (reduces(o.coll) && op == blinkAvg && !rt::isFloating(type)) continue;
      Options one = o;
      one.type = type;
      one.op = op;
      one.csv_header = first;
      first = false;
      rc = std::max(rc, benchmark(one));
      if (rc == blink::cli::kUsage) break;
      if (!reduces(o.coll)) break;  // the op does not matter
    }
    if (rc == blink::cli::kUsage) break;
  }
  MPI_Finalize();
  return rc;
}
