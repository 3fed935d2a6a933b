// An XML document as libxml2's tree, parsed safely and written back: the one place the document
// floor's XML formats (document/xml_text.h, document/office_text.h, document/open_document_text.h,
// document/epub_text.h) read and write XML.
#pragma once

#include <libxml/tree.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace xlate {

struct XmlTreeDeleter {
  void operator()(xmlDoc* document) const { xmlFreeDoc(document); }
};
using XmlTree = std::unique_ptr<xmlDoc, XmlTreeDeleter>;

// `source` parsed with no network, no external DTD and entities kept as references (never
// expanded: no billion laughs), within libxml2's default bounds (depth 256, 10 MB text nodes).
// INVALID_ARGUMENT naming the line, column and libxml2's reason for the first error of a text
// that is not well-formed, or saying that it holds no element.
absl::StatusOr<XmlTree> parse_xml(const std::string& source);

// The document as UTF-8, with the XML declaration libxml2 writes (standalone kept).
std::string serialize_xml(const XmlTree& tree);

// The elements of `document` that `wanted` picks, in document order (an element before the
// elements inside it). Iterative: a tree's depth is libxml2's to bound, not the stack's.
std::vector<xmlNode*> elements_in_order(xmlDoc* document,
                                        const std::function<bool(const xmlNode*)>& wanted);

// Gives `element` the children built in `holder` (a detached element of the same document,
// built while the old children were still in the tree, where copies find their attributes'
// namespaces) in place of its own, but for those `keep` picks, which stay first; frees `holder`
// and the old children, and drops the namespace declarations the copies repeat.
void replace_children(xmlNode* element, xmlNode* holder,
                      const std::function<bool(const xmlNode*)>& keep);

// Takes the spaces off the end of a text node (before a tab or break that stands for them).
void strip_trailing_spaces(xmlNode* text);

}  // namespace xlate
