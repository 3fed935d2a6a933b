#include "document/xml_text.h"

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
#include "document/inline_markup.h"
#include "document/placeholder_text.h"
#include "document/xml_tree.h"

namespace xlate {
namespace {

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

bool has_words(const xmlNode* text) {
  if (text->content == nullptr) return false;
  for (const xmlChar* c = text->content; *c; ++c) {
    if (!is_space(static_cast<char>(*c))) return true;
  }
  return false;
}


// A block: an element with words in a text node of its own (mixed content), whose whole
// content is translated as one text; the elements inside it are inline.
struct Block {
  xmlNode* container = nullptr;
  std::string text;                     // white space collapsed, none at either end
  std::vector<InlineElement> elements;  // with markers for tags
  std::vector<xmlNode*> nodes;          // what element i's marker stands for
  bool translatable = false;            // words outside kept elements
};

class BlockBuilder {
 public:
  BlockBuilder(Block& block, bool keep_placeholders)
      : block_(block), keep_placeholders_(keep_placeholders) {}

  void Add(xmlNode* parent, int parent_index) {
    for (xmlNode* child = parent->children; child; child = child->next) {
      if (child->type == XML_TEXT_NODE) {
        if (child->content == nullptr) continue;
        if (has_words(child)) block_.translatable = true;
        const char* content = reinterpret_cast<const char*>(child->content);
        if (keep_placeholders_) {
          append_without_placeholders(
              content, parent_index, without_node_markers,
              [this](absl::string_view run) { Append(run); }, block_.text, block_.elements);
          block_.nodes.resize(block_.elements.size(), nullptr);
        } else {
          Append(content);
        }
      } else if (child->type == XML_ELEMENT_NODE && !keeps_its_text(child)) {
        const int index = NewElement(child, parent_index, 'o');
        block_.elements[index].close = node_marker('c');
        Add(child, index);
        block_.elements[index].span.end = block_.text.size();
      } else if (child->type == XML_ELEMENT_NODE) {
        // Kept: its text is part of the sentence, its content comes back as it was.
        const int index = NewElement(child, parent_index, 'k');
        InlineElement& kept = block_.elements[index];
        kept.kept_content = kept.open;
        kept.open.clear();
        xmlChar* content = xmlNodeGetContent(child);
        Append(content ? reinterpret_cast<const char*>(content) : "");
        xmlFree(content);
        block_.elements[index].span.end = block_.text.size();
        block_.elements[index].kept_text = std::string(absl::StripAsciiWhitespace(
            absl::string_view(block_.text).substr(block_.elements[index].span.begin)));
      } else {
        // CDATA, comments, processing instructions, entity references: kept where they stand,
        // without text of their own.
        NewElement(child, parent_index, 'k');
      }
    }
  }

  void Finish() {
    while (!block_.text.empty() && block_.text.back() == ' ') block_.text.pop_back();
    for (InlineElement& e : block_.elements) {
      e.span.begin = std::min(e.span.begin, block_.text.size());
      e.span.end = std::min(e.span.end, block_.text.size());
    }
  }

 private:
  int NewElement(xmlNode* node, int parent_index, char kind) {
    block_.nodes.push_back(node);
    return add_marked_element(block_.elements, block_.text.size(), kind, parent_index);
  }

  // Text with its white space collapsed.
  void Append(absl::string_view text) {
    for (const char c : text) {
      if (is_space(c)) {
        if (!block_.text.empty() && block_.text.back() != ' ') block_.text += ' ';
      } else {
        block_.text += c;
      }
    }
  }

