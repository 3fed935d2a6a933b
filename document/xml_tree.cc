#include "document/xml_tree.h"

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace xlate {
namespace {

// No network, no external DTD, entities kept as references (never expanded: no billion laughs).
constexpr int kParseOptions = XML_PARSE_NONET | XML_PARSE_NOWARNING;

}  // namespace

absl::StatusOr<XmlTree> parse_xml(const std::string& source) {
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
  XmlTree document(xmlReadMemory(source.data(), static_cast<int>(source.size()), nullptr,
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

std::string serialize_xml(const XmlTree& tree) {
  xmlChar* bytes = nullptr;
  int size = 0;
  xmlDocDumpMemoryEnc(tree.get(), &bytes, &size, "UTF-8");
  std::string out(reinterpret_cast<char*>(bytes), static_cast<size_t>(size));
  xmlFree(bytes);
  return out;
}

std::vector<xmlNode*> elements_in_order(xmlDoc* document,
                                        const std::function<bool(const xmlNode*)>& wanted) {
  std::vector<xmlNode*> found;
  xmlNode* node = xmlDocGetRootElement(document);
  while (node != nullptr) {
    if (node->type == XML_ELEMENT_NODE && wanted(node)) found.push_back(node);
    if (node->children != nullptr && node->type == XML_ELEMENT_NODE) {
      node = node->children;
      continue;
    }
    while (node != nullptr && node->next == nullptr) {
      node = node->parent;
      if (node != nullptr && node->type == XML_DOCUMENT_NODE) node = nullptr;
    }
    if (node != nullptr) node = node->next;
  }
  return found;
}

void replace_children(xmlNode* element, xmlNode* holder,
                      const std::function<bool(const xmlNode*)>& keep) {
  for (xmlNode* child = element->children; child != nullptr;) {
    xmlNode* next = child->next;
    if (!keep(child)) {
      xmlUnlinkNode(child);
      xmlFreeNode(child);
    }
    child = next;
  }
  for (xmlNode* child = holder->children; child != nullptr;) {
    xmlNode* next = child->next;
    xmlUnlinkNode(child);
    xmlAddChild(element, child);
    child = next;
  }
  xmlFreeNode(holder);
  // A copy made outside the tree declares the namespaces it uses; the element's ancestors
  // declare them already. libxml2's option to remove such redundant declarations
  // (XML_DOM_RECONNS_REMOVEREDUND) is 1; its enum is not in the headers.
  constexpr int kRemoveRedundantDeclarations = 1;
  xmlDOMWrapReconcileNamespaces(nullptr, element, kRemoveRedundantDeclarations);
}

void strip_trailing_spaces(xmlNode* text) {
  xmlChar* content = xmlNodeGetContent(text);
  std::string kept(content != nullptr ? reinterpret_cast<const char*>(content) : "");
  xmlFree(content);
  kept.erase(kept.find_last_not_of(' ') + 1);
  xmlNodeSetContentLen(text, BAD_CAST kept.data(), static_cast<int>(kept.size()));
}

}  // namespace xlate
