#include "document/open_document_text.h"

#include <libxml/tree.h>

#include <map>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "document/inline_markup.h"
#include "document/xml_tree.h"

namespace xlate {
namespace {

constexpr char kTextNamespace[] = "urn:oasis:names:tc:opendocument:xmlns:text:1.0";
constexpr char kStyleNamespace[] = "urn:oasis:names:tc:opendocument:xmlns:style:1.0";

bool is_named(const xmlNode* node, const char* namespace_uri, const char* name) {
  return node->type == XML_ELEMENT_NODE && node->ns != nullptr &&
         xmlStrcmp(node->ns->href, BAD_CAST namespace_uri) == 0 &&
         xmlStrcmp(node->name, BAD_CAST name) == 0;
}

bool is_text(const xmlNode* node, const char* name) {
  return is_named(node, kTextNamespace, name);
}

bool is_paragraph(const xmlNode* node) { return is_text(node, "p") || is_text(node, "h"); }

// Elements around words that keep them together: a span's style, a link.
bool is_inline(const xmlNode* node) { return is_text(node, "span") || is_text(node, "a"); }

// Spaces, tabs and line breaks written as elements: white space between words.
bool is_spacing(const xmlNode* node) {
  return is_text(node, "s") || is_text(node, "tab") || is_text(node, "line-break");
}

// Whether a paragraph of styles.xml is in a page header or footer (the text a user wrote there;
// the rest of styles.xml defines styles).
bool in_header_or_footer(const xmlNode* node) {
  for (const xmlNode* up = node->parent; up != nullptr; up = up->parent) {
    if (is_named(up, kStyleNamespace, "header") || is_named(up, kStyleNamespace, "footer") ||
        is_named(up, kStyleNamespace, "header-left") ||
        is_named(up, kStyleNamespace, "footer-left") ||
        is_named(up, kStyleNamespace, "header-first") ||
        is_named(up, kStyleNamespace, "footer-first")) {
      return true;
    }
  }
  return false;
}

bool has_words(const std::string& text) {
  return !absl::StripAsciiWhitespace(text).empty();
}

// A paragraph as one text, its spans, links and kept nodes as inline elements whose markers
// (document/inline_markup.h) stand for them.
struct Paragraph {
  xmlNode* node = nullptr;
  std::string text;
  std::vector<InlineElement> elements;
  std::vector<xmlNode*> nodes;  // per element
};

class ParagraphReader {
 public:
  explicit ParagraphReader(Paragraph& paragraph) : paragraph_(paragraph) {}

  void Read(xmlNode* parent, int parent_index) {
    for (xmlNode* child = parent->children; child != nullptr; child = child->next) {
      if (child->type == XML_TEXT_NODE && child->content != nullptr) {
        Append(reinterpret_cast<const char*>(child->content));
      } else if (child->type != XML_ELEMENT_NODE) {
        continue;  // comments and processing instructions: not ODF content
      } else if (is_inline(child)) {
        const int index = Add(child, parent_index, 'o');
        paragraph_.elements[index].close = node_marker('c');
        Read(child, index);
        paragraph_.elements[index].span.end = paragraph_.text.size();
      } else {
        const int index = Add(child, parent_index, 'k');
        if (is_spacing(child)) {
          Append(" ");
        } else {
          // A field between words keeps the spaces around it (document/inline_markup.h).
          paragraph_.elements[index].space_before =
              !paragraph_.text.empty() && paragraph_.text.back() == ' ';
          space_after_ = index;
        }
      }
    }
  }

  // No white space at the end (nor, from Append, at the start), as ODF displays the paragraph.
  void Finish() {
    while (!paragraph_.text.empty() && paragraph_.text.back() == ' ') paragraph_.text.pop_back();
    for (InlineElement& element : paragraph_.elements) {
      element.span.begin = std::min(element.span.begin, paragraph_.text.size());
      element.span.end = std::min(element.span.end, paragraph_.text.size());
    }
  }

 private:
  // Text with its white space collapsed (ODF's rule for text content).
  void Append(absl::string_view text) {
    for (const char c : text) {
      const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
      if (space_after_ >= 0) paragraph_.elements[space_after_].space_after = space;
      space_after_ = -1;
      if (space) {
        if (!paragraph_.text.empty() && paragraph_.text.back() != ' ') paragraph_.text += ' ';
      } else {
        paragraph_.text += c;
      }
    }
  }

  int Add(xmlNode* node, int parent_index, char kind) {
    paragraph_.nodes.push_back(node);
    return add_marked_element(paragraph_.elements, paragraph_.text.size(), kind, parent_index);
  }

