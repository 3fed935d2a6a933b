#include "document/html_text.h"

#include <gumbo.h>

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "document/placeholder_text.h"

namespace xlate {
namespace {

// Elements whose text is not translated.
bool keeps_its_text(const GumboElement& element) {
  switch (element.tag) {
    case GUMBO_TAG_SCRIPT: case GUMBO_TAG_STYLE: case GUMBO_TAG_NOSCRIPT:
    case GUMBO_TAG_TEMPLATE: case GUMBO_TAG_TEXTAREA: case GUMBO_TAG_CODE:
    case GUMBO_TAG_KBD: case GUMBO_TAG_SAMP: case GUMBO_TAG_VAR: case GUMBO_TAG_PRE:
      return true;
    default:
      break;
  }
  if (const GumboAttribute* translate = gumbo_get_attribute(&element.attributes, "translate");
      translate != nullptr && absl::EqualsIgnoreCase(translate->value, "no")) {
    return true;
  }
  if (const GumboAttribute* classes = gumbo_get_attribute(&element.attributes, "class")) {
    for (absl::string_view name : absl::StrSplit(classes->value, ' ', absl::SkipEmpty())) {
      if (name == "notranslate") return true;
    }
  }
  return false;
}

// Phrasing elements that stay inside a block of text (HTML's phrasing content, less the
// embedded and interactive ones that make no sense inside a sentence, and br, which ends a
// line and so a sentence).
bool is_inline(GumboTag tag) {
  switch (tag) {
    case GUMBO_TAG_A: case GUMBO_TAG_ABBR: case GUMBO_TAG_B: case GUMBO_TAG_BDI:
    case GUMBO_TAG_BDO: case GUMBO_TAG_BIG: case GUMBO_TAG_CITE: case GUMBO_TAG_CODE:
    case GUMBO_TAG_DATA: case GUMBO_TAG_DEL: case GUMBO_TAG_DFN: case GUMBO_TAG_EM:
    case GUMBO_TAG_FONT: case GUMBO_TAG_I: case GUMBO_TAG_IMG: case GUMBO_TAG_INS:
    case GUMBO_TAG_KBD: case GUMBO_TAG_LABEL: case GUMBO_TAG_MARK: case GUMBO_TAG_NOBR:
    case GUMBO_TAG_Q: case GUMBO_TAG_S: case GUMBO_TAG_SAMP: case GUMBO_TAG_SMALL:
    case GUMBO_TAG_SPAN: case GUMBO_TAG_STRIKE: case GUMBO_TAG_STRONG: case GUMBO_TAG_SUB:
    case GUMBO_TAG_SUP: case GUMBO_TAG_TIME: case GUMBO_TAG_TT: case GUMBO_TAG_U:
    case GUMBO_TAG_VAR: case GUMBO_TAG_WBR:
      return true;
    default:
      return false;
  }
}

bool is_void(GumboTag tag) { return tag == GUMBO_TAG_IMG || tag == GUMBO_TAG_WBR; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

std::string escape_html(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

// The decoded text of a subtree.
void append_text_of(const GumboNode& node, std::string& out) {
  if (node.type == GUMBO_NODE_TEXT || node.type == GUMBO_NODE_WHITESPACE ||
      node.type == GUMBO_NODE_CDATA) {
    out += node.v.text.text;
  } else if (node.type == GUMBO_NODE_ELEMENT || node.type == GUMBO_NODE_TEMPLATE) {
    const GumboVector& children = node.v.element.children;
    for (unsigned i = 0; i < children.length; ++i) {
      append_text_of(*static_cast<const GumboNode*>(children.data[i]), out);
    }
  }
}

// Gumbo's memory for one parse, bounded and freed at once. HTML5's repair of unclosed formatting
// elements reopens every one of them in each later paragraph, so a 53 KB text can make a tree of
// 2.9 GB (2,000 <b id=i> then 4,000 <p>x), and Gumbo frees a tree recursively, one stack frame
// per level. Here its allocations come from blocks this arena frees in one pass, and an
// allocation past the budget leaves the parse by longjmp: only Gumbo's C frames lie between it
// and the setjmp in parse_within_budget, and everything they hold is in this arena.
class GumboArena {
 public:
  explicit GumboArena(size_t budget) : budget_(budget) {}
  GumboArena(const GumboArena&) = delete;
  GumboArena& operator=(const GumboArena&) = delete;
  ~GumboArena() {
    while (blocks_ != nullptr) {
      Block* next = blocks_->next;
      std::free(blocks_);
      blocks_ = next;
    }
  }

  static void* Allocate(void* userdata, size_t size) {
    auto* arena = static_cast<GumboArena*>(userdata);
    size = (size + kAlign - 1) / kAlign * kAlign;
    if (arena->blocks_ == nullptr || arena->free_ < size) {
      const size_t capacity = std::max(size, kBlockBytes);
      arena->taken_ += capacity + sizeof(Block);
      if (arena->taken_ > arena->budget_) std::longjmp(arena->over_budget_, 1);
      auto* block = static_cast<Block*>(std::malloc(sizeof(Block) + capacity));
      if (block == nullptr) std::longjmp(arena->over_budget_, 1);
      block->next = arena->blocks_;
      arena->blocks_ = block;
      arena->next_ = reinterpret_cast<char*>(block) + sizeof(Block);
      arena->free_ = capacity;
    }
    void* at = arena->next_;
    arena->next_ += size;
    arena->free_ -= size;
    return at;
  }
  static void Deallocate(void*, void*) {}  // all at once, with the arena

  // Gumbo's tree of `source`, or nullptr when building it would take more than the budget.
  GumboOutput* Parse(const std::string& source) {
    GumboOptions options = kGumboDefaultOptions;
    options.allocator = &GumboArena::Allocate;
    options.deallocator = &GumboArena::Deallocate;
    options.userdata = this;
    // Parse errors are not read here, and Gumbo copies the stack of open elements into each:
    // quadratic memory in the nesting depth (20,000 nested <b>: 3.1 GB).
    options.max_errors = 0;
    if (setjmp(over_budget_) != 0) return nullptr;
    return gumbo_parse_with_options(&options, source.data(), source.size());
  }

  size_t taken() const { return taken_; }

 private:
  struct alignas(alignof(std::max_align_t)) Block {
    Block* next;
  };
  static constexpr size_t kAlign = alignof(std::max_align_t);
  static constexpr size_t kBlockBytes = size_t{256} << 10;
  const size_t budget_;
  size_t taken_ = 0;
  Block* blocks_ = nullptr;
  char* next_ = nullptr;
  size_t free_ = 0;
  std::jmp_buf over_budget_;
};

// Start tags in `source` ('<' then an ASCII letter): Gumbo's time grows with the square of the
// nesting depth, which start tags bound (20,000 nested <b>: 0.08 s; 200,000: tens of seconds).
size_t count_start_tags(absl::string_view source) {
  size_t tags = 0;
  for (size_t at = source.find('<'); at != absl::string_view::npos && at + 1 < source.size();
       at = source.find('<', at + 1)) {
    if (absl::ascii_isalpha(static_cast<unsigned char>(source[at + 1]))) ++tags;
  }
  return tags;
}

// The depth of Gumbo's deepest element below the document (html is 1), walked with a stack of
// its own; stops once past `limit`.
int element_depth(const GumboNode& document, int limit) {
  std::vector<std::pair<const GumboNode*, int>> pending = {{&document, 0}};
  int deepest = 0;
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    if (deepest > limit) return deepest;
    const GumboVector* children = nullptr;
    if (node->type == GUMBO_NODE_DOCUMENT) {
      children = &node->v.document.children;
    } else if (node->type == GUMBO_NODE_ELEMENT || node->type == GUMBO_NODE_TEMPLATE) {
      children = &node->v.element.children;
    }
    if (children == nullptr) continue;
    for (unsigned i = 0; i < children->length; ++i) {
      const auto* child = static_cast<const GumboNode*>(children->data[i]);
      if (child->type == GUMBO_NODE_ELEMENT || child->type == GUMBO_NODE_TEMPLATE) {
        pending.emplace_back(child, depth + 1);
      }
    }
  }
  return deepest;
}

}  // namespace

// Walks Gumbo's tree in document order and cuts it into HtmlText's blocks.
class HtmlBlocks {
 public:
  HtmlBlocks(HtmlText& html, bool keep_placeholders)
      : html_(html), keep_placeholders_(keep_placeholders) {}

