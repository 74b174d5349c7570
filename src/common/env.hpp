// The BLINK_* environment variables: one registry, validated at start-up, from
// which the README's configuration table is generated (blink-info --env-markdown).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blink::env {

enum class Kind {
  Choice,   // one of the '|'-separated words in `domain`, case-insensitive
  Integer,  // a decimal integer within "lo..hi" given in `domain`
  IntList,  // comma-separated non-negative integers, e.g. "0,1,2,4"
  Text,     // free text, checked where it is used (e.g. a topology name or file)
};

struct Variable {
  std::string_view name;
  Kind kind;
  std::string_view domain;         // see Kind
  std::string_view default_value;  // "" means unset
  std::string_view description;
};

// Every variable Blink reads, in README order.
const std::vector<Variable>& registry();

// The raw value of a registered variable, or nullopt if unset or empty.
// Throws blink::Error(blinkInternalError) for a name missing from the registry,
// so that every variable read is documented.
std::optional<std::string> get(std::string_view name);

// Parses a registered Integer variable; returns its default when unset. Throws
// blinkInvalidInput naming the variable, the value and the range otherwise.
long long getInt(std::string_view name);

// Parses a registered IntList variable; empty when unset.
std::vector<int> getIntList(std::string_view name);

// Parses a registered Choice variable to its upper-case word (the default when unset).
std::string getChoice(std::string_view name);

// Checks that `value` is valid for `var`; throws blinkInvalidInput otherwise.
void validate(const Variable& var, std::string_view value);

// Checks every registered variable that is set and warns about BLINK_* names that
// are not registered (a typo would otherwise be silently ignored). Throws
// blinkInvalidInput on the first invalid value.
void validateAll();

// The registry as a Markdown table (the README's configuration section).
std::string markdownTable();

// Parses "0,1,2,4" (also used for --gpus on the command line). Throws
// blinkInvalidInput mentioning `what` on a malformed list or a repeated entry.
std::vector<int> parseIntList(std::string_view text, std::string_view what);

// The comma-separated items of a setting's value ("a,b:c" gives "a" and "b:c"); an
// empty text gives none. The views point into `text`.
std::vector<std::string_view> splitItems(std::string_view text);

}  // namespace blink::env
