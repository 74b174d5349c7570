// The file format: lossless round trips, short hand-written files, and one clear
// error for each kind of malformed input.
#include <gtest/gtest.h>

#include <fstream>

#include "common/error.hpp"
#include "topology/topology_json.hpp"
#include "topology/zoo.hpp"

namespace {

using namespace blink::topo;

const LinkTable kTable = LinkTable::builtin();

// The message of the error that parsing `text` throws ("" if it parses).
std::string errorOf(const std::string& text) {
  try {
    fromJson(text, "test.json", kTable);
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), blinkInvalidInput);
    return e.what();
  }
  return "";
}

TEST(TopologyJson, EveryZooMachineRoundTripsLosslessly) {
  for (const char* name :
       {"dgx1-p100", "dgx1-v100", "dgx2", "dgx-a100", "hgx-h100", "pcie-8gpu", "dgx1-v100:3"}) {
    Topology t = makeZooTopology(name, kTable);
    std::string text = toJson(t);
    Topology back = fromJson(text, "roundtrip", kTable);
    EXPECT_TRUE(t.sameAs(back)) << name;
    EXPECT_EQ(back.name(), t.name());
    EXPECT_EQ(toJson(back), text) << name;  // stable output
  }
}

TEST(TopologyJson, AllocationViewsAndAsymmetricLinksRoundTrip) {
  Topology t = makeZooTopology("dgx1-v100", kTable).restrictToGpus({0, 1, 2, 4});
  // An asymmetric link must not be folded into a duplex entry.
  Vertex a = *t.findGpu(0), b = *t.findGpu(4);
  Topology asym("asym");
  Device g0 = t.device(a), g4 = t.device(b);
  Vertex x = asym.addDevice(g0), y = asym.addDevice(g4);
  asym.addLink(x, y, kTable.makeLink("nvlink2", 2));
  asym.addLink(y, x, kTable.makeLink("nvlink2", 1));
  for (const Topology* topo : {&t, &asym}) {
    Topology back = fromJson(toJson(*topo), "roundtrip", kTable);
    EXPECT_TRUE(topo->sameAs(back)) << topo->name();
  }
  EXPECT_EQ(toJson(asym).find("\"duplex\""), std::string::npos);
}

TEST(TopologyJson, HandWrittenFileWithGenerations) {
  const std::string text = R"({
    "format": "blink-topology", "version": 1, "name": "two-gpus",
    "devices": [
      {"id": "gpu0", "kind": "gpu"},
      {"id": "gpu1", "kind": "gpu"},
      {"id": "cpu0", "kind": "cpu", "numa": 0}
    ],
    "links": [
      {"from": "gpu0", "to": "gpu1", "generation": "nvlink2", "multiplicity": 2, "duplex": true},
      {"from": "gpu0", "to": "cpu0", "generation": "pcie3x16", "duplex": true},
      {"from": "gpu1", "to": "cpu0", "kind": "pcie", "gbps": 12, "duplex": true}
    ]
  })";
  Topology t = fromJson(text, "two.json", kTable);
  EXPECT_EQ(t.name(), "two-gpus");
  ASSERT_EQ(t.gpus().size(), 2u);
  EXPECT_EQ(t.device(*t.findGpu(1)).id, "gpu1");  // gpu_index defaults to order
  EXPECT_EQ(t.numLinks(), 6u);
  auto nv = t.linksBetween(*t.findGpu(1), *t.findGpu(0));
  ASSERT_EQ(nv.size(), 1u);
  EXPECT_DOUBLE_EQ(t.link(nv[0]).capacity(), 50.0);
  EXPECT_DOUBLE_EQ(t.link(nv[0]).latency_us, kTable.get("nvlink2").latency_us);
  auto pcie = t.linksBetween(*t.findGpu(1), *t.find("cpu0"));
  EXPECT_DOUBLE_EQ(t.link(pcie[0]).gbps, 12.0);
}

TEST(TopologyJson, TruncatedFileNamesFileAndLine) {
  std::string text = toJson(makeZooTopology("dgx1-v100", kTable));
  std::string err = errorOf(text.substr(0, text.size() / 2));
  EXPECT_NE(err.find("test.json: line "), std::string::npos) << err;
  EXPECT_NE(err.find("not valid JSON"), std::string::npos) << err;
  EXPECT_NE(errorOf("").find("line 1"), std::string::npos);
}

const std::string kHead = R"({"format": "blink-topology", "version": 1, "devices": [)";

