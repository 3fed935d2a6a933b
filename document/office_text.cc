#include "document/office_text.h"

#include <libxml/tree.h>

#include <algorithm>
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

// The names of a format's paragraphs, runs and text, in the namespace of its markup.
struct Vocabulary {
  const char* namespace_uri;
  std::vector<const char*> paragraphs;
  const char* paragraph_properties;  // first in a paragraph, kept there ("" none)
  const char* run;
  const char* run_properties;
  const char* text;
  std::vector<const char*> run_containers;  // around runs: their words stay together
  std::vector<const char*> spacing;         // tabs and breaks: white space between words
};

// WordprocessingML (.docx): w:p of w:r, around them a hyperlink, a tracked insertion or a smart
// tag; tabs and breaks inside runs.
const Vocabulary kWordprocessing = {
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    {"p"}, "pPr", "r", "rPr", "t", {"hyperlink", "ins", "smartTag"}, {"tab", "br", "cr", "ptab"}};
// DrawingML (.pptx text frames): a:p of a:r (a hyperlink is in a run's a:rPr); a:br between
// runs.
const Vocabulary kDrawing = {"http://schemas.openxmlformats.org/drawingml/2006/main",
                             {"p"}, "pPr", "r", "rPr", "t", {}, {"br"}};
// SpreadsheetML (.xlsx cell text): a shared string (si) or a cell's inline string (is), each a t
// or rich text runs.
const Vocabulary kSpreadsheet = {"http://schemas.openxmlformats.org/spreadsheetml/2006/main",
                                 {"si", "is"}, "", "r", "rPr", "t", {}, {}};

const Vocabulary& vocabulary_of(OfficeFormat format) {
  switch (format) {
    case OfficeFormat::kPptx:
      return kDrawing;
    case OfficeFormat::kXlsx:
      return kSpreadsheet;
    case OfficeFormat::kDocx:
      break;
  }
  return kWordprocessing;
}

bool is_named(const xmlNode* node, const Vocabulary& vocabulary, const char* name) {
  return node->type == XML_ELEMENT_NODE && node->ns != nullptr && *name != '\0' &&
         xmlStrcmp(node->ns->href, BAD_CAST vocabulary.namespace_uri) == 0 &&
         xmlStrcmp(node->name, BAD_CAST name) == 0;
}

bool is_one_of(const xmlNode* node, const Vocabulary& vocabulary,
               const std::vector<const char*>& names) {
  for (const char* name : names) {
    if (is_named(node, vocabulary, name)) return true;
  }
  return false;
}

// The number in a part's name ("ppt/slides/slide12.xml": 12), for slide order.
int number_in(absl::string_view name) {
  int number = 0;
  for (const char c : name) {
    if (c >= '0' && c <= '9') number = number * 10 + (c - '0');
  }
  return number;
}

// Whether `name` is a part of `folder` (not of a folder inside it) whose name starts with `stem`.
bool in_folder(absl::string_view name, absl::string_view folder, absl::string_view stem) {
  if (!absl::StartsWith(name, folder) || !absl::EndsWith(name, ".xml")) return false;
  const absl::string_view file = name.substr(folder.size(), name.size() - folder.size() - 4);
  return file.find('/') == absl::string_view::npos && absl::StartsWith(file, stem);
}

// Appends the parts of `folder` named `stem` and a number, in the numbers' order (slide2 before
// slide10).
void append_numbered(const std::vector<std::string>& names, absl::string_view folder,
                     absl::string_view stem, std::vector<std::string>& parts) {
  std::vector<std::string> found;
  for (const std::string& name : names) {
    if (in_folder(name, folder, stem)) found.push_back(name);
  }
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return number_in(a) < number_in(b);
  });
  parts.insert(parts.end(), found.begin(), found.end());
}

