// perf/plan_scale: how long planning takes on large clusters. Each case runs
// plan::choosePlan (pack, lower and simulate every candidate, baselines included, as
// a communicator does at start-up) in a fresh child process, so the wall time and
// the peak resident memory are those of that one planning call from a cold tree
// cache. Writes one CSV row per case and a Markdown table.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "plan/planner.hpp"
#include "topology/zoo.hpp"

namespace {

namespace topo = blink::topo;
namespace plan = blink::plan;

const char* kHelp =
    R"(Usage: plan_scale_bench [--csv FILE] [--markdown FILE] [--quick] [--case TOPO,COLL,BYTES]

Times plan::choosePlan (every candidate packed, lowered and simulated, as at
communicator start) on large zoo clusters, each case in a fresh child process (cold
tree cache), and reports wall seconds, CPU seconds, peak resident memory (the child's ru_maxrss),
the chosen algorithm, its predicted algorithm bandwidth and the optimal bound
(plan::optimalAlgbwGbps; on clusters the NIC bound).

Default cases: AllReduce and AllGather of 1 GiB on dgx1-v100:8 (64 GPUs), hgx-h100:8
(64 GPUs) and hgx-h100:128 (1024 GPUs); AllReduce of 64 MiB on dgx2 (the runtime's
decision on one 16-GPU node); AllReduce of 1 GiB on dgx1-v100:4.

  --csv FILE        default perf/results/plan_scale.csv
  --markdown FILE   default perf/results/plan_scale.md
  --quick           dgx1-v100:8 AllReduce only (a smoke run)
  --case T,C,B      one case instead (zoo topology, collective, bytes with K/M/G),
                    may repeat
  --family F        only candidates of family F (plan::familyOf: trees,
                    hierarchical, ring, dbt), baselines not built
  --limit-mib M     address-space limit of each child (default 3072): a case that
                    needs more fails (row FAILED) instead of swapping the machine
  -h, --help        this text

Exit codes: 0 success, 1 failure, 2 bad command line.
)";

struct Case {
  std::string topology;
  plan::Collective collective = plan::Collective::AllReduce;
  std::uint64_t bytes = 0;
};

plan::Collective collectiveNamed(const std::string& name) {
  using plan::Collective;
  for (Collective c : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce,
                       Collective::AllGather, Collective::ReduceScatter}) {
    if (plan::toString(c) == name) return c;
  }
  throw std::invalid_argument("unknown collective " + name);
}

// 1024, 64K, 256M, 1G (powers of 1024).
std::uint64_t bytesNamed(const std::string& text) {
  std::size_t used = 0;
  const std::uint64_t n = std::stoull(text, &used);
  const std::string unit = text.substr(used);
  if (unit.empty()) return n;
  if (unit == "K") return n << 10;
  if (unit == "M") return n << 20;
  if (unit == "G") return n << 30;
  throw std::invalid_argument("bad size " + text);
}

struct Result {
  double seconds = 0.0;
  double cpu_seconds = 0.0;  // the child's user + system time (less noisy on a shared machine)
  long peak_kib = 0;
  double predicted_gbps = 0.0;
  double optimal_gbps = 0.0;
  std::size_t steps = 0;  // the chosen plan's steps, every rank's
  char algorithm[64] = {};
  bool ok = false;
};

// Plans one case; runs in the child.
Result planCase(const Case& c, const std::string& family) {
  Result r;
  const topo::Topology t = topo::makeZooTopology(c.topology, topo::LinkTable::builtin());
  plan::PlannerOptions options;
  if (!family.empty()) {
    options.only_family = family;
    options.allow_baselines = false;
  }
  const auto start = std::chrono::steady_clock::now();
  const plan::Choice choice = plan::choosePlan(c.collective, t, c.bytes, 0, options);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.predicted_gbps = static_cast<double>(c.bytes) / choice.seconds / 1e9;
  r.optimal_gbps = plan::optimalAlgbwGbps(c.collective, t, 0, {});
  r.steps = choice.plan.numSteps();
  std::snprintf(r.algorithm, sizeof r.algorithm, "%s", choice.plan.algorithm.c_str());
  r.ok = true;
  return r;
}