  Block& block_;
  const bool keep_placeholders_;
};

// The blocks of a document, in document order. Elements without words of their own are
// walked into; kept elements outside blocks are skipped.
void for_each_block(xmlNode* node, bool keep_placeholders,
                    const std::function<void(Block&)>& visit) {
  for (xmlNode* child = node->children; child; child = child->next) {
    if (child->type != XML_ELEMENT_NODE || keeps_its_text(child)) continue;
    bool mixed = false;
    for (const xmlNode* text = child->children; text && !mixed; text = text->next) {
      mixed = text->type == XML_TEXT_NODE && has_words(text);
    }
    if (!mixed) {
      for_each_block(child, keep_placeholders, visit);
      continue;
    }
    Block block;
    block.container = child;
    BlockBuilder builder(block, keep_placeholders);
    builder.Add(child, -1);
    builder.Finish();
    // Placeholders alone (<b>%s</b>: no text once they are taken out) stay as they are.
    if (block.translatable && !block.text.empty()) visit(block);
  }
}

// The leading or trailing white space of a container's content (kept around its translation).
std::string edge_space(const xmlNode* container, bool leading) {
  const xmlNode* edge = leading ? container->children : container->last;
  if (edge == nullptr || edge->type != XML_TEXT_NODE || edge->content == nullptr) return "";
  const std::string content(reinterpret_cast<const char*>(edge->content));
  if (leading) {
    size_t end = 0;
    while (end < content.size() && is_space(content[end])) ++end;
    return content.substr(0, end);
  }
  size_t begin = content.size();
  while (begin > 0 && is_space(content[begin - 1])) --begin;
  return content.substr(begin);
}

// Replaces the container's children by the placed translation: text nodes, and copies of the
// block's nodes where its markers stand.
void replace_content(const Block& block, const std::string& placed) {
  xmlNode* container = block.container;
  const std::string leading = edge_space(container, true);
  const std::string trailing = edge_space(container, false);
  xmlNode* old_children = container->children;
  container->children = container->last = nullptr;
  for (xmlNode* c = old_children; c; c = c->next) c->parent = nullptr;
  std::vector<xmlNode*> open = {container};
  const auto add_text = [&](absl::string_view text) {
    if (text.empty()) return;
    xmlAddChild(open.back(), xmlNewDocTextLen(container->doc, BAD_CAST text.data(),
                                               static_cast<int>(text.size())));
  };
  add_text(leading);
  for_each_placed_piece(placed, add_text, [&](char kind, size_t node) {
    if (kind == 'c') {
      if (open.size() > 1) open.pop_back();
      return;
    }
    xmlNode* copy = xmlDocCopyNode(block.nodes[node], container->doc, kind == 'o' ? 2 : 1);
    xmlAddChild(open.back(), copy);
    if (kind == 'o') open.push_back(copy);
  });
  add_text(trailing);
  xmlFreeNodeList(old_children);
}

}  // namespace

absl::StatusOr<XmlText> XmlText::Parse(std::string source, bool keep_placeholders) {
  absl::StatusOr<XmlTree> document = parse_xml(source);
  if (!document.ok()) return document.status();
  XmlText xml;
  xml.source_ = std::move(source);
  xml.keep_placeholders_ = keep_placeholders;
  for_each_block(reinterpret_cast<xmlNode*>(document->get()), keep_placeholders, [&](Block& block) {
    xml.texts_.push_back(std::move(block.text));
    xml.needs_word_links_ = xml.needs_word_links_ || !block.elements.empty();
  });
  return xml;
}

std::string XmlText::Rebuild(const std::vector<std::string>& translations,
                             const std::vector<WordLinks>& links) const {
  CheckRebuild("XmlText", translations, links);
  absl::StatusOr<XmlTree> document = parse_xml(source_);  // parsed once already
  if (!document.ok()) throw std::logic_error("XmlText::Rebuild: the source no longer parses");
  // The blocks are collected first: replacing a container's content while walking would walk
  // the copies.
  std::vector<Block> blocks;
  for_each_block(reinterpret_cast<xmlNode*>(document->get()), keep_placeholders_,
                 [&](Block& block) { blocks.push_back(std::move(block)); });
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string placed = place_node_markers(
        texts_[i], translations[i], blocks[i].elements,
        blocks[i].elements.empty() ? WordLinks() : links[i]);
    replace_content(blocks[i], placed);
  }
  std::string out = serialize_xml(*document);
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
