// perf/blink_perf: an nccl-tests-style benchmark of Blink's collectives, run under
// mpirun on host buffers. One collective, datatype and op over a size sweep, out of
// place and in place, timed as nccl-tests does (barrier, n iterations, the slowest
// rank's average), with time, algbw, busbw and #wrong per measurement; with
// --baseline mpi the same sweep also runs through PMPI_* in the same job, on the same
// buffers, interleaved size by size, for side-by-side ratios; with -m device and
// --baseline nccl, through NCCL (nccl_baseline.hpp). --format csv is a stable
// interface for scripts (see kHelp).
//
// This file runs the sweeps and prints them; blink_perf_options.* parses the command
// line, blink_perf_inputs.* makes the known inputs and expected values,
// blink_perf_bench.* takes one measurement, blink_perf_report.* formats the cells.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "blink_perf_bench.hpp"
#include "blink_perf_options.hpp"
#include "blink_perf_report.hpp"
#include "runtime/reduce_cpu.hpp"
#include "tools/cli.hpp"

namespace {

namespace rt = blink::runtime;
using namespace blink_perf;  // NOLINT(google-build-using-namespace): this program's own parts
using blink::cli::UsageError;

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
      if (o.timed_bytes > 0 || o.warmup_bytes > 0) {
        std::printf(
            "# more calls where those move less: at least %zu bytes timed and %zu warmed up "
            "per measurement\n",
            o.timed_bytes, o.warmup_bytes);
      }
      if (o.setup_calls > 0 && o.min_bytes <= (std::size_t{1} << 20)) {
        std::printf("# %d untimed Blink calls before its first timing (--setup-calls)\n",
                    o.setup_calls);
      }
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
