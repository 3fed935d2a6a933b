// Word links read from attention (document/word_links.h) and inline markup placed by them
// (document/inline_markup.h).
#include "document/inline_markup.h"

#include <gtest/gtest.h>

#include "document/word_links.h"

namespace xlate {
namespace {

WordLinks links_of(const std::string& source, const std::string& target,
                   std::vector<std::pair<int, int>> pairs) {
  WordLinks links;
  links.source_words = words_of(source);
  links.target_words = words_of(target);
  links.links = std::move(pairs);
  return links;
}

std::string angle_escape(absl::string_view text) {
  std::string out;
  for (const char c : text) out += c == '<' ? std::string("&lt;") : std::string(1, c);
  return out;
}

InlineElement element(size_t begin, size_t end, const std::string& name, int parent = -1) {
  InlineElement e;
  e.span = {begin, end};
  e.open = "<" + name + ">";
  e.close = "</" + name + ">";
  e.parent = parent;
  return e;
}

TEST(WordLinks, WordsAreRunsOfCharactersOtherThanWhiteSpace) {
  const std::vector<ByteRange> words = words_of("  Ein  Hund\u00a0l\u00e4uft. ");
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0].begin, 2u);
  EXPECT_EQ(words[0].end, 5u);
  EXPECT_EQ(words[1].begin, 7u);   // "Hund", before a no-break space (White_Space)
  EXPECT_EQ(words[2].begin, 13u);  // "läuft." (ä is two bytes)
  EXPECT_EQ(words[2].end, 20u);
  EXPECT_TRUE(words_of(" \n").empty());
}

TEST(WordLinks, EachSourceWordIsLinkedToTheTargetWordThatAttendsItMost) {
  AlignedSentence sentence;
  sentence.source = "the red car";
  sentence.target = "das rote Auto";
  sentence.source_pieces = {"\u2581the", "\u2581red", "\u2581ca", "r"};
  sentence.target_pieces = {"\u2581das", "\u2581rot", "e", "\u2581Auto"};
  // Rows: target pieces; columns: the source pieces and the end token (ignored).
  sentence.weights = {0.1f, 0.1f, 0.4f, 0.4f, 0.0f,   // das: most on car
                      0.0f, 0.9f, 0.05f, 0.05f, 0.0f,  // rot -> red
                      0.0f, 0.5f, 0.3f, 0.2f, 0.0f,    // e: red (0.7 with rot's 0.9, averaged)
                      0.3f, 0.0f, 0.3f, 0.4f, 0.0f};   // Auto -> car, and the most on "the"
  const WordLinks links = link_words(sentence);
  ASSERT_EQ(links.source_words.size(), 3u);
  ASSERT_EQ(links.target_words.size(), 3u);
  // the -> Auto (0.3 against das's 0.1), red -> rote (0.7), car -> das (0.8 against Auto's
  // 0.7): the links follow the attention, right or wrong.
  EXPECT_EQ(links.links, (std::vector<std::pair<int, int>>{{0, 2}, {1, 1}, {2, 0}}));

  // Weights of another shape link nothing (the words are still there).
  sentence.weights.pop_back();
  EXPECT_TRUE(link_words(sentence).links.empty());
  EXPECT_EQ(link_words(sentence).target_words.size(), 3u);
}

TEST(WordLinks, ALonePieceMarkerJoinsTheNextPiecesWord) {
  AlignedSentence sentence;
  sentence.source = "(hi) x";
  sentence.target = "(hallo) x";
  sentence.source_pieces = {"\u2581", "(", "hi", ")", "\u2581x"};
  sentence.target_pieces = {"\u2581(", "hallo", ")", "\u2581x"};
  sentence.weights.assign(4 * 6, 0.f);
  for (int t = 0; t < 3; ++t) sentence.weights[t * 6 + 2] = 1.f;  // "(hallo)" -> "hi"
  sentence.weights[3 * 6 + 4] = 1.f;                              // x -> x
  EXPECT_EQ(link_words(sentence).links, (std::vector<std::pair<int, int>>{{0, 0}, {1, 1}}));
}

