// perf/reduce_bench: the CPU reduction kernels (runtime::reduceInto) against memcpy.
// For every datatype with op sum (and min for float32), and every instruction-set
// variant this CPU runs, the bandwidth of reduceInto over a large buffer next to
// memcpy's over the same size, in one run. Prints a table, or CSV with --format csv.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "runtime/reduce_cpu.hpp"
#include "tools/cli.hpp"

namespace {

namespace rt = blink::runtime;

const char* kHelp =
    R"(Usage: reduce_bench [--bytes N] [--reps N] [--isa LIST] [--format table|csv]

Measures runtime::reduceInto (inout[i] = op(inout[i], in[i])) for every datatype with
op sum, and float32 also with min, for each instruction-set variant this CPU can run
(generic = the x86-64 baseline, SSE2; avx2 = AVX2 + F16C; avx512 = AVX-512 F/BW/VL/DQ),
against memcpy of the same number of bytes, in the same run. One thread.

  GB/s = bytes of `in` (count x element size) / seconds, best of --reps runs after one
  warm-up run; memcpy GB/s = bytes copied / seconds, best of --reps, measured again
  just before every row. A reduction reads two buffers and writes one, memcpy reads one
  and writes one (with non-temporal stores at this size, in glibc), so the ratio of a
  memory-bound kernel depends on the machine.

  --bytes N         size of each buffer (default 67108864 = 64 MiB; suffixes K, M, G)
  --reps N          timed runs per measurement (default 10)
  --isa LIST        comma-separated variants: generic,avx2,avx512 or "all" (default: all
                    that this CPU supports)
  --format F        table (default) or csv
  -h, --help        this text

Exit status: 0 success, 2 bad command line.
)";

using Clock = std::chrono::steady_clock;

std::size_t parseBytes(const std::string& text) {
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw blink::cli::UsageError{"--bytes: not a size: '" + text + "'"};
  }
  const std::string suffix = text.substr(pos);
  if (suffix == "K" || suffix == "k") {
    v <<= 10;
  } else if (suffix == "M" || suffix == "m") {
    v <<= 20;
  } else if (suffix == "G" || suffix == "g") {
    v <<= 30;
  } else if (!suffix.empty()) {
    throw blink::cli::UsageError{"--bytes: unknown suffix '" + suffix + "'"};
  }
  if (v < 64) throw blink::cli::UsageError{"--bytes must be at least 64"};
  return static_cast<std::size_t>(v);
}

std::vector<rt::CpuIsa> parseIsas(const std::string& text) {
  std::vector<rt::CpuIsa> isas;
  const rt::CpuIsa all[] = {rt::CpuIsa::Generic, rt::CpuIsa::Avx2, rt::CpuIsa::Avx512};
  if (text == "all") {
    for (rt::CpuIsa isa : all) {
      if (rt::cpuIsaSupported(isa)) isas.push_back(isa);
    }
    return isas;
  }
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    bool found = false;
    for (rt::CpuIsa isa : all) {
      if (rt::toString(isa) != name) continue;
      found = true;
      if (!rt::cpuIsaSupported(isa)) {
        throw blink::cli::UsageError{"--isa: this CPU cannot run " + name};
      }
      isas.push_back(isa);
    }
    if (!found) throw blink::cli::UsageError{"--isa: unknown variant '" + name + "'"};
  }
  if (isas.empty()) throw blink::cli::UsageError{"--isa: empty list"};
  return isas;
}

// Values that keep every type in its ordinary range over many repeated sums (no
// denormals, NaN or overflow to Inf that would change the timing).
void fill(std::vector<std::uint8_t>& buf, blinkDataType_t type, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::size_t n = buf.size() / rt::elementSize(type);
  auto put = [&](std::size_t i, auto v) { std::memcpy(buf.data() + i * sizeof v, &v, sizeof v); };
  for (std::size_t i = 0; i < n; ++i) {
    const float small = static_cast<float>(rng() % 1000) / 1000.0f;  // [0, 1)
    switch (type) {
      case blinkFloat16:
        put(i, rt::floatToHalf(small));
        break;
      case blinkBfloat16:
        put(i, rt::floatToBfloat16(small));
        break;
      case blinkFloat32:
        put(i, small);
        break;
      case blinkFloat64:
        put(i, static_cast<double>(small));
        break;
      default:
        for (std::size_t b = 0; b < rt::elementSize(type); ++b) {
          buf[i * rt::elementSize(type) + b] = static_cast<std::uint8_t>(rng());
        }
    }
  }
}

