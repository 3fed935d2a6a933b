#include "document/markdown_text.h"

#include <cmark.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "document/inline_markup.h"

namespace xlate {
namespace {

struct NodeFreer {
  void operator()(cmark_node* node) const { cmark_node_free(node); }
};
using Tree = std::unique_ptr<cmark_node, NodeFreer>;

Tree parse(const std::string& source) {
  return Tree(cmark_parse_document(source.data(), source.size(), CMARK_OPT_DEFAULT));
}

// The deepest nesting of the tree's nodes.
int depth_of(cmark_node* root) {
  int depth = 0, deepest = 0;
  cmark_iter* iter = cmark_iter_new(root);
  for (cmark_event_type event = cmark_iter_next(iter); event != CMARK_EVENT_DONE;
       event = cmark_iter_next(iter)) {
    if (event == CMARK_EVENT_ENTER && cmark_node_first_child(cmark_iter_get_node(iter))) {
      deepest = std::max(deepest, ++depth);
    } else if (event == CMARK_EVENT_EXIT) {
      --depth;
    }
  }
  cmark_iter_free(iter);
  return deepest;
}

// A paragraph or heading as one text, its emphasis, links and kept inlines as inline elements
// whose markers (document/inline_markup.h) stand for them.
struct Block {
  cmark_node* node = nullptr;
  std::string text;
  std::vector<InlineElement> elements;
  std::vector<cmark_node*> nodes;  // per element
};

class BlockReader {
 public:
  explicit BlockReader(Block& block) : block_(block) {}

  void Read(cmark_node* parent, int parent_index) {
    for (cmark_node* child = cmark_node_first_child(parent); child != nullptr;
         child = cmark_node_next(child)) {
      switch (cmark_node_get_type(child)) {
        case CMARK_NODE_TEXT:
          block_.text += cmark_node_get_literal(child);
          break;
        case CMARK_NODE_SOFTBREAK:
          block_.text += ' ';
          break;
        case CMARK_NODE_LINEBREAK:
          Add(child, parent_index, 'k');
          block_.text += ' ';
          break;
        case CMARK_NODE_CODE: {
          // Its text is the sentence's; the code itself comes back in place of its words.
          const int index = Add(child, parent_index, 'k');
          InlineElement& code = block_.elements[index];
          code.kept_content = code.open;
          code.open.clear();
          code.kept_text = cmark_node_get_literal(child);
          block_.text += code.kept_text;
          block_.elements[index].span.end = block_.text.size();
          break;
        }
        case CMARK_NODE_EMPH:
        case CMARK_NODE_STRONG:
        case CMARK_NODE_LINK: {
          const int index = Add(child, parent_index, 'o');
          block_.elements[index].close = node_marker('c');
          Read(child, index);
          block_.elements[index].span.end = block_.text.size();
          break;
        }
        default:  // images, raw HTML: kept, in place of no words
          Add(child, parent_index, 'k');
          break;
      }
    }
  }

 private:
  int Add(cmark_node* node, int parent_index, char kind) {
    block_.nodes.push_back(node);
    return add_marked_element(block_.elements, block_.text.size(), kind, parent_index);
  }

