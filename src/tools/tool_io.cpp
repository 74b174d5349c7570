#include "tools/tool_io.hpp"

#include <fstream>
#include <iostream>

#include "common/env.hpp"
#include "common/error.hpp"
#include "topology/discover.hpp"
#include "topology/load.hpp"

namespace blink::cli {

topo::LinkTable linkTableFromArgs(const Args& args) {
  topo::LinkTable table = topo::LinkTable::fromEnvironment();
  if (auto spec = args.value("--link-gbps")) table.applyOverrides(*spec);
  return table;
}

topo::Topology topologyFromArgs(const Args& args) {
  const topo::LinkTable table = linkTableFromArgs(args);
  topo::Topology t = [&] {
    if (auto spec = args.value("--topo")) return topo::loadTopology(*spec, table);
    if (auto xml = args.value("--hwloc-xml")) {
      topo::DiscoverOptions options;
      options.table = table;
      options.hwloc_xml_path = *xml;
      return topo::discoverLocalTopology(options);
    }
    if (auto spec = env::get("BLINK_TOPO")) return topo::loadTopology(*spec, table);
    return topo::discoverThisMachine(table);
  }();
  std::vector<int> gpus = args.value("--gpus") ? env::parseIntList(*args.value("--gpus"), "--gpus")
                                               : env::getIntList("BLINK_TOPO_GPUS");
  return topo::withAllocation(std::move(t), gpus);
}

void emitOutput(const Args& args, const std::string& text) {
  if (auto path = args.value("--output")) {
    std::ofstream out(*path, std::ios::binary);
    out << text;
    out.close();
    if (!out) throw Error(blinkSystemError, "cannot write " + *path);
  } else {
    std::cout << text;
  }
}

std::set<topo::LinkKind> parseLinks(const std::string& text) {
  if (text == "all") return {};
  std::set<topo::LinkKind> kinds;
  std::string_view rest = text;
  while (true) {
    auto comma = rest.find(',');
    std::string word(rest.substr(0, comma));
    auto kind = topo::parseLinkKind(word);
    if (!kind) {
      throw UsageError{"--links: unknown link kind '" + word + "' (expected all or " +
                       topo::allLinkKindNames() + ")"};
    }
    kinds.insert(*kind);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return kinds;
}

}  // namespace blink::cli
