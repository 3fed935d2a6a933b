#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/xlate/commands.h"
#include "engine/placement_flags.h"
#include "engine/target_language.h"
#include "cli/xlate/attention_pictures.h"
#include "document/document_batch.h"
#include "document/glossary_terms.h"
#include "document/inline_markup.h"
#include "document/text_segments.h"
#include "engine/translator.h"

ABSL_FLAG(std::string, model_dir, "",
          "model directory (config.json, model.safetensors, spm.model); default: the shipped "
          "English-German model, " XLATE_DEFAULT_MODEL_DIR);
ABSL_FLAG(std::string, input, "", "file of source text (default: stdin); each line is "
          "translated as text, cut into sentences (see --split_sentences)");
ABSL_FLAG(bool, split_sentences, true,
          "cut each line into sentences (ICU's rules for the model's source language) and keep "
          "its whitespace; false: each line is one sentence (one-sentence-per-line test sets)");
ABSL_FLAG(std::string, output, "", "file for the translations (default: stdout)");
ABSL_FLAG(std::string, target_language, "",
          "BCP-47 code of the output language, for a multilingual model (an OPUS-MT model with "
          "language tokens such as >>deu<<, M2M100, NLLB-200); such a model refuses to start "
          "without one");
ABSL_FLAG(std::string, target_prefix, "",
          "text every translation starts with (the search continues from its tokens); needs "
          "--split_sentences=false, so that each line is one sentence");
ABSL_FLAG(std::string, source_language, "",
          "BCP-47 code of the input language, for M2M100 and NLLB-200 (whose sources start with "
          "their language's token); such a model refuses to start without one");
ABSL_FLAG(int, beam_size, 4, "beam size; 1 = greedy search");
ABSL_FLAG(double, length_penalty, 0.6, "length penalty alpha of ((5+|Y|)/6)^alpha");
ABSL_FLAG(int, max_extra_length, 50,
          "output tokens <= input tokens + this, where input tokens are the sentence's "
          "SentencePiece pieces (and a multilingual model's source language token), the end "
          "token not counted");
ABSL_FLAG(double, repetition_penalty, 1.0,
          "penalty on the logits of tokens already in the output, in (0, 10]; > 1 discourages "
          "repeats (CTranslate2's repetition_penalty); 1 = off");
ABSL_FLAG(int, no_repeat_ngram_size, 0,
          "no n-gram of this size occurs twice in an output, in [0, 64]; 0 = off");
ABSL_FLAG(bool, keep_placeholders, false,
          "pass placeholders through verbatim ({name}, {0}, {{var}}, ${var}, ICU MessageFormat "
          "arguments, %s, %1$s, %(name)s ...): the text is translated without them and each is "
          "put back by the alignment next to its word (as the server's "
          "options.keep_placeholders); not with --n_best > 1, --scores, --target_prefix or "
          "--attention_png");
ABSL_FLAG(std::string, glossary, "",
          "glossary file (TSV source<TAB>target, or Cloud Translation's CSV layouts): where a "
          "sentence holds a source term, every hypothesis contains its target (constrained beam "
          "search); a term left out is named on stderr");
ABSL_FLAG(bool, glossary_ignore_case, false, "match --glossary's source terms case-folded");
ABSL_FLAG(int, constrained_beam_size, 0,
          "the beam of each sentence that holds --glossary terms (0: --beam_size); a wider beam "
          "than plain text's translates them better (docs/benchmarks.md, terminology)");
ABSL_FLAG(std::string, mime_type, "",
          "text/plain (each line translated as text), or text/html, text/xml or the Office Open "
          "XML type of a .docx, .pptx or .xlsx file: the whole input is one document whose "
          "paragraphs are translated whole, their inline tags or formatting put back on the "
          "aligned words (as the server's mime_type); not with --n_best > 1, --scores, "
          "--target_prefix or --attention_png. Default: from --input's extension (.html, .htm, "
          ".xhtml, .xml, .docx, .pptx, .xlsx), else text/plain");
