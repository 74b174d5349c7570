#include "runtime/nic_assignment.hpp"

#include <sstream>

#include "plan/node_layout.hpp"
#include "topology/node_description.hpp"

namespace blink::runtime {

NicAssignment assignNics(const JobTopology& job) {
  NicAssignment out;
  const std::size_t size = job.plan_rank_of.size();
  out.nics_of_rank.resize(size);
  if (!job.discovered || !plan::isMultiNode(job.topology)) return out;
  const plan::NodeLayout layout = plan::nodeLayout(job.topology);
  std::ostringstream text;
  for (std::size_t r = 0; r < size; ++r) {
    const int p = job.plan_rank_of[r];
    const int node = layout.node_of_rank[static_cast<std::size_t>(p)];
    text << (r ? ", " : "") << "rank " << r << " (node " << node << ") ->";
    bool any = false;
    for (const plan::NodeLayout::Port& port : layout.ports[static_cast<std::size_t>(node)]) {
      if (port.rank != p || !port.nic) continue;
      const topo::Device& nic = job.topology.device(*port.nic);
      const int k = topo::hostNicIndex(nic);
      text << " " << nic.id << (nic.model.empty() ? "" : " " + nic.model);
      any = true;
      if (k >= 0) out.nics_of_rank[r].push_back(k);
    }
    if (!any) text << " no NIC";
  }
  out.text = text.str();
  return out;
}

}  // namespace blink::runtime