  void Walk(const GumboNode& node, int parent) {
    switch (node.type) {
      case GUMBO_NODE_DOCUMENT:
        WalkChildren(node.v.document.children, -1);
        return;
      case GUMBO_NODE_ELEMENT:
      case GUMBO_NODE_TEMPLATE:
        WalkElement(node, parent);
        return;
      case GUMBO_NODE_TEXT:
      case GUMBO_NODE_WHITESPACE:
        WalkText(node, parent);
        return;
      default:  // comments and CDATA stay as they are, and end the block
        Flush();
        return;
    }
  }

  void Flush() {
    if (open_) {
      ++generation_;
      while (!text_.empty() && text_.back() == ' ') text_.pop_back();
      if (!translatable_ || text_.empty()) {
        // Nothing but kept content, or placeholders alone (<b>{name}</b>, whose text without
        // them is empty): the block stays as it is.
      } else if (in_order_) {
        for (InlineElement& e : elements_) {
          e.span.begin = std::min(e.span.begin, text_.size());
          e.span.end = std::min(e.span.end, text_.size());
        }
        // Of points nested in points (<b>%s</b>), the outermost writes the spaces around
        // them: the spaces were outside the element in the source. Children come after their
        // parents here, so the flags climb from the innermost.
        const auto is_point = [](const InlineElement& e) {
          return e.span.begin == e.span.end && !e.kept_content;
        };
        for (size_t i = elements_.size(); i-- > 0;) {
          InlineElement& e = elements_[i];
          if (e.parent < 0 || !is_point(e)) continue;
          InlineElement& parent = elements_[static_cast<size_t>(e.parent)];
          if (!is_point(parent) || parent.span.begin != e.span.begin) continue;
          parent.space_before = parent.space_before || e.space_before;
          parent.space_after = parent.space_after || e.space_after;
          e.space_before = e.space_after = false;
        }
        html_.texts_.push_back(std::move(text_));
        html_.blocks_.push_back({ByteRange{region_begin_, region_end_}, std::move(elements_)});
      } else {
        // Each text node on its own, its markup left where it is.
        for (const GumboNode* node : text_nodes_) AddRun(*node);
      }
    }
    open_ = translatable_ = false;
    in_order_ = true;
    text_.clear();
    elements_.clear();
    text_nodes_.clear();
    last_end_ = 0;
  }