TEST(TopologyJson, UnknownDeviceKind) {
  std::string err = errorOf(kHead + R"({"id": "t0", "kind": "tpu"}]})");
  EXPECT_NE(err.find("devices[0].kind"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown device kind 'tpu'"), std::string::npos) << err;
  EXPECT_NE(err.find("gpu, cpu"), std::string::npos) << err;
}

TEST(TopologyJson, NegativeBandwidth) {
  std::string err = errorOf(kHead + R"({"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"}],
      "links": [{"from": "a", "to": "b", "kind": "nvlink", "gbps": -25}]})");
  EXPECT_NE(err.find("links[0].gbps"), std::string::npos) << err;
  EXPECT_NE(err.find("must be positive"), std::string::npos) << err;
}

TEST(TopologyJson, AbsurdBandwidthsNameTheFileAndTheField) {
  for (const char* gbps : {"100000", "0.0001", "1e300"}) {
    std::string err = errorOf(kHead + R"({"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"}],
      "links": [{"from": "a", "to": "b", "kind": "nvlink", "gbps": )" +
                              gbps + "}]}");
    EXPECT_EQ(err.rfind("test.json: links[0].gbps: ", 0), 0u) << err;
    EXPECT_NE(err.find("0.001..10000 GB/s"), std::string::npos) << err;
  }
}

TEST(TopologyJson, AbsurdLaneCountsNameTheFileAndTheField) {
  for (const char* lanes : {"0", "-3", "1025", "1000000"}) {
    std::string err = errorOf(kHead + R"({"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"}],
      "links": [{"from": "a", "to": "b", "kind": "nvlink", "gbps": 25, "multiplicity": )" +
                              lanes + "}]}");
    EXPECT_EQ(err.rfind("test.json: links[0].multiplicity: ", 0), 0u) << err;
    EXPECT_NE(err.find("expected 1..1024 lanes, got " + std::string(lanes)), std::string::npos)
        << err;
  }
}

TEST(TopologyJson, DanglingLink) {
  std::string err = errorOf(kHead + R"({"id": "a", "kind": "gpu"}],
      "links": [{"from": "a", "to": "gpu9", "generation": "nvlink2"}]})");
  EXPECT_NE(err.find("links[0].to"), std::string::npos) << err;
  EXPECT_NE(err.find("no device has id 'gpu9' (a dangling link)"), std::string::npos) << err;
}

TEST(TopologyJson, DuplicateId) {
  std::string err = errorOf(kHead + R"({"id": "a", "kind": "gpu"}, {"id": "a", "kind": "cpu"}]})");
  EXPECT_NE(err.find("devices[1]"), std::string::npos) << err;
  EXPECT_NE(err.find("duplicate device id 'a'"), std::string::npos) << err;
}

TEST(TopologyJson, OtherContentErrors) {
  EXPECT_NE(errorOf(R"({"format": "nccl", "version": 1, "devices": []})").find("format"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"format": "blink-topology", "version": 7, "devices": []})")
                .find("this Blink reads version 1"),
            std::string::npos);
  EXPECT_NE(errorOf(kHead + R"({"id": "a", "kind": "gpu", "bandwith": 3}]})")
                .find("unknown field 'bandwith'"),
            std::string::npos);
  EXPECT_NE(errorOf(kHead + R"({"kind": "gpu"}]})").find("missing required field 'id'"),
            std::string::npos);
  EXPECT_NE(errorOf(kHead + R"({"id": "a", "kind": "gpu", "node": "zero"}]})")
                .find("devices[0].node: expected an integer"),
            std::string::npos);
  EXPECT_NE(errorOf(kHead + R"({"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"}],
      "links": [{"from": "a", "to": "b", "generation": "warp-drive"}]})")
                .find("unknown generation 'warp-drive'"),
            std::string::npos);
  EXPECT_NE(errorOf(kHead + R"({"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"}],
      "links": [{"from": "a", "to": "b", "generation": "nvlink2", "duplex": true},
                {"from": "b", "to": "a", "generation": "nvlink2"}]})")
                .find("links[1]"),
            std::string::npos);
  EXPECT_NE(errorOf("[1, 2]").find("expected an object"), std::string::npos);
}

TEST(TopologyJson, MissingFileIsAClearError) {
  try {
    readJsonFile("/nonexistent/topo.json", kTable);
    FAIL();
  } catch (const blink::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/topo.json"), std::string::npos);
  }
}

}  // namespace