Result runInChild(const Case& c, const std::string& family, long limit_mib) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    const rlimit limit{static_cast<rlim_t>(limit_mib) << 20, static_cast<rlim_t>(limit_mib) << 20};
    setrlimit(RLIMIT_AS, &limit);
    Result r;
    try {
      r = planCase(c, family);
    } catch (const std::exception& e) {
      std::cerr << c.topology << ": " << e.what() << "\n";
    }
    const ssize_t written = write(fds[1], &r, sizeof r);
    _exit(written == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fds[1]);
  Result r;
  const ssize_t got = read(fds[0], &r, sizeof r);
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  if (got != static_cast<ssize_t>(sizeof r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    r.ok = false;
  }
  r.peak_kib = usage.ru_maxrss;
  r.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv_path = "perf/results/plan_scale.csv";
  std::string md_path = "perf/results/plan_scale.md";
  std::vector<Case> cases;
  bool quick = false;
  long limit_mib = 3072;
  std::string family;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kHelp;
      return 0;
    } else if (a == "--csv") {
      csv_path = value();
    } else if (a == "--markdown") {
      md_path = value();
    } else if (a == "--limit-mib") {
      limit_mib = std::stol(value());
    } else if (a == "--family") {
      family = value();
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--case") {
      std::stringstream spec(value());
      std::string topology, collective, bytes;
      std::getline(spec, topology, ',');
      std::getline(spec, collective, ',');
      std::getline(spec, bytes, ',');
      try {
        cases.push_back({topology, collectiveNamed(collective), bytesNamed(bytes)});
      } catch (const std::exception& e) {
        std::cerr << "bad --case: " << e.what() << "\n";
        return 2;
      }
    } else {
      std::cerr << "unknown argument " << a << " (see --help)\n";
      return 2;
    }
  }
  const std::uint64_t gib = std::uint64_t{1} << 30;
  if (cases.empty()) {
    using plan::Collective;
    cases = {{"dgx1-v100:8", Collective::AllReduce, gib}};
    if (!quick) {
      cases.push_back({"dgx1-v100:8", Collective::AllGather, gib});
      cases.push_back({"hgx-h100:8", Collective::AllReduce, gib});
      cases.push_back({"hgx-h100:8", Collective::AllGather, gib});
      cases.push_back({"hgx-h100:128", Collective::AllReduce, gib});
      cases.push_back({"hgx-h100:128", Collective::AllGather, gib});
      cases.push_back({"dgx1-v100:4", Collective::AllReduce, gib});
      cases.push_back({"dgx2", Collective::AllReduce, std::uint64_t{64} << 20});
    }
  }
  std::ofstream csv(csv_path);
  std::ofstream md(md_path);
  if (!csv || !md) {
    std::cerr << "cannot write " << csv_path << " or " << md_path << "\n";
    return 1;
  }
  csv << "topology,collective,bytes,seconds,cpu_seconds,peak_mib,algorithm,steps,predicted_gbps,"
         "optimal_gbps\n";
  md << "| topology | collective | bytes | plan + simulate s | CPU s | peak MiB | chosen | steps | "
        "predicted GB/s | optimal GB/s | predicted / optimal |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
  bool failed = false;
  for (const Case& c : cases) {
    const Result r = runInChild(c, family, limit_mib);
    failed = failed || !r.ok;
    const double mib = static_cast<double>(r.peak_kib) / 1024.0;
    std::ostringstream row;
    row << std::fixed << std::setprecision(2);
    row << c.topology << ',' << plan::toString(c.collective) << ',' << c.bytes << ',' << r.seconds
        << ',' << r.cpu_seconds << ',' << mib << ',' << (r.ok ? r.algorithm : "FAILED") << ','
        << r.steps << ',' << r.predicted_gbps << ',' << r.optimal_gbps;
    csv << row.str() << "\n";
    std::cout << row.str() << std::endl;
    md << std::fixed << std::setprecision(2) << "| " << c.topology << " | "
       << plan::toString(c.collective) << " | " << c.bytes << " | " << r.seconds << " | "
       << r.cpu_seconds << " | " << mib << " | " << (r.ok ? r.algorithm : "FAILED") << " | "
       << r.steps << " | " << r.predicted_gbps << " | " << r.optimal_gbps << " | "
       << (r.optimal_gbps > 0 ? r.predicted_gbps / r.optimal_gbps : 0.0) << " |\n";
  }
  return failed ? 1 : 0;
}