TEST(WordLinks, TextLinksJoinTheSentencesAtTheirPlaces) {
  AlignedSentence one{"One.", "Eins.", {"\u2581One", "."}, {"\u2581Eins", "."},
                      {1.f, 0.f, 0.f, 0.f, 1.f, 0.f}, {}};
  AlignedSentence two{"Two three.", "Zwei drei.", {"\u2581Two", "\u2581three", "."},
                      {"\u2581Zwei", "\u2581drei", "."},
                      {1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f}, {}};
  const WordLinks links = link_text_words("One.  Two three.", "Eins.  Zwei drei.", {one, two});
  EXPECT_EQ(links.links, (std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {2, 2}}));
  // A sentence that is not in the text adds nothing.
  AlignedSentence missing = two;
  missing.source = "Four.";
  EXPECT_EQ(link_text_words("One.  Two three.", "Eins.  Zwei drei.", {one, missing}).links,
            (std::vector<std::pair<int, int>>{{0, 0}}));
}

// A glossary's term: its source words go with its target's words, whatever the attention
// says (the search forced them), and no other source word takes those target words.
TEST(WordLinks, GlossaryTermsLinkTheirOwnWords) {
  AlignedSentence sentence;
  sentence.source = "Restart the server before the update.";
  sentence.target = "Zur Aktualisierung vor dem Server.";
  for (const char* piece : {"\u2581Restart", "\u2581the", "\u2581server", "\u2581before",
                            "\u2581the", "\u2581update", "."}) {
    sentence.source_pieces.push_back(piece);
  }
  for (const char* piece : {"\u2581Zur", "\u2581Aktualisierung", "\u2581vor", "\u2581dem",
                            "\u2581Server", "."}) {
    sentence.target_pieces.push_back(piece);
  }
  // Attention that gets "update" wrong: every source word attends most from target word 4
  // ("Server."), except "Restart" (Zur) and "before" (vor).
  const size_t width = sentence.source_pieces.size() + 1;
  sentence.weights.assign(sentence.target_pieces.size() * width, 0.f);
  for (size_t s = 0; s < sentence.source_pieces.size(); ++s) sentence.weights[4 * width + s] = 1.f;
  sentence.weights[0 * width + 0] = 2.f;
  sentence.weights[2 * width + 3] = 2.f;
  const std::vector<std::pair<int, int>> attention_only = {{0, 0}, {1, 4}, {2, 4}, {3, 2},
                                                           {4, 4}, {5, 4}};
  EXPECT_EQ(link_words(sentence).links, attention_only);
  sentence.terms = {{"update", "Aktualisierung"}, {"server", "Server"}};
  EXPECT_EQ(link_words(sentence).links,
            (std::vector<std::pair<int, int>>{{0, 0}, {2, 4}, {3, 2}, {5, 1}}));
  // Placed by these links, each tag goes on its term, in the translation's order.
  EXPECT_EQ(place_inline_markup(sentence.source, sentence.target,
                                {element(12, 18, "b"), element(30, 36, "a")},
                                link_words(sentence), angle_escape),
            "Zur <a>Aktualisierung</a> vor dem <b>Server</b>.");
  // A target the translation does not hold, or a source term only inside a word, links
  // nothing of its own.
  sentence.terms = {{"update", "Neuerung"}, {"art", "Kunst"}};
  EXPECT_EQ(link_words(sentence).links, attention_only);
  // A term of two words to a target of one, and one of one word to a target of two.
  AlignedSentence names;
  names.source = "New York is big";
  names.target = "NYC ist gross";
  names.terms = {{"New York", "NYC"}, {"big", "sehr gross"}};
  EXPECT_EQ(link_words(names).links, (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}}));
  names.target = "NYC ist sehr gross";
  EXPECT_EQ(link_words(names).links,
            (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {3, 2}, {3, 3}}));
}