  Block& block_;
};

// The paragraphs and headings of a tree with words, in document order.
std::vector<Block> blocks_of(cmark_node* root) {
  std::vector<Block> blocks;
  cmark_iter* iter = cmark_iter_new(root);
  for (cmark_event_type event = cmark_iter_next(iter); event != CMARK_EVENT_DONE;
       event = cmark_iter_next(iter)) {
    cmark_node* node = cmark_iter_get_node(iter);
    const cmark_node_type type = cmark_node_get_type(node);
    if (event != CMARK_EVENT_ENTER ||
        (type != CMARK_NODE_PARAGRAPH && type != CMARK_NODE_HEADING)) {
      continue;
    }
    Block block;
    block.node = node;
    BlockReader(block).Read(node, -1);
    if (block.text.find_first_not_of(" \t\n") != std::string::npos) blocks.push_back(std::move(block));
  }
  cmark_iter_free(iter);
  return blocks;
}

// A new node like `node`: its type, literal, destination and title, and (`deep`) copies of its
// children.
cmark_node* copy_of(cmark_node* node, bool deep) {
  cmark_node* copy = cmark_node_new(cmark_node_get_type(node));
  if (const char* literal = cmark_node_get_literal(node)) cmark_node_set_literal(copy, literal);
  const cmark_node_type type = cmark_node_get_type(node);
  if (type == CMARK_NODE_LINK || type == CMARK_NODE_IMAGE) {
    cmark_node_set_url(copy, cmark_node_get_url(node));
    cmark_node_set_title(copy, cmark_node_get_title(node));
  }
  for (cmark_node* child = deep ? cmark_node_first_child(node) : nullptr; child != nullptr;
       child = cmark_node_next(child)) {
    cmark_node_append_child(copy, copy_of(child, true));
  }
  return copy;
}

// Replaces the block's inlines by the placed translation: text, copies of its emphasis and
// links around their words, and copies of the kept inlines where their markers stand.
void replace_inlines(const Block& block, const std::string& placed) {
  // Built in a detached paragraph while the old inlines (which the copies read) still exist.
  cmark_node* holder = cmark_node_new(CMARK_NODE_PARAGRAPH);
  std::vector<cmark_node*> open = {holder};
  const auto add_text = [&](absl::string_view text) {
    cmark_node* node = cmark_node_new(CMARK_NODE_TEXT);
    cmark_node_set_literal(node, std::string(text).c_str());
    cmark_node_append_child(open.back(), node);
  };
  for_each_placed_piece(placed, add_text, [&](char kind, size_t index) {
    if (kind == 'c') {
      if (open.size() > 1) open.pop_back();
      return;
    }
    cmark_node* copy = copy_of(block.nodes[index], kind != 'o');
    cmark_node_append_child(open.back(), copy);
    if (kind == 'o') open.push_back(copy);
  });
  while (cmark_node* old = cmark_node_first_child(block.node)) {
    cmark_node_unlink(old);
    cmark_node_free(old);
  }
  while (cmark_node* moved = cmark_node_first_child(holder)) {
    cmark_node_unlink(moved);
    cmark_node_append_child(block.node, moved);
  }
  cmark_node_free(holder);
}

}  // namespace

absl::StatusOr<MarkdownText> MarkdownText::Parse(std::string source) {
  if (source.size() > kMaxBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a Markdown text of ", source.size(),
                                                   " bytes; the limit is ", kMaxBytes));
  }
  Tree tree = parse(source);
  if (const int depth = depth_of(tree.get()); depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat("Markdown nested ", depth,
                                                   " deep; the limit is ", kMaxDepth));
  }
  MarkdownText markdown;
  for (Block& block : blocks_of(tree.get())) {
    markdown.needs_word_links_ = markdown.needs_word_links_ || !block.elements.empty();
    markdown.texts_.push_back(std::move(block.text));
  }
  markdown.source_ = std::move(source);
  return markdown;
}

std::string MarkdownText::Rebuild(const std::vector<std::string>& translations,
                                  const std::vector<WordLinks>& links) const {
  CheckRebuild("MarkdownText", translations, links);
  Tree tree = parse(source_);
  std::vector<Block> blocks = blocks_of(tree.get());
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string placed = place_node_markers(
        texts_[i], translations[i], blocks[i].elements,
        blocks[i].elements.empty() ? WordLinks() : links[i]);
    replace_inlines(blocks[i], placed);
  }
  char* rendered = cmark_render_commonmark(tree.get(), CMARK_OPT_DEFAULT, /*width=*/0);
  std::string out(rendered);
  std::free(rendered);
  return out;
}

}  // namespace xlate
