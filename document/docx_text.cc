#include "document/docx_text.h"

#include <libxml/tree.h>

#include <map>
#include <stdexcept>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "document/inline_markup.h"
#include "document/xml_tree.h"

namespace xlate {
namespace {

constexpr char kWordNamespace[] = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

bool is_word(const xmlNode* node, const char* name) {
  return node->type == XML_ELEMENT_NODE && node->ns != nullptr &&
         xmlStrcmp(node->ns->href, BAD_CAST kWordNamespace) == 0 &&
         xmlStrcmp(node->name, BAD_CAST name) == 0;
}

// Elements around runs whose words a translation keeps together: a hyperlink, a tracked
// insertion, a smart tag.
bool is_run_container(const xmlNode* node) {
  return is_word(node, "hyperlink") || is_word(node, "ins") || is_word(node, "smartTag");
}

// The parts with paragraphs: the main document, then the others in the archive's order.
bool has_paragraphs(absl::string_view name) {
  if (!absl::StartsWith(name, "word/") || !absl::EndsWith(name, ".xml")) return false;
  const absl::string_view file = name.substr(5, name.size() - 9);
  if (file.find('/') != absl::string_view::npos) return false;
  return absl::StartsWith(file, "header") || absl::StartsWith(file, "footer") ||
         file == "footnotes" || file == "endnotes" || file == "comments";
}

// Every w:p of a tree, in document order (a text box's paragraphs after the paragraph whose
// drawing holds them). Iterative: the tree's depth is libxml2's to bound, not the stack's.
std::vector<xmlNode*> paragraphs_of(xmlDoc* document) {
  std::vector<xmlNode*> paragraphs;
  xmlNode* node = xmlDocGetRootElement(document);
  while (node != nullptr) {
    if (is_word(node, "p")) paragraphs.push_back(node);
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
  return paragraphs;
}

// A paragraph as one text, its runs, run containers and kept nodes as inline elements whose
// markers (document/xml_tree.h) stand for them.
struct Paragraph {
  xmlNode* node = nullptr;
  std::string text;
  std::vector<InlineElement> elements;
  struct Origin {
    xmlNode* node;
    // A run's w:rPr, and a kept node's run's (it goes back inside a run of that formatting);
    // null: none.
    xmlNode* run_properties;
    bool is_run;
  };
  std::vector<Origin> origins;  // per element
};

// A tab or a line, column or page break: white space between words, written as an element.
bool is_spacing(const xmlNode* node) {
  return is_word(node, "tab") || is_word(node, "br") || is_word(node, "cr") ||
         is_word(node, "ptab");
}

bool has_words(const std::string& text) {
  for (const char c : text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return true;
  }
  return false;
}

class ParagraphReader {
 public:
  explicit ParagraphReader(Paragraph& paragraph) : paragraph_(paragraph) {}

  void Read(xmlNode* parent, int parent_index) {
    for (xmlNode* child = parent->children; child != nullptr; child = child->next) {
      if (child->type != XML_ELEMENT_NODE || is_word(child, "pPr")) continue;
      if (is_word(child, "r")) {
        ReadRun(child, parent_index);
      } else if (is_run_container(child) && has_words(text_of(child))) {
        const int index = Add(child, parent_index, 'o', nullptr, false);
        paragraph_.elements[index].close = node_marker('c');
        Read(child, index);
        paragraph_.elements[index].span.end = paragraph_.text.size();
      } else {
        Add(child, parent_index, 'k', nullptr, false);
      }
    }
  }

 private:
  // The words of a run container's runs.
  static std::string text_of(const xmlNode* container) {
    std::string text;
    for (const xmlNode* child = container->children; child != nullptr; child = child->next) {
      if (is_word(child, "r")) {
        for (const xmlNode* item = child->children; item != nullptr; item = item->next) {
          if (is_word(item, "t")) append_content(item, text);
        }
      } else if (is_run_container(child)) {
        text += text_of(child);
      }
    }
    return text;
  }

  static void append_content(const xmlNode* node, std::string& text) {
    xmlChar* content = xmlNodeGetContent(node);
    if (content != nullptr) text += reinterpret_cast<const char*>(content);
    xmlFree(content);
  }

  void ReadRun(xmlNode* run, int parent_index) {
    xmlNode* properties = nullptr;
    bool words = false;
    for (xmlNode* item = run->children; item != nullptr; item = item->next) {
      if (is_word(item, "rPr")) properties = item;
      if (is_word(item, "t")) words = true;
    }
    // A run without text is not an element of its own: what it holds is kept, each in a run of
    // its formatting.
    const int index = words ? Add(run, parent_index, 'o', properties, true) : parent_index;
    if (words) paragraph_.elements[index].close = node_marker('c');
    for (xmlNode* item = run->children; item != nullptr; item = item->next) {
      if (item->type != XML_ELEMENT_NODE || is_word(item, "rPr")) continue;
      if (is_word(item, "t")) {
        append_content(item, paragraph_.text);
      } else {
        Add(item, index, 'k', properties, false);
        // A tab or break parts the words around it as a space does.
        if (is_spacing(item)) paragraph_.text += ' ';
      }
    }
    if (words) paragraph_.elements[index].span.end = paragraph_.text.size();
  }

  int Add(xmlNode* node, int parent_index, char kind, xmlNode* run_properties, bool is_run) {
    const int index = static_cast<int>(paragraph_.elements.size());
    InlineElement& element = paragraph_.elements.emplace_back();
    element.span = {paragraph_.text.size(), paragraph_.text.size()};
    element.open = node_marker(kind, static_cast<size_t>(index));
    element.parent = parent_index;
    paragraph_.origins.push_back({node, run_properties, is_run});
    return index;
  }

  Paragraph& paragraph_;
};

// The paragraphs of a part with words, in document order.
std::vector<Paragraph> paragraphs_with_words(xmlDoc* document) {
  std::vector<Paragraph> out;
  for (xmlNode* node : paragraphs_of(document)) {
    Paragraph paragraph;
    paragraph.node = node;
    ParagraphReader(paragraph).Read(node, -1);
    if (has_words(paragraph.text)) out.push_back(std::move(paragraph));
  }
  return out;
}

// A new w:r of `properties`' formatting (a copy; none when null) in `parent`.
xmlNode* add_run(xmlNode* parent, xmlNs* word, xmlNode* properties) {
  xmlNode* run = xmlNewDocNode(parent->doc, word, BAD_CAST "r", nullptr);
  xmlAddChild(parent, run);
  if (properties != nullptr) xmlAddChild(run, xmlDocCopyNode(properties, parent->doc, 1));
  return run;
}

// Replaces the paragraph's content (all but its w:pPr) by the placed translation: runs of the
// formatting of the run each piece of text is placed in, copies of the run containers around
// them, and the kept nodes where their markers stand.
void replace_runs(const Paragraph& paragraph, const std::string& placed) {
  xmlNode* p = paragraph.node;
  xmlNs* word = p->ns;
  // The new content is built in a detached paragraph, then moved in.
  xmlNode* holder = xmlNewDocNode(p->doc, word, BAD_CAST "p", nullptr);
  std::vector<xmlNode*> containers = {holder};
  std::vector<int> open_runs;  // element indices of the runs placed text is inside
  // Text placed outside every run (spaces and punctuation between them) takes the formatting
  // of the run that held most of the paragraph's text: its plain text, as a rule.
  xmlNode* common_properties = nullptr;
  size_t most = 0;
  for (size_t i = 0; i < paragraph.origins.size(); ++i) {
    const InlineElement& element = paragraph.elements[i];
    if (paragraph.origins[i].is_run && element.span.end - element.span.begin > most) {
      most = element.span.end - element.span.begin;
      common_properties = paragraph.origins[i].run_properties;
    }
  }
  // The last text written, to go on with while the formatting stays the same; and whether a
  // tab or break was written last, after which white space is the element's.
  xmlNode* last_text = nullptr;
  const xmlNode* last_properties = nullptr;
  bool after_spacing = false;
  const auto add_text = [&](absl::string_view text) {
    if (after_spacing) text = absl::StripLeadingAsciiWhitespace(text);
    if (text.empty()) return;
    after_spacing = false;
    xmlNode* properties =
        open_runs.empty()
            ? common_properties
            : paragraph.origins[static_cast<size_t>(open_runs.back())].run_properties;
    // last_text's w:t is in a w:r, which is the container's last child.
    if (last_text != nullptr && last_properties == properties &&
        last_text->parent->parent == containers.back()->last) {
      xmlNodeAddContentLen(last_text, BAD_CAST text.data(), static_cast<int>(text.size()));
      return;
    }
    xmlNode* run = add_run(containers.back(), word, properties);
    xmlNode* t = xmlNewDocNode(p->doc, word, BAD_CAST "t", nullptr);
    xmlNodeSetSpacePreserve(t, 1);
    xmlAddChild(run, t);
    last_text = xmlAddChild(t, xmlNewDocTextLen(p->doc, BAD_CAST text.data(),
                                                static_cast<int>(text.size())));
    last_properties = properties;
  };
  std::vector<bool> opened_run;  // per open marker: whether it opened a run (else a container)
  for_each_placed_piece(placed, add_text, [&](char kind, size_t index) {
    if (kind == 'c') {
      if (opened_run.empty()) return;
      if (opened_run.back()) {
        open_runs.pop_back();
      } else if (containers.size() > 1) {
        containers.pop_back();
        last_text = nullptr;
      }
      opened_run.pop_back();
      return;
    }
    const Paragraph::Origin& origin = paragraph.origins[index];
    if (kind == 'o' && origin.is_run) {
      open_runs.push_back(static_cast<int>(index));
      opened_run.push_back(true);
    } else if (kind == 'o') {
      xmlNode* copy = xmlDocCopyNode(origin.node, p->doc, 2);
      xmlAddChild(containers.back(), copy);
      containers.push_back(copy);
      last_text = nullptr;
      opened_run.push_back(false);
    } else {
      // A kept node: inside a run of its own run's formatting when it came from one. A tab or
      // break takes the place of the space around it.
      if (is_spacing(origin.node)) {
        after_spacing = true;
        if (last_text != nullptr && last_text->parent->parent == containers.back()->last) {
          xmlChar* content = xmlNodeGetContent(last_text);
          std::string kept(reinterpret_cast<const char*>(content));
          xmlFree(content);
          kept.erase(kept.find_last_not_of(' ') + 1);
          xmlNodeSetContentLen(last_text, BAD_CAST kept.data(), static_cast<int>(kept.size()));
        }
      }
      last_text = nullptr;
      const bool in_run = origin.node->parent != nullptr && is_word(origin.node->parent, "r");
      xmlNode* parent = in_run ? add_run(containers.back(), word, origin.run_properties)
                               : containers.back();
      xmlAddChild(parent, xmlDocCopyNode(origin.node, p->doc, 1));
    }
  });
  // Out with the old content (w:pPr stays first), in with the new.
  for (xmlNode* child = p->children; child != nullptr;) {
    xmlNode* next = child->next;
    if (!is_word(child, "pPr")) {
      xmlUnlinkNode(child);
      xmlFreeNode(child);
    }
    child = next;
  }
  for (xmlNode* child = holder->children; child != nullptr;) {
    xmlNode* next = child->next;
    xmlUnlinkNode(child);
    xmlAddChild(p, child);
    child = next;
  }
  xmlFreeNode(holder);
  // The copies declared the namespaces they use (a copy is made outside the tree); the
  // paragraph's ancestors declare them already. libxml2's option to remove such redundant
  // declarations (XML_DOM_RECONNS_REMOVEREDUND) is 1; its enum is not in the headers.
  constexpr int kRemoveRedundantDeclarations = 1;
  xmlDOMWrapReconcileNamespaces(nullptr, p, kRemoveRedundantDeclarations);
}

}  // namespace

absl::StatusOr<DocxText> DocxText::Parse(std::string archive) {
  auto zip = ZipArchive::Open(std::move(archive));
  if (!zip.ok()) return zip.status();
  if (!zip->contains("word/document.xml")) {
    return absl::InvalidArgumentError(
        "not a Word document (.docx): the archive has no word/document.xml");
  }
  DocxText docx(*std::move(zip));
  docx.parts_.push_back("word/document.xml");
  for (const std::string& name : docx.archive_.names()) {
    if (has_paragraphs(name)) docx.parts_.push_back(name);
  }
  for (const std::string& part : docx.parts_) {
    auto bytes = docx.archive_.Read(part);
    if (!bytes.ok()) return bytes.status();
    auto tree = parse_xml(*bytes);
    if (!tree.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(part, ": ", tree.status().message()));
    }
    for (Paragraph& paragraph : paragraphs_with_words(tree->get())) {
      docx.texts_.push_back(std::move(paragraph.text));
    }
  }
  return docx;
}

std::string DocxText::Rebuild(const std::vector<std::string>& translations,
                              const std::vector<WordLinks>& links) const {
  if (translations.size() != texts_.size() || links.size() != texts_.size()) {
    throw std::logic_error("DocxText::Rebuild: one translation and word links per paragraph");
  }
  std::map<std::string, std::string> replaced;
  size_t text = 0;
  for (const std::string& part : parts_) {
    auto bytes = archive_.Read(part);  // read once already
    auto tree = bytes.ok() ? parse_xml(*bytes) : absl::StatusOr<XmlTree>(bytes.status());
    if (!tree.ok()) throw std::logic_error("DocxText::Rebuild: a part no longer reads");
    std::vector<Paragraph> paragraphs = paragraphs_with_words(tree->get());
    if (paragraphs.empty()) continue;
    std::vector<std::string> placed;
    for (const Paragraph& paragraph : paragraphs) {
      placed.push_back(place_inline_markup(paragraph.text, translations[text], paragraph.elements,
                                           links[text], without_node_markers));
      ++text;
    }
    // Text boxes' paragraphs (inside a drawing of an earlier paragraph) first, so that the
    // copy of the drawing carries them translated.
    for (size_t i = paragraphs.size(); i-- > 0;) replace_runs(paragraphs[i], placed[i]);
    replaced[part] = serialize_xml(*tree);
  }
  auto archive = archive_.WithReplaced(replaced);
  if (!archive.ok()) {
    throw std::runtime_error(absl::StrCat("the .docx cannot be written: ",
                                          archive.status().message()));
  }
  return *std::move(archive);
}

}  // namespace xlate