ABSL_FLAG(int, n_best, 1, "hypotheses per sentence; > 1 writes `index ||| text ||| score`");
ABSL_FLAG(bool, scores, false, "prefix each translation with its score and a tab");
ABSL_FLAG(int, batch_size, 32,
          "sentences decoding at once, per worker (a finished sentence's place goes to the "
          "next)");
ABSL_FLAG(int, threads, 0, "CPU threads (0 = all cores)");
ABSL_FLAG(int, workers, 1,
          "batches translated at once on the CPU, each on --threads / workers threads (on 2 "
          "cores, 2 workers of 1 thread translate short sentences faster than 1 of 2)");
ABSL_FLAG(std::string, device, "auto", "auto, cpu or cuda (auto: CUDA when a GPU is visible)");
ABSL_FLAG(std::string, attention_png, "",
          "directory for pictures of each sentence's cross-attention (created if missing): "
          "line<N>-sentence<K>-layer<L>.png per input line N, sentence K of the line (both "
          "1-based) and decoder layer L (0-based), a panel per head and their average, as the "
          "paper's Figures 3-5; needs a build with PLplot");
ABSL_FLAG(std::string, compute_type, "auto",
          "auto, float32, float16, bfloat16 or int8 (auto: float16 on CUDA, float32 on the "
          "CPU; int8: int8 weights and products on the CPU)");

namespace xlate::tools {
namespace {

// Lines are translated in chunks so that output streams out and memory stays bounded.
constexpr size_t kChunkLines = 512;

absl::StatusOr<TranslationOptions> options_from_flags() {
  TranslationOptions options;
  options.beam_size = absl::GetFlag(FLAGS_beam_size);
  options.length_penalty = static_cast<float>(absl::GetFlag(FLAGS_length_penalty));
  options.max_extra_length = absl::GetFlag(FLAGS_max_extra_length);
  options.n_best = absl::GetFlag(FLAGS_n_best);
  options.repetition_penalty = static_cast<float>(absl::GetFlag(FLAGS_repetition_penalty));
  options.no_repeat_ngram_size = absl::GetFlag(FLAGS_no_repeat_ngram_size);
  options.constrained_beam_size = absl::GetFlag(FLAGS_constrained_beam_size);
  options.max_batch_size = absl::GetFlag(FLAGS_batch_size);
  options.workers = absl::GetFlag(FLAGS_workers);
  if (auto status = options.Validate(); !status.ok()) return status;
  return options;
}

// One line (n-best: n_best lines) per line of `lines`. Hypothesis k of a line joins hypothesis
// k of each of its sentences, and its score is the sum of theirs; a blank line is written as
// it came, with an empty score field.
void write_translations(std::ostream& out, const SegmentedTexts& lines,
                        const std::vector<Translation>& translations, size_t first_index) {
  const int n_best = absl::GetFlag(FLAGS_n_best);
  for (size_t line = 0; line < lines.text_count(); ++line) {
    const size_t first = lines.first_sentence(line), end = lines.end_sentence(line);
    for (int k = 0; k < (first == end ? 1 : n_best); ++k) {
      std::vector<std::string> sentences;
      float score = 0;
      for (size_t s = first; s < end; ++s) {
        const size_t pick = std::min<size_t>(k, translations[s].hypotheses.size() - 1);
        sentences.push_back(translations[s].hypotheses[pick]);
        score += translations[s].scores[pick];
      }
      const std::string score_field = first == end ? "" : absl::StrCat(score);
      const std::string text = lines.Join(line, sentences);
      if (n_best > 1) {
        out << first_index + line << " ||| " << text << " ||| " << score_field << "\n";
      } else {
        if (absl::GetFlag(FLAGS_scores)) out << score_field << "\t";
        out << text << "\n";
      }
    }
  }
  out.flush();
}

// A file written under a temporary name beside `path` (empty: none) and renamed to `path` by
// Commit; removed unless committed.
class PartialFile {
 public:
  explicit PartialFile(const std::string& path)
      : final_(path), path_(path.empty() ? path : path + ".xlate-partial") {}
  ~PartialFile() {
    if (!committed_ && !path_.empty()) std::remove(path_.c_str());
  }
  const std::string& path() const { return path_; }
  bool Commit() {
    committed_ = std::rename(path_.c_str(), final_.c_str()) == 0;
    return committed_;
  }

