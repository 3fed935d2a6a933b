#include "engine/xml_text.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace xlate {
namespace {

// No network, no external DTD, entities kept as references (never expanded: no billion laughs).
constexpr int kParseOptions = XML_PARSE_NONET | XML_PARSE_NOWARNING;

struct DocumentDeleter {
  void operator()(xmlDoc* document) const { xmlFreeDoc(document); }
};
using Document = std::unique_ptr<xmlDoc, DocumentDeleter>;

absl::StatusOr<Document> parse(const std::string& source) {
  if (source.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError("an XML text over 2 GiB");
  }
  // The first error is the one to report: libxml2 goes on and reports what follows from it
  // ("Premature end of data" after a mismatched tag). The handler is the calling thread's.
  struct FirstError {
    bool seen = false;
    int line = 0, column = 0;
    std::string message;
  } first;
  xmlSetStructuredErrorFunc(&first, [](void* context, xmlErrorPtr error) {
    auto* first = static_cast<FirstError*>(context);
    if (first->seen || error == nullptr || error->level < XML_ERR_ERROR) return;
    first->seen = true;
    first->line = error->line;
    first->column = error->int2;
    first->message = error->message ? error->message : "malformed";
  });
  Document document(xmlReadMemory(source.data(), static_cast<int>(source.size()), nullptr,
                                  "UTF-8", kParseOptions));
  xmlSetStructuredErrorFunc(nullptr, nullptr);
  if (first.seen || document == nullptr || xmlDocGetRootElement(document.get()) == nullptr) {
    if (!first.seen) return absl::InvalidArgumentError("not an XML document (no element)");
    absl::StripTrailingAsciiWhitespace(&first.message);
    return absl::InvalidArgumentError(absl::StrCat("not well-formed XML at line ", first.line,
                                                    " column ", first.column, ": ",
                                                    first.message));
  }
  return document;
}

bool keeps_its_text(const xmlNode* element) {
  for (const xmlAttr* attribute = element->properties; attribute; attribute = attribute->next) {
    if (xmlStrcmp(attribute->name, BAD_CAST "translate") != 0) continue;
    xmlChar* value = xmlNodeGetContent(reinterpret_cast<const xmlNode*>(attribute));
    const bool no = value != nullptr && absl::EqualsIgnoreCase(reinterpret_cast<char*>(value), "no");
    xmlFree(value);
    if (no) return true;
  }
  return false;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Calls visit(node, leading, text, trailing) for each translatable text node in document order:
// its content split into whitespace, words, whitespace.
void for_each_text(xmlNode* node,
                   const std::function<void(xmlNode*, const std::string&)>& visit) {
  for (xmlNode* child = node->children; child; child = child->next) {
    if (child->type == XML_ELEMENT_NODE) {
      if (!keeps_its_text(child)) for_each_text(child, visit);
    } else if (child->type == XML_TEXT_NODE && child->content != nullptr) {
      visit(child, reinterpret_cast<const char*>(child->content));
    }
  }
}

// Where a text node's content starts and ends without its surrounding white space.
struct Span {
  size_t begin, end;
};
Span trimmed(const std::string& content) {
  size_t begin = 0, end = content.size();
  while (begin < end && is_space(content[begin])) ++begin;
  while (end > begin && is_space(content[end - 1])) --end;
  return {begin, end};
}

}  // namespace

absl::StatusOr<XmlText> XmlText::Parse(std::string source) {
  absl::StatusOr<Document> document = parse(source);
  if (!document.ok()) return document.status();
  XmlText xml;
  xml.source_ = std::move(source);
  for_each_text(reinterpret_cast<xmlNode*>(document->get()), [&](xmlNode*, const std::string& content) {
    const Span words = trimmed(content);
    if (words.begin < words.end) xml.texts_.push_back(content.substr(words.begin, words.end - words.begin));
  });
  return xml;
}

std::string XmlText::Rebuild(const std::vector<std::string>& translations,
                             const std::vector<WordLinks>& /*links*/) const {
  if (translations.size() != texts_.size()) {
    throw std::logic_error("XmlText::Rebuild: one translation per text");
  }
  absl::StatusOr<Document> document = parse(source_);  // parsed once already
  if (!document.ok()) throw std::logic_error("XmlText::Rebuild: the source no longer parses");
  size_t next = 0;
  for_each_text(reinterpret_cast<xmlNode*>(document->get()),
                [&](xmlNode* node, const std::string& content) {
                  const Span words = trimmed(content);
                  if (words.begin == words.end) return;
                  const std::string replaced = content.substr(0, words.begin) +
                                               translations[next++] + content.substr(words.end);
                  // A text node's content is raw text; the serialiser escapes it.
                  xmlNodeSetContentLen(node, nullptr, 0);
                  xmlNodeAddContentLen(node, BAD_CAST replaced.data(),
                                       static_cast<int>(replaced.size()));
                });
  xmlChar* bytes = nullptr;
  int size = 0;
  xmlDocDumpMemoryEnc(document->get(), &bytes, &size, "UTF-8");
  std::string out(reinterpret_cast<char*>(bytes), static_cast<size_t>(size));
  xmlFree(bytes);
  if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(source_), "<?xml")) {
    // libxml2 always writes a declaration; a source without one gets none back.
    const size_t end = out.find("?>");
    if (absl::StartsWith(out, "<?xml") && end != std::string::npos) {
      out.erase(0, end + 2);
      if (!out.empty() && out[0] == '\n') out.erase(0, 1);
    }
  }
  // The serialiser ends the document with a newline; the source's own ending is kept.
  if (!absl::EndsWith(source_, "\n") && absl::EndsWith(out, "\n")) out.pop_back();
  return out;
}

}  // namespace xlate