TEST(InlineMarkup, AnElementGoesAroundTheWordsLinkedToItsWords) {
  const std::string source = "A girl in a karate uniform.";
  const std::string target = "Ein M\u00e4dchen in einem Karateanzug.";
  const WordLinks links =
      links_of(source, target, {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 4}});
  EXPECT_EQ(place_inline_markup(source, target, {element(2, 6, "b")}, links, angle_escape),
            "Ein <b>M\u00e4dchen</b> in einem Karateanzug.");
  // Two source words to one target word: the element of both holds it once.
  EXPECT_EQ(place_inline_markup(source, target, {element(12, 27, "i")}, links, angle_escape),
            "Ein M\u00e4dchen in einem <i>Karateanzug.</i>");
  // An element around every source word is around every target word, linked or not.
  EXPECT_EQ(place_inline_markup(source, target, {element(0, 27, "a")},
                                links_of(source, target, {{1, 1}}), angle_escape),
            "<a>Ein M\u00e4dchen in einem Karateanzug.</a>");
}

TEST(InlineMarkup, PunctuationOutsideTheSourceTagStaysOutsideTheTargetTag) {
  // "a red <b>bike</b>." and "(<i>big</i>)": the tags cut their words before punctuation.
  EXPECT_EQ(place_inline_markup("a red bike.", "ein rotes Fahrrad.", {element(6, 10, "b")},
                                links_of("a red bike.", "ein rotes Fahrrad.",
                                         {{0, 0}, {1, 1}, {2, 2}}),
                                angle_escape),
            "ein rotes <b>Fahrrad</b>.");
  EXPECT_EQ(place_inline_markup("(big)", "(gro\u00df)", {element(1, 4, "i")},
                                links_of("(big)", "(gro\u00df)", {{0, 0}}), angle_escape),
            "(<i>gro\u00df</i>)");
  // A tag that held the punctuation holds it in the translation too.
  EXPECT_EQ(place_inline_markup("a red bike.", "ein rotes Fahrrad.", {element(6, 11, "b")},
                                links_of("a red bike.", "ein rotes Fahrrad.",
                                         {{0, 0}, {1, 1}, {2, 2}}),
                                angle_escape),
            "ein rotes <b>Fahrrad.</b>");
}

TEST(InlineMarkup, ChildrenStayInsideTheirParentsAndSiblingsFollowTheirWords) {
  // "<a>click <b>here</b></a> now" -> "klicke hier jetzt"
  EXPECT_EQ(place_inline_markup("click here now", "klicke hier jetzt", {element(0, 10, "a"), element(6, 10, "b", 0)},
                                links_of("click here now", "klicke hier jetzt",
                                         {{0, 0}, {1, 1}, {2, 2}}),
                                angle_escape),
            "<a>klicke <b>hier</b></a> jetzt");
  // A parent holds the words linked to its children's words, wherever they are.
  EXPECT_EQ(place_inline_markup("click here now", "klicke hier jetzt", {element(0, 10, "a"), element(6, 10, "b", 0)},
                                links_of("click here now", "klicke hier jetzt",
                                         {{0, 0}, {1, 2}, {2, 2}}),
                                angle_escape),
            "<a>klicke hier <b>jetzt</b></a>");
  // Siblings whose words swap places in the translation swap with them.
  EXPECT_EQ(place_inline_markup("red car", "Auto rot", {element(0, 3, "b"), element(4, 7, "i")},
                                links_of("red car", "Auto rot", {{0, 1}, {1, 0}}), angle_escape),
            "<i>Auto</i> <b>rot</b>");
  // German puts the verb last: "because he <b>was</b> <i>tired</i>." The sentence's full stop,
  // which the translation's last word carries, stays outside the tag as in the source.
  const std::string source = "because he was tired.", target = "weil er m\u00fcde war.";
  EXPECT_EQ(place_inline_markup(source, target, {element(11, 14, "b"), element(15, 20, "i")},
                                links_of(source, target, {{0, 0}, {1, 1}, {2, 3}, {3, 2}}),
                                angle_escape),
            "weil er <i>m\u00fcde</i> <b>war</b>.");
  // Siblings linked to the same words: the first in the translation's order takes them, the
  // other comes after it without words; children move with their parent.
  EXPECT_EQ(place_inline_markup("a big red car", "ein rotes Auto",
                                {element(2, 5, "b"), element(6, 13, "i"), element(10, 13, "u", 1)},
                                links_of("a big red car", "ein rotes Auto",
                                         {{0, 0}, {1, 1}, {2, 1}, {3, 2}}),
                                angle_escape),
            "ein <b>rotes</b> <i><u>Auto</u></i>");
  EXPECT_EQ(place_inline_markup("a big car", "ein Auto", {element(2, 5, "b"), element(6, 9, "i")},
                                links_of("a big car", "ein Auto", {{0, 0}, {1, 1}, {2, 1}}),
                                angle_escape),
            "ein <b>Auto</b><i></i>");
  // A kept element found verbatim moves with the words too: "<b>list</b> with <code>ls</code>".
  InlineElement code = element(10, 12, "code");
  code.kept_content = code.kept_text = "ls";
  EXPECT_EQ(place_inline_markup("list with ls", "mit ls auflisten", {element(0, 4, "b"), code},
                                links_of("list with ls", "mit ls auflisten",
                                         {{0, 2}, {1, 0}, {2, 1}}),
                                angle_escape),
            "mit <code>ls</code> <b>auflisten</b>");
}