 private:
  const std::string final_, path_;
  bool committed_ = false;
};

// The sentences of `texts` translated under --glossary's terms, if any (each term left out named
// on stderr, with `where(sentence)` saying where its sentence came from); `terms` receives each
// sentence's.
absl::StatusOr<std::vector<Translation>> translate_sentences(
    const Translator& translator, const SegmentedTexts& texts, const TranslationOptions& options,
    const LanguageTokens& languages, const Glossary* glossary,
    const std::function<std::string(size_t)>& where, std::vector<SentenceTerms>& terms) {
  std::vector<Constraints> constraints;
  if (glossary != nullptr) {
    auto found = glossary_constraints(*glossary, absl::GetFlag(FLAGS_glossary_ignore_case),
                                      texts.sentences(), translator, options, languages);
    if (!found.ok()) return found.status();
    terms = *std::move(found);
    for (size_t s = 0; s < terms.size(); ++s) {
      constraints.push_back(terms[s].constraints);
      for (const TermUse& use : terms[s].uses) {
        if (use.constrained) continue;
        std::cerr << "xlate translate: " << where(s) << "glossary term \"" << use.source
                  << "\" not applied: " << use.note << "\n";
      }
    }
  }
  return translator.Translate(texts.sentences(), options, languages, constraints);
}

// The entries of a document batch translated and rebuilt (document/document_batch.h). `texts`
// receives the batch's runs as split, for the caller's counts.
absl::StatusOr<std::vector<std::string>> translate_documents(
    const DocumentBatch& batch, const Translator& translator, TranslationOptions options,
    const LanguageTokens& languages, const Glossary* glossary, Segmentation segmentation,
    const std::function<std::string(size_t)>& where, std::optional<SegmentedTexts>& texts) {
  auto split = SegmentedTexts::Split(batch.runs(), translator.model().config().source_lang,
                                     segmentation);
  if (!split.ok()) return split.status();
  texts = *std::move(split);
  // A file's overlong sentence (a long list, a table row) is translated in parts.
  texts->SplitLongSentences(
      [&translator, &languages](absl::string_view sentence) {
        return source_token_count(translator.tokenizer(), languages, sentence);
      },
      translator.max_input_tokens());
  // Inline markup and placeholders are placed by the word links of each run's alignments.
  if (batch.needs_word_links()) options.alignment = kMarkupAlignment;
  std::vector<SentenceTerms> terms;
  auto translations =
      translate_sentences(translator, *texts, options, languages, glossary, where, terms);
  if (!translations.ok()) return translations.status();
  std::vector<std::string> best;
  std::vector<AlignedSentence> aligned;
  for (size_t s = 0; s < translations->size(); ++s) {
    const Translation& translation = (*translations)[s];
    best.push_back(translation.hypotheses[0]);
    if (!batch.needs_word_links()) continue;
    aligned.push_back(aligned_sentence(translator.tokenizer(), texts->sentences()[s],
                                       translation.source_tokens, translation.hypotheses[0],
                                       translation.best, terms.empty() ? nullptr : &terms[s]));
  }
  return batch.Rebuild(*texts, best, aligned);
}

// Draws the attention pictures of a chunk's sentences (lines first_line + 1 ...) into `dir`.
absl::Status draw_chunk_attention(const std::string& dir, const Translator& translator,
                                  const SegmentedTexts& lines,
                                  const std::vector<Translation>& translations,
                                  size_t first_line) {
  std::vector<const std::vector<int32_t>*> sources, targets;
  for (const Translation& translation : translations) {
    sources.push_back(&translation.source_tokens);
    targets.push_back(&translation.best.tokens);
  }
  std::vector<AttentionMaps> maps;
  try {
    maps = cross_attention_maps(translator.model(), sources, targets);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory computing the attention pictures' weights");
  }
  const Tokenizer& tokenizer = translator.tokenizer();
  for (size_t s = 0; s < translations.size(); ++s) {
    AttentionLabels labels;
    for (int32_t id : translations[s].source_tokens) {
      labels.source_tokens.push_back(tokenizer.source_piece_of(id));
    }
    labels.source_tokens.push_back(
        tokenizer.source_piece_of(translator.model().config().eos_id));
    for (int32_t id : translations[s].best.tokens) {
      labels.target_tokens.push_back(tokenizer.piece_of(id));
    }
    labels.title = lines.sentences()[s];
    const size_t line = lines.text_of(s);
    const std::string prefix =
        absl::StrCat(dir, "/line", first_line + line + 1, "-sentence",
                     s - lines.first_sentence(line) + 1, "-");
    auto drawn = draw_attention(maps[s], labels, prefix);
    if (!drawn.ok()) return drawn.status();
  }
  return absl::OkStatus();
}

}  // namespace

int run_translate() {
  if (absl::GetFlag(FLAGS_threads) < 0) {
    std::cerr << "xlate translate: --threads must be >= 0\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_threads) > 0) omp_set_num_threads(absl::GetFlag(FLAGS_threads));
  auto options = options_from_flags();
  if (!options.ok()) {
    std::cerr << "xlate translate: " << options.status().message() << "\n";
    return 2;
  }
  std::string model_dir = absl::GetFlag(FLAGS_model_dir);
  if (model_dir.empty()) {
    model_dir = XLATE_DEFAULT_MODEL_DIR;
    if (!std::filesystem::exists(model_dir + "/config.json")) {
      std::cerr << "xlate translate: no --model_dir given, and the default model " << model_dir
                << " is not there (models/train-en-de-general.sh trains it)\n";
      return 2;
    }
  }
  auto placement =
      resolve_placement(absl::GetFlag(FLAGS_device), absl::GetFlag(FLAGS_compute_type));
  if (!placement.ok()) {
    std::cerr << "xlate translate: " << placement.status().message() << "\n";
    return 2;
  }
  if (!placement->note.empty()) std::cerr << "xlate translate: " << placement->note << "\n";
  const std::string attention_dir = absl::GetFlag(FLAGS_attention_png);
  if (!attention_dir.empty()) {
    if (auto status = attention_pictures_available(); !status.ok()) {
      std::cerr << "xlate translate: --attention_png: " << status.message() << "\n";
      return 2;
    }
    std::error_code error;
    std::filesystem::create_directories(attention_dir, error);
    if (error || !std::filesystem::is_directory(attention_dir)) {
      std::cerr << "xlate translate: --attention_png " << attention_dir
                << " is not a directory that can be made: " << error.message() << "\n";
      return 2;
    }
  }
  auto translator = Translator::Load(model_dir, placement->placement);
  if (!translator.ok()) {
    std::cerr << "xlate translate: " << translator.status().message() << "\n";
    return 1;
  }
  std::ifstream input_file;
  const bool from_file = !absl::GetFlag(FLAGS_input).empty();
  if (from_file) {
    input_file.open(absl::GetFlag(FLAGS_input), std::ios::binary);
    if (!input_file) {
      std::cerr << "xlate translate: cannot open --input " << absl::GetFlag(FLAGS_input) << "\n";
      return 1;
    }
  }
  // --output is written beside itself and renamed into place once all of it is: a failure
  // leaves no half-written file, and an existing one as it was.
  PartialFile partial(absl::GetFlag(FLAGS_output));
  std::ofstream output_file;
  if (!partial.path().empty()) {
    output_file.open(partial.path(), std::ios::binary);
    if (!output_file) {
      std::cerr << "xlate translate: cannot write --output " << absl::GetFlag(FLAGS_output)
                << " (nor " << partial.path() << " beside it)\n";
      return 1;
    }
  }
  const auto finish = [&]() {
    if (output_file.is_open()) output_file.close();
    if (!partial.path().empty() && (!output_file || !partial.Commit())) {
      std::cerr << "xlate translate: cannot write --output " << absl::GetFlag(FLAGS_output)
                << "\n";
      return 1;
    }
    return 0;
  };
  std::istream& in = from_file ? input_file : std::cin;
  std::ostream& out = output_file.is_open() ? output_file : std::cout;
  options->return_scores = true;
  if (const std::string prefix = absl::GetFlag(FLAGS_target_prefix); !prefix.empty()) {
    if (absl::GetFlag(FLAGS_split_sentences)) {
      std::cerr << "xlate translate: --target_prefix needs --split_sentences=false (each line "
                   "one sentence, whose translation starts with the prefix)\n";
      return 2;
    }
    auto ids = (*translator)->tokenizer().encode_target(prefix);
    if (!ids.ok()) {
      std::cerr << "xlate translate: --target_prefix: " << ids.status().message() << "\n";
      return 2;
    }
    options->forced_start_tokens = *std::move(ids);
  }

  const bool keep_placeholders = absl::GetFlag(FLAGS_keep_placeholders);
  if (keep_placeholders && (absl::GetFlag(FLAGS_n_best) > 1 || absl::GetFlag(FLAGS_scores) ||
                            !absl::GetFlag(FLAGS_target_prefix).empty() || !attention_dir.empty())) {
    std::cerr << "xlate translate: --keep_placeholders does not take --n_best > 1, --scores, "
                 "--target_prefix or --attention_png (a line's translation is rebuilt from the "
                 "runs of text between its placeholders)\n";
    return 2;
  }
  const std::string source_language = (*translator)->model().config().source_lang;
  std::string mime_type = absl::AsciiStrToLower(absl::GetFlag(FLAGS_mime_type));
  if (mime_type.empty()) mime_type = mime_type_of_file(absl::GetFlag(FLAGS_input));
  auto parsed_format = entry_format(mime_type, "--mime_type");
  if (!parsed_format.ok()) {
    std::cerr << "xlate translate: " << parsed_format.status().message() << "\n";
    return 2;
  }
  const EntryFormat format = *parsed_format;
  if (format != EntryFormat::kPlainText &&
      (absl::GetFlag(FLAGS_n_best) > 1 || absl::GetFlag(FLAGS_scores) ||
       !absl::GetFlag(FLAGS_target_prefix).empty() || !attention_dir.empty())) {
    std::cerr << "xlate translate: --mime_type " << mime_type << " does not take --n_best > 1, "
                 "--scores, --target_prefix or --attention_png (the document is rebuilt from "
                 "the translations of its text)\n";
    return 2;
  }
  std::optional<Glossary> glossary;
  if (const std::string path = absl::GetFlag(FLAGS_glossary); !path.empty()) {
    auto loaded = Glossary::Load(path, source_language,
                                 (*translator)->model().config().target_lang);
    if (!loaded.ok()) {
      std::cerr << "xlate translate: --glossary: " << loaded.status().message() << "\n";
      return 2;
    }
    glossary = *std::move(loaded);
  }
  // A multilingual model's language tokens (engine/target_language.h).
  auto languages = language_tokens((*translator)->tokenizer(),
                                   absl::GetFlag(FLAGS_source_language),
                                   absl::GetFlag(FLAGS_target_language), "--source_language",
                                   "--target_language");
  if (!languages.ok()) {
    std::cerr << "xlate translate: " << languages.status().message() << "\n";
    return 2;
  }
  if (format != EntryFormat::kPlainText) {
    std::stringstream whole;
    whole << in.rdbuf();
    auto batch = DocumentBatch::Parse({whole.str()}, format, keep_placeholders, "");
    if (!batch.ok()) {
      std::cerr << "xlate translate: " << mime_type << " input: " << batch.status().message()
                << "\n";
      return 1;
    }
    std::optional<SegmentedTexts> texts;
    auto rebuilt = translate_documents(
        *batch, **translator, *options, *languages, glossary ? &*glossary : nullptr,
        Segmentation::kSentences, [](size_t) { return std::string(); }, texts);
    if (!rebuilt.ok()) {
      std::cerr << "xlate translate: " << rebuilt.status().message() << "\n";
      return 1;
    }
    out << rebuilt->front();
    out.flush();
    if (!out) return 1;
    return finish();
  }
  const Segmentation segmentation =
      absl::GetFlag(FLAGS_split_sentences) ? Segmentation::kSentences : Segmentation::kWholeText;
  const absl::Time start = absl::Now();
  size_t done = 0, sentences = 0;
  std::vector<std::string> chunk;
  std::string line;
  bool more = true;
  while (more) {
    more = static_cast<bool>(std::getline(in, line));
    if (more) chunk.push_back(line);
    if (chunk.size() < kChunkLines && more) continue;
    if (chunk.empty()) break;
    const size_t lines_in_chunk = chunk.size();
    // Text k of the chunk is input line done + k + 1 (with --keep_placeholders, the run of
    // text k of the batch's entry k); the translator counts sentences.
    const auto failed = [&](const absl::Status& status) {
      std::cerr << "xlate translate: in input lines " << done + 1 << "-" << done + lines_in_chunk
                << " (text 0 = line " << done + 1 << "; sentences counted after cutting the "
                << "lines into sentences): " << status.message() << "\n";
      return 1;
    };
    std::optional<SegmentedTexts> lines;
    if (keep_placeholders) {
      // The texts translated are the runs between placeholders, which go back by the word links.
      auto batch = DocumentBatch::Parse(std::move(chunk), EntryFormat::kPlainText, true, "");
      if (!batch.ok()) return failed(batch.status());
      auto rebuilt = translate_documents(
          *batch, **translator, *options, *languages, glossary ? &*glossary : nullptr,
          segmentation,
          [&](size_t s) {  // `lines` is set before any sentence is named
            return absl::StrCat("input line ", done + batch->entry_of_run(lines->text_of(s)) + 1,
                                ": ");
          },
          lines);
      if (!rebuilt.ok()) return failed(rebuilt.status());
      for (const std::string& entry : *rebuilt) out << entry << "\n";
      out.flush();
    } else {
      auto split = SegmentedTexts::Split(std::move(chunk), source_language, segmentation);
      if (!split.ok()) return failed(split.status());
      lines = *std::move(split);
      std::vector<SentenceTerms> terms;
      auto translations = translate_sentences(
          **translator, *lines, *options, *languages, glossary ? &*glossary : nullptr,
          [&](size_t s) { return absl::StrCat("input line ", done + lines->text_of(s) + 1, ": "); },
          terms);
      if (!translations.ok()) return failed(translations.status());
      write_translations(out, *lines, *translations, done);
      if (!attention_dir.empty()) {
        auto drawn =
            draw_chunk_attention(attention_dir, **translator, *lines, *translations, done);
        if (!drawn.ok()) {
          std::cerr << "xlate translate: --attention_png: " << drawn.message() << "\n";
          return 1;
        }
      }
    }
    chunk.clear();
    done += lines_in_chunk;
    sentences += lines->sentences().size();
    if (from_file) {
      const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
      std::cerr << "xlate translate: " << done << " lines (" << sentences << " sentences), "
                << seconds << " s, " << (seconds > 0 ? sentences / seconds : 0.0)
                << " sentences/s\n";
    }
  }
  return finish();
}

}  // namespace xlate::tools