// The parts of an archive whose paragraphs are translated, in reading order.
std::vector<std::string> parts_with_text(const ZipArchive& archive, OfficeFormat format) {
  std::vector<std::string> parts;
  const std::vector<std::string>& names = archive.names();
  switch (format) {
    case OfficeFormat::kDocx:
      parts.push_back("word/document.xml");
      for (const std::string& name : names) {
        for (const char* stem : {"header", "footer", "footnotes", "endnotes", "comments"}) {
          if (in_folder(name, "word/", stem)) {
            parts.push_back(name);
            break;
          }
        }
      }
      break;
    case OfficeFormat::kPptx:
      // Each slide, then its speaker notes, in slide order.
      append_numbered(names, "ppt/slides/", "slide", parts);
      append_numbered(names, "ppt/notesSlides/", "notesSlide", parts);
      break;
    case OfficeFormat::kXlsx:
      // The shared strings (what Excel writes), then each sheet's inline strings.
      if (archive.contains("xl/sharedStrings.xml")) parts.push_back("xl/sharedStrings.xml");
      append_numbered(names, "xl/worksheets/", "sheet", parts);
      break;
  }
  return parts;
}

// Every paragraph of a tree, in document order (a text box's paragraphs after the paragraph whose
// drawing holds them).
std::vector<xmlNode*> paragraphs_of(xmlDoc* document, const Vocabulary& vocabulary) {
  return elements_in_order(document, [&](const xmlNode* node) {
    return is_one_of(node, vocabulary, vocabulary.paragraphs);
  });
}

// A paragraph as one text, its runs, run containers and kept nodes as inline elements whose
// markers (document/inline_markup.h) stand for them.
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

bool has_words(const std::string& text) {
  for (const char c : text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return true;
  }
  return false;
}

class ParagraphReader {
 public:
  ParagraphReader(Paragraph& paragraph, const Vocabulary& vocabulary)
      : paragraph_(paragraph), vocabulary_(vocabulary) {}

  void Read(xmlNode* parent, int parent_index) {
    for (xmlNode* child = parent->children; child != nullptr; child = child->next) {
      if (child->type != XML_ELEMENT_NODE || Is(child, vocabulary_.paragraph_properties)) continue;
      if (Is(child, vocabulary_.run)) {
        ReadRun(child, parent_index);
      } else if (Is(child, vocabulary_.text)) {
        // Text without a run (a shared string's plain text): a run of no formatting.
        const int index = Add(child, parent_index, 'o', nullptr, true);
        paragraph_.elements[index].close = node_marker('c');
        AppendText(child);
        paragraph_.elements[index].span.end = paragraph_.text.size();
      } else if (is_one_of(child, vocabulary_, vocabulary_.run_containers) &&
                 has_words(TextOf(child))) {
        const int index = Add(child, parent_index, 'o', nullptr, false);
        paragraph_.elements[index].close = node_marker('c');
        Read(child, index);
        paragraph_.elements[index].span.end = paragraph_.text.size();
      } else {
        Keep(child, parent_index, nullptr);
      }
    }
  }

 private:
  bool Is(const xmlNode* node, const char* name) const {
    return is_named(node, vocabulary_, name);
  }