 private:
  // The children of element `parent` (an index into the block's elements, -1: none); once a
  // child ends the block, the rest are in a new block, outside any element of it.
  void WalkChildren(const GumboVector& children, int parent) {
    const int generation = generation_;
    for (unsigned i = 0; i < children.length; ++i) {
      Walk(*static_cast<const GumboNode*>(children.data[i]),
           generation == generation_ ? parent : -1);
    }
  }

  void WalkElement(const GumboNode& node, int parent) {
    const GumboElement& element = node.v.element;
    if (!is_inline(element.tag)) {
      // Inside an inline element (a browser's repair of <b>text<ul>...): the block ends here,
      // and its markup cannot be rebuilt around the text that went before.
      if (inline_depth_ > 0) in_order_ = false;
      Flush();
      if (!keeps_its_text(element)) WalkChildren(element.children, -1);
      Flush();
      return;
    }
    if ((node.parse_flags & (GUMBO_INSERTION_RECONSTRUCTED_FORMATTING_ELEMENT |
                             GUMBO_INSERTION_ADOPTION_AGENCY_CLONED |
                             GUMBO_INSERTION_ADOPTION_AGENCY_MOVED |
                             GUMBO_INSERTION_FOSTER_PARENTED |
                             GUMBO_INSERTION_CONVERTED_FROM_END_TAG)) != 0) {
      in_order_ = false;  // reopened or moved by the parser: the markup cannot be rebuilt in order
    }
    if (element.original_tag.length == 0 ||
        (node.parse_flags & (GUMBO_INSERTION_BY_PARSER | GUMBO_INSERTION_IMPLIED)) != 0) {
      // Made by the parser, without bytes of its own: its content is the block's.
      if (!keeps_its_text(element)) WalkChildren(element.children, parent);
      return;
    }
    const bool kept = keeps_its_text(element);
    // An end tag the parser implied has the bytes of the tag that closed the element (</p>).
    const bool closed = element.original_end_tag.length > 0 &&
                        (node.parse_flags & GUMBO_INSERTION_IMPLICIT_END_TAG) == 0;
    if (kept && !closed && !is_void(element.tag)) {
      // Its kept content has no end in the source: it stays as it is, outside any block.
      Flush();
      return;
    }
    Open();
    const size_t begin = Offset(element.original_tag.data);
    const size_t open_end = begin + element.original_tag.length;
    Consume(begin, open_end);
    const int index = static_cast<int>(elements_.size());
    {
      InlineElement inline_element;
      inline_element.open.assign(element.original_tag.data, element.original_tag.length);
      inline_element.parent = parent;
      inline_element.span.begin = text_.size();
      // Where it holds no words, the spaces around it are kept (MarkupWriter's points).
      inline_element.space_before = !text_.empty() && text_.back() == ' ';
      elements_.push_back(std::move(inline_element));
    }
    size_t end = open_end;
    if (kept && !is_void(element.tag)) {
      const size_t close_begin = Offset(element.original_end_tag.data);
      std::string content;
      append_text_of(node, content);
      AppendText(content);
      elements_[index].kept_text = std::string(absl::StripAsciiWhitespace(
          absl::string_view(text_).substr(elements_[index].span.begin)));
      if (close_begin < open_end) {
        in_order_ = false;
      } else {
        elements_[index].kept_content = html_.source_.substr(open_end, close_begin - open_end);
      }
    } else if (!is_void(element.tag)) {
      const int generation = generation_;
      ++inline_depth_;
      WalkChildren(element.children, index);
      --inline_depth_;
      // A block-level element inside it ended the block: the element is gone with it.
      if (generation != generation_) return;
    }
    elements_[index].span.end = text_.size();
    if (closed) {
      const size_t close_begin = Offset(element.original_end_tag.data);
      end = close_begin + element.original_end_tag.length;
      Consume(close_begin, end);
      elements_[index].close.assign(element.original_end_tag.data,
                                    element.original_end_tag.length);
    }
    // An element without an end tag gets none: the browser ends it where it ended the source's
    // (and, for a formatting element, reopens it where it did), so the output's document is
    // the source's. Its words run to the block's end (inline_markup.h).
    region_end_ = std::max(region_end_, end);
  }

