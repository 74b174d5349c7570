#include "tools/cli.hpp"

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "blink/blink.h"
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

void printVersion(const std::string& tool) {
  std::cout << tool << ": " << blinkGetBuildInfo() << "\n";
}

std::uint64_t parseByteSize(const std::string& text, const std::string& option) {
  const std::string bad = option + ": '" + text +
                          "' is not a size (a number of bytes such as 4096, 64K, 1.5G or 256MiB; "
                          "K, M, G, T are powers of 1024)";
  std::size_t digits = 0;
  bool seen_point = false, seen_digit = false;
  for (; digits < text.size(); ++digits) {
    const char ch = text[digits];
    if (ch >= '0' && ch <= '9') {
      seen_digit = true;
    } else if (ch == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!seen_digit) throw UsageError{bad};
  // Digits and one point only, so strtod cannot meet a sign, exponent or hex form.
  const double number = std::strtod(text.substr(0, digits).c_str(), nullptr);
  const std::string unit = text.substr(digits);
  double scale = 1;
  if (unit == "K" || unit == "k" || unit == "KiB") {
    scale = 0x1p10;
  } else if (unit == "M" || unit == "m" || unit == "MiB") {
    scale = 0x1p20;
  } else if (unit == "G" || unit == "g" || unit == "GiB") {
    scale = 0x1p30;
  } else if (unit == "T" || unit == "t" || unit == "TiB") {
    scale = 0x1p40;
  } else if (!unit.empty() && unit != "B") {
    throw UsageError{bad};
  }
  const double bytes = std::floor(number * scale);
  if (!(bytes < 0x1p63)) throw UsageError{option + ": '" + text + "' is too large"};
  return static_cast<std::uint64_t>(bytes);
}

int runTool(const std::string& tool, int argc, char** argv, std::set<std::string> with_value,
            std::set<std::string> flags, const std::function<int(const Args&)>& body) {
  try {
    flags.insert("--version");
    Args args(tool, argc, argv, std::move(with_value), std::move(flags));
    if (args.has("--version") && !args.has("--help")) {
      printVersion(tool);
      return kOk;
    }
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
