#include "topology/topology_json.hpp"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.hpp"

namespace blink::topo {
namespace {

using nlohmann::json;

const std::set<std::string> kTopFields = {"format", "version", "name", "devices", "links"};
const std::set<std::string> kDeviceFields = {"id",    "kind",       "node", "gpu_index",
                                             "model", "pci_bus_id", "numa"};
const std::set<std::string> kLinkFields = {
    "from", "to", "kind", "gbps", "multiplicity", "latency_us", "generation", "duplex", "source"};

// Reports problems as "<origin>: <path>: <message>".
class Reader {
 public:
  Reader(std::string origin, const LinkTable& table) : origin_(std::move(origin)), table_(table) {}

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw Error(blinkInvalidInput, origin_ + ": " + path + ": " + message);
  }

  void onlyKnownFields(const json& obj, const std::set<std::string>& known,
                       const std::string& path) const {
    for (const auto& [key, value] : obj.items()) {
      if (!known.contains(key)) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        fail(path, "unknown field '" + key + "' (expected one of: " + list + ")");
      }
    }
  }

  const json& required(const json& obj, const std::string& key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, "missing required field '" + key + "'");
    return *it;
  }

  std::string string(const json& value, const std::string& path) const {
    if (!value.is_string()) fail(path, "expected a string, got " + std::string(value.type_name()));
    return value.get<std::string>();
  }

  long long integer(const json& value, const std::string& path) const {
    if (!value.is_number_integer()) {
      fail(path, "expected an integer, got " + describe(value));
    }
    return value.get<long long>();
  }

  double number(const json& value, const std::string& path) const {
    if (!value.is_number()) fail(path, "expected a number, got " + describe(value));
    return value.get<double>();
  }

  bool boolean(const json& value, const std::string& path) const {
    if (!value.is_boolean()) fail(path, "expected true or false, got " + describe(value));
    return value.get<bool>();
  }

  Topology read(const json& doc) {
    if (!doc.is_object())
      fail("(top level)", "expected an object with \"format\": \"blink-topology\"");
    onlyKnownFields(doc, kTopFields, "(top level)");
    if (string(required(doc, "format", "(top level)"), "format") != "blink-topology") {
      fail("format", "expected \"blink-topology\"");
    }
    long long version = integer(required(doc, "version", "(top level)"), "version");
    if (version != kTopologyFormatVersion) {
      fail("version", "this Blink reads version " + std::to_string(kTopologyFormatVersion) +
                          ", the file has version " + std::to_string(version));
    }
    Topology topo(doc.contains("name") ? string(doc["name"], "name") : origin_);
    const json& devices = required(doc, "devices", "(top level)");
    if (!devices.is_array()) fail("devices", "expected an array");
    int next_gpu_index = 0;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      readDevice(topo, devices[i], "devices[" + std::to_string(i) + "]", next_gpu_index);
    }
    if (doc.contains("links")) {
      const json& links = doc["links"];
      if (!links.is_array()) fail("links", "expected an array");
      for (std::size_t i = 0; i < links.size(); ++i) {
        readLink(topo, links[i], "links[" + std::to_string(i) + "]");
      }
    }
    return topo;
  }

 private:
  static std::string describe(const json& value) {
    std::string dumped = value.dump();
    if (dumped.size() > 40) dumped = dumped.substr(0, 40) + "...";
    return std::string(value.type_name()) + " " + dumped;
  }

  void readDevice(Topology& topo, const json& d, const std::string& path, int& next_gpu_index) {
    if (!d.is_object()) fail(path, "expected an object");
    onlyKnownFields(d, kDeviceFields, path);
    Device dev;
    dev.id = string(required(d, "id", path), path + ".id");
    std::string kind = string(required(d, "kind", path), path + ".kind");
    auto parsed = parseDeviceKind(kind);
    if (!parsed) {
      fail(path + ".kind",
           "unknown device kind '" + kind + "' (expected one of: " + allDeviceKindNames() + ")");
    }
    dev.kind = *parsed;
    if (d.contains("node")) dev.node = static_cast<int>(integer(d["node"], path + ".node"));
    if (d.contains("model")) dev.model = string(d["model"], path + ".model");
    if (d.contains("pci_bus_id")) dev.pci_bus_id = string(d["pci_bus_id"], path + ".pci_bus_id");
    if (d.contains("numa")) dev.numa = static_cast<int>(integer(d["numa"], path + ".numa"));
    if (dev.kind == DeviceKind::Gpu) {
      dev.gpu_index = d.contains("gpu_index")
                          ? static_cast<int>(integer(d["gpu_index"], path + ".gpu_index"))
                          : next_gpu_index;
      next_gpu_index = std::max(next_gpu_index, dev.gpu_index + 1);
    } else if (d.contains("gpu_index")) {
      fail(path + ".gpu_index", "only a gpu has a gpu_index");
    }
    try {
      topo.addDevice(std::move(dev));
    } catch (const Error& e) {
      fail(path, e.what());
    }
  }

  void readLink(Topology& topo, const json& l, const std::string& path) {
    if (!l.is_object()) fail(path, "expected an object");
    onlyKnownFields(l, kLinkFields, path);
    std::string from = string(required(l, "from", path), path + ".from");
    std::string to = string(required(l, "to", path), path + ".to");
    auto u = topo.find(from);
    if (!u) fail(path + ".from", "no device has id '" + from + "' (a dangling link)");
    auto v = topo.find(to);
    if (!v) fail(path + ".to", "no device has id '" + to + "' (a dangling link)");

    Link link;
    bool have_generation = l.contains("generation");
    if (have_generation) {
      link.generation = string(l["generation"], path + ".generation");
      if (table_.contains(link.generation)) {
        const LinkGeneration& g = table_.get(link.generation);
        link.kind = g.kind;
        link.gbps = g.gbps;
        link.latency_us = g.latency_us;
        link.source = g.overridden ? LinkSource::Override : LinkSource::Table;
      } else if (!l.contains("gbps") || !l.contains("kind")) {
        fail(path + ".generation",
             "unknown generation '" + link.generation +
                 "': give \"kind\" and \"gbps\" explicitly, or use a known one (blink-topo links)");
      }
    }
    if (l.contains("kind")) {
      std::string kind = string(l["kind"], path + ".kind");
      auto parsed = parseLinkKind(kind);
      if (!parsed) {
        fail(path + ".kind",
             "unknown link kind '" + kind + "' (expected one of: " + allLinkKindNames() + ")");
      }
      link.kind = *parsed;
    } else if (!have_generation) {
      fail(path, "missing required field 'kind' (or a known 'generation')");
    }
    if (l.contains("gbps")) {
      link.gbps = number(l["gbps"], path + ".gbps");
      link.source = LinkSource::File;
    } else if (!have_generation) {
      fail(path, "missing required field 'gbps' (or a known 'generation')");
    }
    if (!(link.gbps >= kMinLaneGbps && link.gbps <= kMaxLaneGbps)) {
      std::ostringstream got;
      got << link.gbps;
      fail(path + ".gbps",
           "bandwidth must be positive and within 0.001..10000 GB/s per lane and direction, got " +
               got.str());
    }
    if (l.contains("multiplicity")) {
      long long m = integer(l["multiplicity"], path + ".multiplicity");
      if (m < 1 || m > kMaxLanes) {
        fail(path + ".multiplicity", "expected 1..1024 lanes, got " + std::to_string(m));
      }
      link.multiplicity = static_cast<int>(m);
    }
    if (l.contains("latency_us")) {
      link.latency_us = number(l["latency_us"], path + ".latency_us");
      if (link.latency_us < 0.0) fail(path + ".latency_us", "latency must not be negative");
    }
    if (l.contains("source")) {
      // What the file says about the speed it gives (a round trip keeps "table", "sysfs").
      std::string source = string(l["source"], path + ".source");
      auto parsed = parseLinkSource(source);
      if (!parsed) {
        fail(path + ".source", "unknown link source '" + source +
                                   "' (expected one of: table, sysfs, measured, "
                                   "BLINK_LINK_GBPS, file)");
      }
      link.source = *parsed;
    }
    bool duplex = l.contains("duplex") && boolean(l["duplex"], path + ".duplex");
    try {
      topo.addLink(*u, *v, link);
      if (duplex) topo.addLink(*v, *u, link);
    } catch (const Error& e) {
      fail(path, e.what());
    }
  }

  std::string origin_;
  const LinkTable& table_;
};