  void WalkText(const GumboNode& node, int parent) {
    const GumboText& text = node.v.text;
    if (node.type == GUMBO_NODE_WHITESPACE && !open_) return;  // between blocks: kept
    if (text.original_text.data == nullptr || text.original_text.length == 0) return;
    size_t begin = Offset(text.original_text.data);
    size_t end = begin + text.original_text.length;
    if (end > html_.source_.size()) return;  // not from the source (never seen; kept as is)
    if (open_) Consume(begin, end);
    if (node.type == GUMBO_NODE_TEXT) {
      text_nodes_.push_back(&node);
      while (begin < end && is_space(html_.source_[begin])) ++begin;
      while (end > begin && is_space(html_.source_[end - 1])) --end;
      if (begin < end) {
        if (!open_) {
          Open();
          Consume(begin, end);
        }
        translatable_ = true;
        region_begin_ = std::min(region_begin_, begin);
        region_end_ = std::max(region_end_, end);
      }
    }
    if (!open_) return;
    if (keep_placeholders_) {
      append_without_placeholders(
          text.text, parent, escape_html, [this](absl::string_view run) { AppendText(run); },
          text_, elements_, /*text_may_follow=*/true);
    } else {
      AppendText(text.text);
    }
  }

  void Open() {
    if (open_) return;
    open_ = true;
    region_begin_ = std::numeric_limits<size_t>::max();
    region_end_ = 0;
  }

  // The block's next source bytes: they must follow the ones before (else the parser moved
  // markup, and the block cannot be rebuilt in order).
  void Consume(size_t begin, size_t end) {
    if (begin < last_end_) in_order_ = false;
    region_begin_ = std::min(region_begin_, begin);
    last_end_ = std::max(last_end_, end);
  }