  // The words of a run container's runs.
  std::string TextOf(const xmlNode* container) const {
    std::string text;
    for (const xmlNode* child = container->children; child != nullptr; child = child->next) {
      if (Is(child, vocabulary_.run)) {
        for (const xmlNode* item = child->children; item != nullptr; item = item->next) {
          if (Is(item, vocabulary_.text)) append_content(item, text);
        }
      } else if (is_one_of(child, vocabulary_, vocabulary_.run_containers)) {
        text += TextOf(child);
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
      if (Is(item, vocabulary_.run_properties)) properties = item;
      if (Is(item, vocabulary_.text)) words = true;
    }
    // A run without text is not an element of its own: what it holds is kept, each in a run of
    // its formatting.
    const int index = words ? Add(run, parent_index, 'o', properties, true) : parent_index;
    if (words) paragraph_.elements[index].close = node_marker('c');
    for (xmlNode* item = run->children; item != nullptr; item = item->next) {
      if (item->type != XML_ELEMENT_NODE || Is(item, vocabulary_.run_properties)) continue;
      if (Is(item, vocabulary_.text)) {
        AppendText(item);
      } else {
        Keep(item, index, properties);
      }
    }
    if (words) paragraph_.elements[index].span.end = paragraph_.text.size();
  }

  // A node kept as it is, in place of no words; a tab or break parts the words around it as a
  // space does.
  void Keep(xmlNode* node, int parent_index, xmlNode* run_properties) {
    const int index = Add(node, parent_index, 'k', run_properties, false);
    if (is_one_of(node, vocabulary_, vocabulary_.spacing)) {
      paragraph_.text += ' ';
      return;
    }
    // A field or drawing between words keeps the spaces around it (document/inline_markup.h).
    paragraph_.elements[index].space_before =
        !paragraph_.text.empty() && paragraph_.text.back() == ' ';
    space_after_ = index;
  }

  // A text element's content; its first character tells whether the kept node before it had
  // a space after it.
  void AppendText(const xmlNode* node) {
    const size_t before = paragraph_.text.size();
    append_content(node, paragraph_.text);
    if (space_after_ >= 0 && paragraph_.text.size() > before) {
      paragraph_.elements[space_after_].space_after = paragraph_.text[before] == ' ';
      space_after_ = -1;
    }
  }

  int Add(xmlNode* node, int parent_index, char kind, xmlNode* run_properties, bool is_run) {
    paragraph_.origins.push_back({node, run_properties, is_run});
    return add_marked_element(paragraph_.elements, paragraph_.text.size(), kind, parent_index);
  }

  Paragraph& paragraph_;
  const Vocabulary& vocabulary_;
  int space_after_ = -1;  // the kept node whose next text tells its space_after
};

// The paragraphs of a part with words, in document order.
std::vector<Paragraph> paragraphs_with_words(xmlDoc* document, const Vocabulary& vocabulary) {
  std::vector<Paragraph> out;
  for (xmlNode* node : paragraphs_of(document, vocabulary)) {
    Paragraph paragraph;
    paragraph.node = node;
    ParagraphReader(paragraph, vocabulary).Read(node, -1);
    if (has_words(paragraph.text)) out.push_back(std::move(paragraph));
  }
  return out;
}

// A new run of `properties`' formatting (a copy; none when null) in `parent`.
xmlNode* add_run(xmlNode* parent, xmlNs* ns, const Vocabulary& vocabulary, xmlNode* properties) {
  xmlNode* run = xmlNewDocNode(parent->doc, ns, BAD_CAST vocabulary.run, nullptr);
  xmlAddChild(parent, run);
  if (properties != nullptr) xmlAddChild(run, xmlDocCopyNode(properties, parent->doc, 1));
  return run;
}

// Replaces the paragraph's content (all but its properties) by the placed translation: runs of
// the formatting of the run each piece of text is placed in, copies of the run containers
// around them, and the kept nodes where their markers stand.
void replace_runs(const Paragraph& paragraph, const std::string& placed,
                  const Vocabulary& vocabulary) {
  xmlNode* p = paragraph.node;
  xmlNs* ns = p->ns;
  // The new content is built in a detached paragraph, then moved in.
  xmlNode* holder = xmlNewDocNode(p->doc, ns, p->name, nullptr);
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
    // last_text's text element is in a run, which is the container's last child.
    if (last_text != nullptr && last_properties == properties &&
        last_text->parent->parent == containers.back()->last) {
      xmlNodeAddContentLen(last_text, BAD_CAST text.data(), static_cast<int>(text.size()));
      return;
    }
    xmlNode* run = add_run(containers.back(), ns, vocabulary, properties);
    xmlNode* t = xmlNewDocNode(p->doc, ns, BAD_CAST vocabulary.text, nullptr);
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
      opened_run.push_back(false);
      last_text = nullptr;
    } else {
      // A kept node: inside a run of its own run's formatting when it came from one. A tab or
      // break takes the place of the space around it.
      if (is_one_of(origin.node, vocabulary, vocabulary.spacing)) {
        after_spacing = true;
        if (last_text != nullptr && last_text->parent->parent == containers.back()->last) {
          strip_trailing_spaces(last_text);
        }
      }
      last_text = nullptr;
      const bool in_run =
          origin.node->parent != nullptr && is_named(origin.node->parent, vocabulary, vocabulary.run);
      xmlNode* parent = in_run ? add_run(containers.back(), ns, vocabulary, origin.run_properties)
                               : containers.back();
      xmlAddChild(parent, xmlDocCopyNode(origin.node, p->doc, 1));
    }
  });
  // The paragraph's properties stay first.
  replace_children(p, holder, [&vocabulary](const xmlNode* child) {
    return is_named(child, vocabulary, vocabulary.paragraph_properties);
  });
}

