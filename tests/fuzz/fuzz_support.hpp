// What the fuzz targets call a finding, in one place. A reader may reject any input,
// but only with a blink::Error of status blinkInvalidInput whose message names the
// input; anything else (another exception type, a crash, a sanitizer report, a
// hang) is a bug. What a reader accepts must also be a topology Blink can write and
// read back unchanged, and what the planner builds on it must be a correct plan.
//
// The same sources build two ways: with libFuzzer (tests/fuzz/libfuzzer/, clang,
// run_fuzz.sh) to search, and with replay_main.cpp in the normal build to replay the
// seed corpus and the regression files in the test suite.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "topology/link_table.hpp"
#include "topology/topology.hpp"
#include "topology/topology_json.hpp"

namespace blink::fuzz {

// Reported on stderr, then abort(): libFuzzer saves the input as a crash artifact,
// the replay test fails.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline const topo::LinkTable& linkTable() {
  static const topo::LinkTable table = topo::LinkTable::builtin();
  return table;
}

inline std::string_view asText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The topology `read` returns, or nullopt when it rejects the input cleanly: with a
// blink::Error(blinkInvalidInput) whose message names `origin`, so that a user with
// several files knows which one is wrong. Other exceptions propagate (libFuzzer
// reports them as crashes).
template <typename Read>
std::optional<topo::Topology> readOrReject(Read&& read, const std::string& origin) {
  try {
    return read();
  } catch (const Error& e) {
    const std::string message = e.what();
    if (e.status() != blinkInvalidInput) {
      finding("a reader failed with status " + std::to_string(e.status()) +
              " instead of blinkInvalidInput: " + message);
    }
    if (message.find(origin) == std::string::npos) {
      finding("a rejection that does not name the input '" + origin + "': " + message);
    }
    return std::nullopt;
  }
}

// The topology as JSON for a finding's message, or why it cannot be written.
inline std::string describe(const topo::Topology& topology) {
  try {
    return topo::toJson(topology);
  } catch (const std::exception& e) {
    return std::string("(toJson failed: ") + e.what() + ")";
  }
}

// A topology a reader accepted is one Blink can export and import again: toJson's
// text is read back to the same graph and written again to the same text (what the
// README promises of `blink-topo export`).
inline void checkJsonRoundTrip(const topo::Topology& topology) {
  std::string text;
  std::optional<topo::Topology> back;
  try {
    text = topo::toJson(topology);
  } catch (const std::exception& e) {
    finding(std::string("toJson cannot write a topology a reader accepted: ") + e.what());
  }
  try {
    back = topo::fromJson(text, "round-trip.json", linkTable());
  } catch (const Error& e) {
    finding(std::string("toJson wrote a file that fromJson rejects: ") + e.what() + "\n" + text);
  }
  if (!topology.sameAs(*back)) finding("the JSON round trip changed the graph:\n" + text);
  if (topo::toJson(*back) != text) finding("toJson is not stable across a round trip:\n" + text);
}

}  // namespace blink::fuzz
