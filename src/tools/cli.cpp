#include "tools/cli.hpp"

#include <iostream>

#include "common/error.hpp"

namespace blink::cli {

Args::Args(std::string tool, int argc, char** argv, std::set<std::string> with_value,
           std::set<std::string> flags)
    : tool_(std::move(tool)) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0) {
      // "-" alone names standard input; any other single-dash word is a mistake.
      if (arg.size() > 1 && arg[0] == '-') throw UsageError{"unknown option '" + arg + "'"};
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    if (with_value.contains(name)) {
      if (inline_value) {
        values_[name] = *inline_value;
      } else if (i + 1 < argc) {
        values_[name] = argv[++i];
      } else {
        throw UsageError{"option " + name + " needs a value"};
      }
    } else if (flags.contains(name)) {
      if (inline_value) throw UsageError{"option " + name + " takes no value"};
      flags_.insert(name);
    } else {
      throw UsageError{"unknown option '" + name + "'"};
    }
  }
}

bool Args::has(const std::string& name) const {
  return flags_.contains(name) || values_.contains(name);
}

std::optional<std::string> Args::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::valueOr(const std::string& name, const std::string& fallback) const {
  return value(name).value_or(fallback);
}

int runTool(const std::string& tool, int argc, char** argv, std::set<std::string> with_value,
            std::set<std::string> flags, const std::function<int(const Args&)>& body) {
  try {
    Args args(tool, argc, argv, std::move(with_value), std::move(flags));
    return body(args);
  } catch (const UsageError& e) {
    std::cerr << tool << ": " << e.message << " (see --help)\n";
    return kUsage;
  } catch (const Error& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return kFailure;
  } catch (const std::exception& e) {
    // A bug, not bad input (inputs are rejected with blink::Error): still a message
    // and an exit code, never an abort.
    std::cerr << tool << ": internal error (please report it): " << e.what() << "\n";
    return kFailure;
  }
}

}  // namespace blink::cli