const char* format_name(OfficeFormat format) {
  switch (format) {
    case OfficeFormat::kPptx:
      return "PowerPoint presentation (.pptx)";
    case OfficeFormat::kXlsx:
      return "Excel workbook (.xlsx)";
    case OfficeFormat::kDocx:
      break;
  }
  return "Word document (.docx)";
}

// The part every archive of the format has.
const char* main_part(OfficeFormat format) {
  switch (format) {
    case OfficeFormat::kPptx:
      return "ppt/presentation.xml";
    case OfficeFormat::kXlsx:
      return "xl/workbook.xml";
    case OfficeFormat::kDocx:
      break;
  }
  return "word/document.xml";
}

}  // namespace

absl::StatusOr<OfficeText> OfficeText::Parse(std::string archive, OfficeFormat format) {
  auto zip = ZipArchive::Open(std::move(archive));
  if (!zip.ok()) return zip.status();
  if (!zip->contains(main_part(format))) {
    return absl::InvalidArgumentError(absl::StrCat("not a ", format_name(format),
                                                   ": the archive has no ", main_part(format)));
  }
  OfficeText office(*std::move(zip), format);
  office.parts_ = parts_with_text(office.archive_, format);
  const Vocabulary& vocabulary = vocabulary_of(format);
  for (const std::string& part : office.parts_) {
    auto bytes = office.archive_.Read(part);
    if (!bytes.ok()) return bytes.status();
    auto tree = parse_xml(*bytes);
    if (!tree.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(part, ": ", tree.status().message()));
    }
    for (Paragraph& paragraph : paragraphs_with_words(tree->get(), vocabulary)) {
      office.texts_.push_back(std::move(paragraph.text));
    }
  }
  return office;
}

std::string OfficeText::Rebuild(const std::vector<std::string>& translations,
                                const std::vector<WordLinks>& links) const {
  CheckRebuild("OfficeText", translations, links);
  const Vocabulary& vocabulary = vocabulary_of(format_);
  std::map<std::string, std::string> replaced;
  size_t text = 0;
  for (const std::string& part : parts_) {
    auto bytes = archive_.Read(part);  // read once already
    auto tree = bytes.ok() ? parse_xml(*bytes) : absl::StatusOr<XmlTree>(bytes.status());
    if (!tree.ok()) throw std::logic_error("OfficeText::Rebuild: a part no longer reads");
    std::vector<Paragraph> paragraphs = paragraphs_with_words(tree->get(), vocabulary);
    if (paragraphs.empty()) continue;
    std::vector<std::string> placed;
    for (const Paragraph& paragraph : paragraphs) {
      placed.push_back(
          place_node_markers(paragraph.text, translations[text], paragraph.elements, links[text]));
      ++text;
    }
    // Text boxes' paragraphs (inside a drawing of an earlier paragraph) first, so that the
    // copy of the drawing carries them translated.
    for (size_t i = paragraphs.size(); i-- > 0;) replace_runs(paragraphs[i], placed[i], vocabulary);
    replaced[part] = serialize_xml(*tree);
  }
  auto archive = archive_.WithReplaced(replaced);
  if (!archive.ok()) {
    throw std::runtime_error(absl::StrCat("the ", format_name(format_), " cannot be written: ",
                                          archive.status().message()));
  }
  return *std::move(archive);
}

}  // namespace xlate
