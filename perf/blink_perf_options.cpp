#include "blink_perf_options.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <utility>

#include "runtime/reduce_cpu.hpp"
#include "tools/cli.hpp"

namespace blink_perf {

namespace rt = blink::runtime;
using blink::cli::UsageError;

const char* const kHelp =
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
      --timed-bytes SIZE   at least SIZE bytes of buffer per measurement: at sizes
                           where -n calls move less, ceil(SIZE / size) timed calls
                           (default 0: -n at every size). For links with a burst
                           allowance (a tc token bucket), so that a measurement
                           moves several buckets and times the link's rate
      --warmup-bytes SIZE  the same for the warm-up calls (-w): warm-ups that move
                           more than the bucket leave it empty for the timed calls
      --setup-calls N      untimed Blink calls before its first measurement, where
                           its size is at most 1M (default 100): Blink measures its
                           node leaders again after their 64th call (a one-time
                           pause of a few ms), which -w calls alone would leave in
                           the first timing
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

bool isUnsigned(blinkDataType_t t) {
  return t == blinkUint8 || t == blinkUint16 || t == blinkUint32 || t == blinkUint64;
}

// ---- The command line ---------------------------------------------------------------

namespace {

struct OptionSpec {
  char short_name;  // 0: long form only
  const char* long_name;
  bool takes_value;
};

const OptionSpec kOptionSpecs[] = {
    {'b', "minbytes", true},   {'e', "maxbytes", true},     {'f', "stepfactor", true},
    {'n', "iters", true},      {'w', "warmup_iters", true}, {'c', "check", true},
    {'o', "op", true},         {'d', "datatype", true},     {'r', "root", true},
    {0, "collective", true},   {0, "inplace", true},        {0, "baseline", true},
    {0, "format", true},       {'h', "help", false},        {'m', "memory", true},
    {0, "version", false},     {0, "nccl-library", true},   {0, "timed-bytes", true},
    {0, "warmup-bytes", true}, {0, "setup-calls", true}};

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

}  // namespace

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
  if (auto* s = get("timed-bytes")) o.timed_bytes = parseSize("timed-bytes", *s);
  if (auto* s = get("warmup-bytes")) o.warmup_bytes = parseSize("warmup-bytes", *s);
  if (auto* s = get("setup-calls")) {
    o.setup_calls = static_cast<int>(parseInteger("setup-calls", *s, 0, INT_MAX));
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

namespace {
int callsFor(int given, std::size_t wanted_bytes, std::size_t bytes) {
  if (wanted_bytes == 0 || bytes == 0) return given;
  const std::size_t calls = (wanted_bytes + bytes - 1) / bytes;
  return static_cast<int>(std::min<std::size_t>(std::max<std::size_t>(calls, given), INT_MAX));
}
}  // namespace

int timedCalls(const Options& o, std::size_t bytes) {
  return callsFor(o.iters, o.timed_bytes, bytes);
}

int warmupCalls(const Options& o, std::size_t bytes) {
  return callsFor(o.warmup, o.warmup_bytes, bytes);
}

int launcherRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

}  // namespace blink_perf