std::string lineAndColumn(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

std::string toJson(const Topology& topology) {
  json doc;
  doc["format"] = "blink-topology";
  doc["version"] = kTopologyFormatVersion;
  doc["name"] = topology.name();
  json devices = json::array();
  for (Vertex v : boost::make_iterator_range(boost::vertices(topology.graph()))) {
    const Device& d = topology.device(v);
    json j;
    j["id"] = d.id;
    j["kind"] = std::string(toString(d.kind));
    j["node"] = d.node;
    if (d.kind == DeviceKind::Gpu) j["gpu_index"] = d.gpu_index;
    if (!d.model.empty()) j["model"] = d.model;
    if (!d.pci_bus_id.empty()) j["pci_bus_id"] = d.pci_bus_id;
    if (d.numa >= 0) j["numa"] = d.numa;
    devices.push_back(std::move(j));
  }
  doc["devices"] = std::move(devices);

  json links = json::array();
  std::set<Edge> written;
  for (Edge e : topology.links()) {
    if (written.contains(e)) continue;
    const Link& link = topology.link(e);
    Vertex u = topology.source(e), v = topology.target(e);
    bool duplex = false;
    for (Edge back : topology.linksBetween(v, u)) {
      if (!written.contains(back) && topology.link(back) == link) {
        duplex = true;
        written.insert(back);
        break;
      }
    }
    written.insert(e);
    json j;
    j["from"] = topology.device(u).id;
    j["to"] = topology.device(v).id;
    j["kind"] = std::string(toString(link.kind));
    j["gbps"] = link.gbps;
    j["multiplicity"] = link.multiplicity;
    j["latency_us"] = link.latency_us;
    if (!link.generation.empty()) j["generation"] = link.generation;
    j["source"] = std::string(toString(link.source));
    if (duplex) j["duplex"] = true;
    links.push_back(std::move(j));
  }
  doc["links"] = std::move(links);
  return doc.dump(2) + "\n";
}

Topology fromJson(std::string_view text, const std::string& origin, const LinkTable& table) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line L, column C: ".
    auto colon = what.find(": ");
    std::string reason = colon == std::string::npos ? what : what.substr(colon + 2);
    throw Error(blinkInvalidInput, origin + ": " +
                                       lineAndColumn(text, e.byte == 0 ? 0 : e.byte - 1) +
                                       ": not valid JSON (" + reason + ")");
  } catch (const json::exception& e) {
    // Text that parses but cannot be held, e.g. a number beyond a double's range
    // ("[json.exception.out_of_range.406] number overflow parsing '1e400'").
    std::string what = e.what();
    auto bracket = what.find("] ");
    throw Error(blinkInvalidInput,
                origin + ": not valid JSON (" +
                    (bracket == std::string::npos ? what : what.substr(bracket + 2)) + ")");
  }
  return Reader(origin, table).read(doc);
}

Topology readJsonFile(const std::string& path, const LinkTable& table) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(blinkInvalidInput, path + ": cannot open the topology file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return fromJson(buffer.str(), path, table);
}

}  // namespace blink::topo
