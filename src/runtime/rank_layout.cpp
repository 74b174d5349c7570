#include "runtime/rank_layout.hpp"

#include <unistd.h>

#include <array>
#include <cstring>
#include <map>

#include "common/env.hpp"
#include "common/error.hpp"

namespace blink::runtime {
namespace {

constexpr std::size_t kMaxName = 256;

void checkMpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    throw Error(blinkSystemError,
                std::string(what) + " failed with MPI error " + std::to_string(rc));
  }
}

}  // namespace

std::string localNodeName() {
  if (auto id = env::get("BLINK_NODE_ID")) return *id;
  std::array<char, kMaxName> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) {
    throw Error(blinkSystemError, std::string("gethostname: ") + std::strerror(errno));
  }
  return host.data();
}

RankLayout computeRankLayout(MPI_Comm comm, const std::string& node_name) {
  if (node_name.empty() || node_name.size() >= kMaxName) {
    throw Error(blinkInvalidInput, "node name '" + node_name + "' must have 1.." +
                                       std::to_string(kMaxName - 1) + " characters");
  }
  RankLayout layout;
  checkMpi(PMPI_Comm_rank(comm, &layout.rank), "MPI_Comm_rank");
  checkMpi(PMPI_Comm_size(comm, &layout.size), "MPI_Comm_size");

  std::array<char, kMaxName> mine{};
  std::memcpy(mine.data(), node_name.data(), node_name.size());
  std::vector<char> all(kMaxName * static_cast<std::size_t>(layout.size));
  checkMpi(PMPI_Allgather(mine.data(), static_cast<int>(kMaxName), MPI_CHAR, all.data(),
                          static_cast<int>(kMaxName), MPI_CHAR, comm),
           "MPI_Allgather");

  std::map<std::string, int> index_of_name;
  std::vector<int> ranks_on_node;
  layout.node_of_rank.resize(layout.size);
  layout.local_rank_of_rank.resize(layout.size);
  for (int r = 0; r < layout.size; ++r) {
    std::string name(all.data() + static_cast<std::size_t>(r) * kMaxName);
    auto [it, inserted] = index_of_name.emplace(name, static_cast<int>(layout.node_names.size()));
    if (inserted) {
      layout.node_names.push_back(name);
      ranks_on_node.push_back(0);
    }
    layout.node_of_rank[r] = it->second;
    layout.local_rank_of_rank[r] = ranks_on_node[it->second]++;
  }
  layout.num_nodes = static_cast<int>(layout.node_names.size());
  layout.node = layout.node_of_rank[layout.rank];
  layout.local_rank = layout.local_rank_of_rank[layout.rank];
  layout.local_size = ranks_on_node[layout.node];
  return layout;
}

}  // namespace blink::runtime
