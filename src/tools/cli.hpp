// A tiny command-line parser shared by the blink-* tools: "--name value",
// "--name=value" and flags, with errors that name the tool and the option.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace blink::cli {

// Exit codes shared by every tool (documented in each --help).
enum ExitCode : int {
  kOk = 0,
  kFailure = 1,  // the request was valid but failed (e.g. a topology file that does not load)
  kUsage = 2,    // bad command line
};

class Args {
 public:
  // `with_value` lists the options that take a value; `flags` those that do not.
  Args(std::string tool, int argc, char** argv, std::set<std::string> with_value,
       std::set<std::string> flags);

  bool has(const std::string& name) const;
  std::optional<std::string> value(const std::string& name) const;
  std::string valueOr(const std::string& name, const std::string& fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const std::string& tool() const { return tool_; }

 private:
  std::string tool_;
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

// Thrown for a bad command line; tools print "tool: message" and exit kUsage.
struct UsageError {
  std::string message;
};

// "TOOL: " and the build's one-line description (blinkGetBuildInfo) on stdout: what
// --version prints in every tool.
void printVersion(const std::string& tool);

// A size in bytes: a number, possibly with a fraction, and an optional unit K, M, G
// or T (x1024 each, also as KiB.., k, or B for bytes): "4096", "64K", "1.5G". The
// result is rounded down to whole bytes; UsageError naming `option` otherwise.
std::uint64_t parseByteSize(const std::string& text, const std::string& option);

// A tool's whole main: parses the command line, runs `body`, and turns a
// UsageError into "tool: message (see --help)" and kUsage, a blink::Error into
// "tool: message" and kFailure. Every blink-* tool reports errors the same way.
// --version (accepted by every tool) prints printVersion and returns kOk.
int runTool(const std::string& tool, int argc, char** argv, std::set<std::string> with_value,
            std::set<std::string> flags, const std::function<int(const Args&)>& body);

}  // namespace blink::cli