TEST(InlineMarkup, AnElementWithoutItsEndTagRunsToTheEnd) {
  InlineElement bold = element(2, 5, "b");
  bold.close.clear();  // "a <b>big dog runs": HTML whose end tag was left out
  EXPECT_EQ(place_inline_markup("a big dog runs", "ein gro\u00dfer Hund rennt", {bold},
                                links_of("a big dog runs", "ein gro\u00dfer Hund rennt",
                                         {{0, 0}, {1, 1}, {2, 2}, {3, 3}}),
                                angle_escape),
            "ein <b>gro\u00dfer Hund rennt");
}

TEST(InlineMarkup, ElementsWithoutTextOrLinksGoBeforeTheNextLinkedWord) {
  InlineElement image;
  image.span = {2, 2};
  image.open = "<img src=d.png>";
  EXPECT_EQ(place_inline_markup("a dog", "ein Hund", {image},
                                links_of("a dog", "ein Hund", {{0, 0}, {1, 1}}), angle_escape),
            "ein <img src=d.png>Hund");
  // "a <b>big</b> dog" whose "big" no target word is linked to: the element holds nothing,
  // before the next source word's target.
  EXPECT_EQ(place_inline_markup("a big dog", "ein Hund", {element(2, 5, "b")},
                                links_of("a big dog", "ein Hund", {{0, 0}, {2, 1}}),
                                angle_escape),
            "ein <b></b>Hund");
}

TEST(InlineMarkup, KeptContentReplacesItsTranslatedWordsAndTextIsEscaped) {
  InlineElement code = element(4, 14, "code");
  code.kept_content = "make &amp; all";
  EXPECT_EQ(place_inline_markup("Run make & all now", "Starte make & all < jetzt", {code},
                                links_of("Run make & all now", "Starte make & all < jetzt",
                                         {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 5}}),
                                angle_escape),
            "Starte <code>make &amp; all</code> &lt; jetzt");
  // The translation has the kept text verbatim: that is what is replaced, whatever the links
  // say, and the punctuation around it stays.
  code.kept_text = "make & all";
  EXPECT_EQ(place_inline_markup("Run make & all now", "Starte (make & all).", {code},
                                links_of("Run make & all now", "Starte (make & all).",
                                         {{0, 0}, {1, 0}, {2, 1}, {3, 2}}),
                                angle_escape),
            "Starte (<code>make &amp; all</code>).");
  // Two kept elements in one word ("<kbd>Ctrl</kbd>+<kbd>C</kbd>"), each on its own bytes.
  InlineElement ctrl = element(4, 8, "kbd"), c = element(9, 10, "kbd");
  ctrl.kept_content = ctrl.kept_text = "Ctrl";
  c.kept_content = c.kept_text = "C";
  EXPECT_EQ(place_inline_markup("run Ctrl+C now", "Dr\u00fccke Ctrl+C, um", {ctrl, c},
                                links_of("run Ctrl+C now", "Dr\u00fccke Ctrl+C, um",
                                         {{0, 0}, {1, 1}, {2, 2}}),
                                angle_escape),
            "Dr\u00fccke <kbd>Ctrl</kbd>+<kbd>C</kbd>, um");
  EXPECT_THROW(place_inline_markup("x", "a b", {}, links_of("x", "a", {}), angle_escape),
               std::logic_error);
}

}  // namespace
}  // namespace xlate
