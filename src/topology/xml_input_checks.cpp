#include "topology/xml_input_checks.hpp"

#include <string>

namespace blink::topo {

// The offset of the first byte that does not belong to well-formed UTF-8, or npos.
// Every name the file gives ends up in the topology, which Blink writes as JSON (the
// tree cache's key, blink-topo export), and JSON holds UTF-8 only.
std::size_t firstInvalidUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = lead < 0x80           ? 1
                         : (lead >> 5) == 0x6  ? 2
                         : (lead >> 4) == 0xe  ? 3
                         : (lead >> 3) == 0x1e ? 4
                                               : 0;
    if (length == 0 || i + length > text.size()) return i;
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return i;
    }
    // Well-formed means RFC 3629 too: no overlong forms (C0, C1; E0 below A0; F0 below
    // 90), no surrogates (ED above 9F), nothing beyond U+10FFFF (F4 above 8F, F5..).
    const auto second = length > 1 ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (lead == 0xc0 || lead == 0xc1 || lead > 0xf4 || (lead == 0xe0 && second < 0xa0) ||
        (lead == 0xed && second > 0x9f) || (lead == 0xf0 && second < 0x90) ||
        (lead == 0xf4 && second > 0x8f)) {
      return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

// Boost's XML parser (rapidxml) and the ptree it builds recurse once per nested
// element: tens of thousands of them overflow the stack (about 24000 in an 8 MiB
// one), a crash instead of an error. NCCL's files nest fewer than ten deep.

// The offset of the first element nested deeper than kMaxXmlDepth, or npos. Skips
// what may hold '<' or '>' without being a tag: quoted attribute values, comments,
// CDATA, processing instructions and declarations.
std::size_t firstTooDeep(std::string_view xml) {
  int depth = 0;
  std::size_t i = 0;
  auto skipPast = [&](std::string_view end) {
    const std::size_t found = xml.find(end, i);
    i = found == std::string_view::npos ? xml.size() : found + end.size();
  };
  while ((i = xml.find('<', i)) != std::string_view::npos) {
    const std::string_view rest = xml.substr(i);
    if (rest.starts_with("<!--")) {
      skipPast("-->");
    } else if (rest.starts_with("<![CDATA[")) {
      skipPast("]]>");
    } else if (rest.starts_with("<?")) {
      skipPast("?>");
    } else if (rest.starts_with("<!")) {
      skipPast(">");
    } else if (rest.starts_with("</")) {
      --depth;
      skipPast(">");
    } else {
      const std::size_t start = i;
      char quote = 0;
      for (++i; i < xml.size() && (quote != 0 || xml[i] != '>'); ++i) {
        if (quote == 0 && (xml[i] == '"' || xml[i] == '\'')) {
          quote = xml[i];
        } else if (xml[i] == quote) {
          quote = 0;
        }
      }
      const bool self_closing = i < xml.size() && xml[i - 1] == '/';
      if (!self_closing && ++depth > kMaxXmlDepth) return start;
      ++i;
    }
  }
  return std::string_view::npos;
}

}  // namespace blink::topo