  Paragraph& paragraph_;
  int space_after_ = -1;  // the kept node whose next character tells its space_after
};

// The paragraphs of a part with words, in document order (a note's or a text box's paragraphs
// after the paragraph that holds it).
std::vector<Paragraph> paragraphs_with_words(xmlDoc* document, bool headers_and_footers_only) {
  std::vector<Paragraph> out;
  const std::vector<xmlNode*> nodes = elements_in_order(document, [&](const xmlNode* node) {
    return is_paragraph(node) && (!headers_and_footers_only || in_header_or_footer(node));
  });
  for (xmlNode* node : nodes) {
    Paragraph paragraph;
    paragraph.node = node;
    ParagraphReader reader(paragraph);
    reader.Read(node, -1);
    reader.Finish();
    if (has_words(paragraph.text)) out.push_back(std::move(paragraph));
  }
  return out;
}

// Replaces the paragraph's content by the placed translation: text, copies of its spans and
// links around their words, and the kept nodes where their markers stand. A space, tab or break
// takes the place of the white space around it.
void replace_content(const Paragraph& paragraph, const std::string& placed) {
  xmlNode* p = paragraph.node;
  // The new content is built in a detached paragraph while the old is still in the tree (a
  // copy finds the namespaces of its attributes there), then moved in.
  xmlNode* holder = xmlNewDocNode(p->doc, p->ns, p->name, nullptr);
  std::vector<xmlNode*> open = {holder};
  bool after_spacing = false;
  xmlNode* last_text = nullptr;
  const auto add_text = [&](absl::string_view text) {
    if (after_spacing) text = absl::StripLeadingAsciiWhitespace(text);
    if (text.empty()) return;
    after_spacing = false;
    last_text = xmlNewDocTextLen(p->doc, BAD_CAST text.data(), static_cast<int>(text.size()));
    xmlAddChild(open.back(), last_text);
  };
  for_each_placed_piece(placed, add_text, [&](char kind, size_t index) {
    if (kind == 'c') {
      if (open.size() > 1) open.pop_back();
      last_text = nullptr;
      return;
    }
    xmlNode* node = paragraph.nodes[index];
    if (kind == 'k' && is_spacing(node)) {
      after_spacing = true;
      if (last_text != nullptr && last_text->parent == open.back()) {
        strip_trailing_spaces(last_text);
      }
    }
    last_text = nullptr;
    xmlNode* copy = xmlDocCopyNode(node, p->doc, kind == 'o' ? 2 : 1);
    xmlAddChild(open.back(), copy);
    if (kind == 'o') open.push_back(copy);
  });
  replace_children(p, holder, [](const xmlNode*) { return false; });
}

}  // namespace

absl::StatusOr<OpenDocumentText> OpenDocumentText::Parse(std::string archive) {
  auto zip = ZipArchive::Open(std::move(archive));
  if (!zip.ok()) return zip.status();
  if (!zip->contains("content.xml")) {
    return absl::InvalidArgumentError(
        "not an OpenDocument file (.odt, .odp, .ods): the archive has no content.xml");
  }
  OpenDocumentText odf(*std::move(zip));
  for (const char* part : {"content.xml", "styles.xml"}) {
    if (!odf.archive_.contains(part)) continue;
    auto bytes = odf.archive_.Read(part);
    if (!bytes.ok()) return bytes.status();
    auto tree = parse_xml(*bytes);
    if (!tree.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(part, ": ", tree.status().message()));
    }
    std::vector<Paragraph> paragraphs =
        paragraphs_with_words(tree->get(), std::string(part) == "styles.xml");
    if (paragraphs.empty()) continue;
    odf.parts_.push_back(part);
    for (Paragraph& paragraph : paragraphs) odf.texts_.push_back(std::move(paragraph.text));
  }
  return odf;
}

std::string OpenDocumentText::Rebuild(const std::vector<std::string>& translations,
                                      const std::vector<WordLinks>& links) const {
  CheckRebuild("OpenDocumentText", translations, links);
  std::map<std::string, std::string> replaced;
  size_t text = 0;
  for (const std::string& part : parts_) {
    auto bytes = archive_.Read(part);  // read once already
    auto tree = bytes.ok() ? parse_xml(*bytes) : absl::StatusOr<XmlTree>(bytes.status());
    if (!tree.ok()) throw std::logic_error("OpenDocumentText::Rebuild: a part no longer reads");
    std::vector<Paragraph> paragraphs = paragraphs_with_words(tree->get(), part == "styles.xml");
    std::vector<std::string> placed;
    for (const Paragraph& paragraph : paragraphs) {
      placed.push_back(
          place_node_markers(paragraph.text, translations[text], paragraph.elements, links[text]));
      ++text;
    }
    // Notes' and text boxes' paragraphs (inside a kept node of an earlier paragraph) first, so
    // that the copy of that node carries them translated.
    for (size_t i = paragraphs.size(); i-- > 0;) replace_content(paragraphs[i], placed[i]);
    replaced[part] = serialize_xml(*tree);
  }
  auto archive = archive_.WithReplaced(replaced);
  if (!archive.ok()) {
    throw std::runtime_error(absl::StrCat("the OpenDocument file cannot be written: ",
                                          archive.status().message()));
  }
  return *std::move(archive);
}

}  // namespace xlate