  // Appends text with its HTML white space collapsed as a browser shows it.
  void AppendText(absl::string_view text) {
    if (!text.empty() && is_space(text.front())) {
      // A space follows the elements without words that end here ("<b>%s</b> world").
      for (InlineElement& e : elements_) {
        if (e.span.begin == text_.size() && e.span.end == text_.size() && !e.kept_content) {
          e.space_after = true;
        }
      }
    }
    for (const char c : text) {
      if (is_space(c)) {
        if (!text_.empty() && text_.back() != ' ') text_ += ' ';
      } else {
        text_ += c;
      }
    }
  }

  void AddRun(const GumboNode& node) {
    const GumboText& text = node.v.text;
    size_t begin = Offset(text.original_text.data);
    size_t end = begin + text.original_text.length;
    while (begin < end && is_space(html_.source_[begin])) ++begin;
    while (end > begin && is_space(html_.source_[end - 1])) --end;
    if (begin == end) return;
    const absl::string_view content = absl::StripAsciiWhitespace(text.text);
    std::string run;
    std::vector<InlineElement> points;
    if (keep_placeholders_) {
      append_without_placeholders(
          content, -1, escape_html,
          [&run](absl::string_view piece) { run.append(piece.data(), piece.size()); }, run,
          points);
    } else {
      run = std::string(content);
    }
    while (!run.empty() && is_space(run.back())) run.pop_back();
    if (run.empty()) return;  // placeholders only: kept as they are
    for (InlineElement& point : points) {
      point.span.begin = point.span.end = std::min(point.span.begin, run.size());
    }
    html_.texts_.push_back(std::move(run));
    html_.blocks_.push_back({ByteRange{begin, end}, std::move(points)});
  }

  size_t Offset(const char* at) const { return static_cast<size_t>(at - html_.source_.data()); }

  HtmlText& html_;
  const bool keep_placeholders_;
  bool open_ = false, translatable_ = false, in_order_ = true;
  int generation_ = 0;    // blocks ended so far
  int inline_depth_ = 0;  // inline elements being walked
  std::string text_;
  std::vector<InlineElement> elements_;
  std::vector<const GumboNode*> text_nodes_;
  size_t region_begin_ = 0, region_end_ = 0, last_end_ = 0;
};

absl::StatusOr<HtmlText> HtmlText::Parse(std::string source, bool keep_placeholders) {
  if (source.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError("an HTML text over 2 GiB");
  }
  if (const size_t tags = count_start_tags(source); tags > kMaxStartTags) {
    return absl::InvalidArgumentError(absl::StrCat("HTML with ", tags,
                                                   " start tags; the limit is ", kMaxStartTags));
  }
  HtmlText html;
  html.source_ = std::move(source);
  const size_t budget = kTreeBytesPerSourceByte * html.source_.size() + kTreeBytesBase;
  GumboArena arena(budget);
  const GumboOutput* output = arena.Parse(html.source_);
  if (output == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTML whose parse tree would take over ", budget >> 20, " MiB (",
        kTreeBytesPerSourceByte, " bytes per byte of text, and ", kTreeBytesBase >> 20,
        " MiB): unclosed formatting elements, which HTML reopens in every later block"));
  }
  // The walk below recurses once per element level.
  if (const int depth = element_depth(*output->document, kMaxDepth); depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTML elements nested more than ", kMaxDepth, " deep (the limit; XML's is the same)"));
  }
  HtmlBlocks blocks(html, keep_placeholders);
  blocks.Walk(*output->document, -1);
  blocks.Flush();
  return html;
}

bool HtmlText::needs_word_links() const {
  return std::any_of(blocks_.begin(), blocks_.end(),
                     [](const Block& block) { return !block.elements.empty(); });
}

std::string HtmlText::Rebuild(const std::vector<std::string>& translations,
                              const std::vector<WordLinks>& links) const {
  CheckRebuild("HtmlText", translations, links);
  std::string out;
  out.reserve(source_.size() + source_.size() / 4);
  size_t copied = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& block = blocks_[i];
    out.append(source_, copied, block.region.begin - copied);
    if (block.elements.empty()) {
      out += escape_html(translations[i]);
    } else {
      out += place_inline_markup(texts_[i], translations[i], block.elements, links[i], escape_html);
    }
    copied = block.region.end;
  }
  out.append(source_, copied, std::string::npos);
  return out;
}

}  // namespace xlate
