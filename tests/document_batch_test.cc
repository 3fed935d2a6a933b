// DocumentBatch (document/document_batch.h): the pipeline the CLI, gRPC and REST share, from
// entries to runs and from the runs' sentence translations and alignments back to entries.
#include "document/document_batch.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "absl/strings/match.h"
#include "document/html_text.h"

namespace xlate {
namespace {

// Sentence s of `runs` "translated" word for word by `translate`, with an alignment in which
// target piece i attends source piece i alone (one piece a word): what the engine hands back
// for a translation that keeps the word order.
struct WordForWord {
  std::vector<std::string> translations;
  std::vector<AlignedSentence> aligned;
};

WordForWord word_for_word(const SegmentedTexts& runs,
                          const std::function<std::string(const std::string&)>& translate) {
  WordForWord out;
  for (const std::string& source : runs.sentences()) {
    std::string target;
    AlignedSentence sentence;
    sentence.source = source;
    for (const ByteRange& word : words_of(source)) {
      const std::string translated = translate(source.substr(word.begin, word.end - word.begin));
      sentence.source_pieces.push_back("\u2581" + source.substr(word.begin, word.end - word.begin));
      sentence.target_pieces.push_back("\u2581" + translated);
      target += (target.empty() ? "" : " ") + translated;
    }
    const size_t width = sentence.source_pieces.size() + 1;
    sentence.weights.assign(sentence.target_pieces.size() * width, 0.0f);
    for (size_t t = 0; t < sentence.target_pieces.size(); ++t) sentence.weights[t * width + t] = 1;
    sentence.target = target;
    out.translations.push_back(target);
    out.aligned.push_back(std::move(sentence));
  }
  return out;
}

std::string german(const std::string& word) {
  static const std::map<std::string, std::string> words = {
      {"The", "Der"}, {"dog", "Hund"}, {"runs.", "läuft."}, {"A", "Eine"},
      {"cat", "Katze"}, {"sleeps.", "schläft."}, {"Hello", "Hallo"}, {"world.", "Welt."}};
  const auto found = words.find(word);
  return found == words.end() ? word : found->second;
}

TEST(DocumentBatch, FormatsAreNamedByMimeTypeAndOthersRefusedByName) {
  EXPECT_EQ(*entry_format("", "mime_type"), EntryFormat::kPlainText);
  EXPECT_EQ(*entry_format("TEXT/Plain", "mime_type"), EntryFormat::kPlainText);
  EXPECT_EQ(*entry_format("text/HTML", "mime_type"), EntryFormat::kHtml);
  EXPECT_EQ(*entry_format("text/xml", "--mime_type"), EntryFormat::kXml);
  auto refused = entry_format("application/pdf", "--mime_type");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "--mime_type \"application/pdf\" is not supported; it must be text/plain (or "
            "empty), text/html, text/xml, text/markdown, application/x-subrip, text/vtt, the "
            "type of a .docx, .pptx, .xlsx, .odt, .odp or .ods file, application/epub+zip, "
            "text/x-gettext-translation or text/x-gettext-translation-template");
  EXPECT_EQ(*entry_format("text/x-gettext-translation-template", "mime_type"),
            EntryFormat::kGettext);
  // A client's long value is quoted by its start.
  auto long_value = entry_format(std::string(5000, 'x'), "mime_type");
  EXPECT_LT(long_value.status().message().size(), refused.status().message().size() + 80);
  EXPECT_FALSE(is_document(EntryFormat::kPlainText, false));
  EXPECT_TRUE(is_document(EntryFormat::kPlainText, true));
  EXPECT_TRUE(is_document(EntryFormat::kHtml, false));
}

TEST(DocumentBatch, EntriesBecomeRunsInOrderAndComeBackRebuilt) {
  auto batch = DocumentBatch::Parse(
      {"<p>The <b>dog</b> runs.</p><p>A cat sleeps.</p>", "<br>", "<i>Hello</i> world."},
      EntryFormat::kHtml, false, "contents");
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->entry_count(), 3u);
  EXPECT_EQ(batch->runs(),
            (std::vector<std::string>{"The dog runs.", "A cat sleeps.", "Hello world."}));
  EXPECT_TRUE(batch->needs_word_links());
  // The second entry has no text: its runs are the empty range at 2.
  EXPECT_EQ(batch->first_run(0), 0u);
  EXPECT_EQ(batch->first_run(1), 2u);
  EXPECT_EQ(batch->first_run(2), 2u);
  EXPECT_EQ(batch->entry_of_run(0), 0u);
  EXPECT_EQ(batch->entry_of_run(1), 0u);
  EXPECT_EQ(batch->entry_of_run(2), 2u);

  auto runs = SegmentedTexts::Split(batch->runs(), "en", Segmentation::kSentences);
  ASSERT_TRUE(runs.ok());
  const WordForWord translated = word_for_word(*runs, german);
  // Each tag goes around the word its word was linked to.
  EXPECT_EQ(*batch->Rebuild(*runs, translated.translations, translated.aligned),
            (std::vector<std::string>{"<p>Der <b>Hund</b> läuft.</p><p>Eine Katze schläft.</p>",
                                      "<br>", "<i>Hallo</i> Welt."}));
}

TEST(DocumentBatch, PlaceholdersOfPlainTextGoBackOnTheirWords) {
  auto batch = DocumentBatch::Parse({"Hello {name} world.", "The dog runs."},
                                    EntryFormat::kPlainText, true, "");
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->runs(), (std::vector<std::string>{"Hello world.", "The dog runs."}));
  EXPECT_TRUE(batch->needs_word_links());
  auto runs = SegmentedTexts::Split(batch->runs(), "en", Segmentation::kWholeText);
  ASSERT_TRUE(runs.ok());
  const WordForWord translated = word_for_word(*runs, german);
  const std::vector<std::string> entries =
      *batch->Rebuild(*runs, translated.translations, translated.aligned);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_NE(entries[0].find("{name}"), std::string::npos) << entries[0];
  EXPECT_EQ(entries[1], "Der Hund läuft.");
}

TEST(DocumentBatch, AnEntryAParserRefusesIsNamed) {
  std::string deep;
  for (int i = 0; i <= HtmlText::kMaxDepth; ++i) deep += "<span>";
  deep += "text";
  auto named = DocumentBatch::Parse({"<p>fine</p>", deep}, EntryFormat::kHtml, false, "contents");
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(named.status().message(), "contents[1]: ")) << named.status();
  // Without a name (the CLI's one document), the parser's message alone.
  auto unnamed = DocumentBatch::Parse({deep}, EntryFormat::kHtml, false, "");
  ASSERT_FALSE(unnamed.ok());
  EXPECT_FALSE(absl::StartsWith(unnamed.status().message(), "[")) << unnamed.status();
  auto xml = DocumentBatch::Parse({"<a><b></a>"}, EntryFormat::kXml, false, "contents");
  ASSERT_FALSE(xml.ok());
  EXPECT_TRUE(absl::StartsWith(xml.status().message(), "contents[0]: ")) << xml.status();
}

}  // namespace
}  // namespace xlate