template <typename Body>
double bestSeconds(int reps, Body&& body) {
  body();  // warm-up (and first touch of any page not yet touched)
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    body();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
  }
  return best;
}

struct Row {
  std::string type, op, isa;
  std::size_t bytes = 0;
  double reduce_gbps = 0, memcpy_gbps = 0;
};

int run(const blink::cli::Args& args) {
  if (args.has("--help")) {
    std::cout << kHelp;
    return blink::cli::kOk;
  }
  const std::size_t bytes = parseBytes(args.valueOr("--bytes", "67108864"));
  int reps = 0;
  try {
    reps = std::stoi(args.valueOr("--reps", "10"));
  } catch (const std::exception&) {
    throw blink::cli::UsageError{"--reps: not a number"};
  }
  if (reps < 1) throw blink::cli::UsageError{"--reps must be >= 1"};
  const std::vector<rt::CpuIsa> isas = parseIsas(args.valueOr("--isa", "all"));
  const std::string format = args.valueOr("--format", "table");
  if (format != "table" && format != "csv") {
    throw blink::cli::UsageError{"--format must be table or csv"};
  }

  std::vector<std::uint8_t> inout(bytes), in(bytes), copy(bytes);
  std::memset(copy.data(), 1, bytes);

  std::vector<Row> rows;
  for (int t = 0; t < blinkNumTypes; ++t) {
    const auto type = static_cast<blinkDataType_t>(t);
    std::vector<blinkRedOp_t> ops = {blinkSum};
    if (type == blinkFloat32) ops.push_back(blinkMin);
    const std::size_t count = bytes / rt::elementSize(type);
    for (blinkRedOp_t op : ops) {
      for (rt::CpuIsa isa : isas) {
        fill(inout, type, 1);
        fill(in, type, 2);
        // memcpy of the same bytes, measured again beside every row (the machine may be
        // shared: both figures of a row come from the same few seconds).
        const std::size_t row_bytes = count * rt::elementSize(type);
        const double memcpy_s =
            bestSeconds(reps, [&] { std::memcpy(copy.data(), in.data(), row_bytes); });
        const double s = bestSeconds(
            reps, [&] { rt::reduceIntoIsa(isa, inout.data(), in.data(), count, type, op); });
        Row r;
        r.type = rt::toString(type);
        r.op = rt::toString(op);
        r.isa = rt::toString(isa);
        r.bytes = row_bytes;
        r.reduce_gbps = static_cast<double>(r.bytes) / s / 1e9;
        r.memcpy_gbps = static_cast<double>(r.bytes) / memcpy_s / 1e9;
        rows.push_back(r);
      }
    }
  }

  if (format == "csv") {
    std::cout << "type,op,isa,bytes,reduce_gbps,memcpy_gbps,reduce_over_memcpy\n";
    for (const Row& r : rows) {
      std::cout << r.type << "," << r.op << "," << r.isa << "," << r.bytes << "," << std::fixed
                << std::setprecision(3) << r.reduce_gbps << "," << r.memcpy_gbps << ","
                << r.reduce_gbps / r.memcpy_gbps << "\n";
    }
    return blink::cli::kOk;
  }
  std::cout << "reduceInto vs memcpy, " << bytes << " bytes per buffer, best of " << reps
            << " runs, one thread (best variant here: " << rt::toString(rt::bestCpuIsa())
            << ")\n\n";
  std::cout << "| type | op | isa | reduce GB/s | memcpy GB/s | reduce/memcpy |\n"
            << "|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    std::cout << "| " << r.type << " | " << r.op << " | " << r.isa << " | " << std::fixed
              << std::setprecision(2) << r.reduce_gbps << " | " << r.memcpy_gbps << " | "
              << r.reduce_gbps / r.memcpy_gbps << " |\n";
  }
  return blink::cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  return blink::cli::runTool("reduce_bench", argc, argv, {"--bytes", "--reps", "--isa", "--format"},
                             {"--help"}, run);
}
