// The Translator API on a tiny model with a real SentencePiece vocabulary (the CTest fixture
// made by `xlate init-model`), on real sentences from ../shared/data.
#include <algorithm>
#include <fstream>
#include <map>
#include <filesystem>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/continuous_decoder.h"
#include "engine/translator.h"
#include "tests/test_paths.h"

namespace xlate {
namespace {

std::vector<std::string> real_sentences(size_t count) {
  const std::string path = testing::sample_text();
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; lines.size() < count && std::getline(file, line);) lines.push_back(line);
  EXPECT_EQ(lines.size(), count) << "sample text " << path;
  return lines;
}

// Loaded once per process; a load failure fails every test (SetUp), never skips it.
const Translator* shared_translator() {
  static const std::unique_ptr<Translator> translator = [] {
    auto loaded = Translator::Load(testing::tiny_model_dir());
    if (!loaded.ok()) ADD_FAILURE() << loaded.status();
    return loaded.ok() ? *std::move(loaded) : nullptr;
  }();
  return translator.get();
}

class TranslatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    translator_ = shared_translator();
    ASSERT_NE(translator_, nullptr);
  }
  // The token ids of the first `count` sample sentences.
  std::vector<std::vector<int32_t>> real_sources(size_t count) const {
    std::vector<std::vector<int32_t>> sources;
    for (const std::string& sentence : real_sentences(count)) {
      auto ids = translator_->tokenizer().encode(sentence);
      EXPECT_TRUE(ids.ok()) << ids.status();
      sources.push_back(ids.ok() ? *std::move(ids) : std::vector<int32_t>());
    }
    return sources;
  }
  const Translator* translator_ = nullptr;
};

// A batch of mixed-length sentences translates exactly as each sentence alone, in order.
TEST_F(TranslatorTest, BatchEqualsEachSentenceAlone) {
  const std::vector<std::string> sentences = real_sentences(10);
  TranslationOptions options;
  options.max_batch_size = 4;  // several sub-batches, each padded differently
  auto together = translator_->Translate(sentences, options);
  ASSERT_TRUE(together.ok()) << together.status();
  ASSERT_EQ(together->size(), sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    auto alone = translator_->Translate({sentences[i]}, options);
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ((*alone)[0].hypotheses, (*together)[i].hypotheses) << "sentence " << i;
    EXPECT_NEAR((*alone)[0].scores[0], (*together)[i].scores[0], 1e-4) << "sentence " << i;
  }
}

// Token-id input is checked before anything decodes: an id outside the vocabulary is named.
TEST_F(TranslatorTest, TokenInputIsChecked) {
  auto refused = translator_->TranslateTokens({{1, 2}, {1, 2, -7}}, TranslationOptions());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("sentence 1 has token id -7"), std::string::npos)
      << refused.status();
  auto none = translator_->TranslateTokens({}, TranslationOptions());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Sentences that join a running continuous decode at different steps, with different beam
// sizes, get exactly the hypotheses of a plain batch translation; slots are reused. Looking for
// finished sentences every step (the CPU's default) or every 4th (a GPU's) changes nothing.
TEST_F(TranslatorTest, ContinuousDecodingEqualsBatchTranslation) {
  const std::vector<std::vector<int32_t>> sources = real_sources(6);
  TranslationOptions beam4, greedy;
  greedy.beam_size = 1;
  for (int sync_interval : {0, 4}) {
    ContinuousDecoderOptions limits;
    limits.max_sentences = 3;  // fewer slots than sentences: later ones reuse freed slots
    limits.sync_interval = sync_interval;
    ContinuousDecoder decoder(translator_->model(), limits);
    std::map<int64_t, size_t> sentence_of;
    std::vector<int> beam_of(sources.size(), 0);
    std::map<size_t, std::vector<Hypothesis>> results;
    size_t next = 0;
    for (int steps = 0; results.size() < sources.size(); ++steps) {
      ASSERT_LT(steps, 2000);
      // Admit one or two sentences every third step while there is room.
      if (steps % 3 == 0 && next < sources.size() && decoder.free_slots() > 0) {
        const size_t count = std::min<size_t>({2, sources.size() - next,
                                               static_cast<size_t>(decoder.free_slots())});
        std::vector<std::vector<int32_t>> group(sources.begin() + next,
                                                sources.begin() + next + count);
        const TranslationOptions& options = steps % 2 == 0 ? beam4 : greedy;
        auto handles = decoder.Admit(group, options);
        ASSERT_TRUE(handles.ok()) << handles.status();
        for (size_t k = 0; k < count; ++k) {
          sentence_of[(*handles)[k]] = next + k;
          beam_of[next + k] = options.beam_size;
        }
        next += count;
      }
      for (ContinuousDecoder::Finished& done : decoder.Step()) {
        results[sentence_of.at(done.handle)] = std::move(done.hypotheses);
      }
    }
    EXPECT_EQ(decoder.live_sentences(), 0);
    EXPECT_NE(std::count(beam_of.begin(), beam_of.end(), 1), 0);  // both searches were used
    EXPECT_NE(std::count(beam_of.begin(), beam_of.end(), 4), 0);
    for (size_t i = 0; i < sources.size(); ++i) {
      auto expected = translator_->TranslateTokens({sources[i]}, beam_of[i] == 1 ? greedy : beam4);
      ASSERT_TRUE(expected.ok());
      ASSERT_FALSE(results[i].empty());
      EXPECT_EQ(results[i][0].tokens, (*expected)[0][0].tokens)
          << "sentence " << i << " sync " << sync_interval;
      EXPECT_NEAR(results[i][0].score, (*expected)[0][0].score, 1e-4) << "sentence " << i;
    }
    TranslationOptions too_wide;
    too_wide.beam_size = 5;
    too_wide.n_best = 1;
    EXPECT_FALSE(decoder.Admit({sources[0]}, too_wide).ok());
  }
}

// Sentences encoded in one pass and admitted a few at a time, as slots free up, from different
// places of the encoded batch (its padding is not theirs), get what each gets alone. A range
// beyond the encoded sentences and a source the encoder must not see are refused by name.
TEST_F(TranslatorTest, SentencesEncodedAheadAreAdmittedInParts) {
  const std::vector<std::vector<int32_t>> sources = real_sources(7);
  ContinuousDecoderOptions limits;
  limits.max_sentences = 2;
  ContinuousDecoder decoder(translator_->model(), limits);
  auto encoded = decoder.Encode(sources);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  TranslationOptions options;
  std::map<int64_t, size_t> sentence_of;
  std::map<size_t, std::vector<Hypothesis>> results;
  size_t next = 0;
  for (int steps = 0; results.size() < sources.size(); ++steps) {
    ASSERT_LT(steps, 2000);
    const size_t count =
        std::min(sources.size() - next, static_cast<size_t>(decoder.free_slots()));
    if (count > 0) {
      auto handles = decoder.Admit(*encoded, static_cast<int64_t>(next),
                                   std::vector<TranslationOptions>(count, options));
      ASSERT_TRUE(handles.ok()) << handles.status();
      for (size_t k = 0; k < count; ++k) sentence_of[(*handles)[k]] = next + k;
      next += count;
    }
    for (ContinuousDecoder::Finished& done : decoder.Step()) {
      results[sentence_of.at(done.handle)] = std::move(done.hypotheses);
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    auto alone = translator_->TranslateTokens({sources[i]}, options);
    ASSERT_TRUE(alone.ok()) << alone.status();
    ASSERT_FALSE(results[i].empty());
    EXPECT_EQ(results[i][0].tokens, (*alone)[0][0].tokens) << "sentence " << i;
    EXPECT_NEAR(results[i][0].score, (*alone)[0][0].score, 1e-4) << "sentence " << i;
  }
  const auto beyond = decoder.Admit(*encoded, 6, std::vector<TranslationOptions>(2));
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(beyond.status().message().find("sentences [6, 8) of 7 encoded"), std::string::npos)
      << beyond.status();
  const auto outside = decoder.Encode({{1, 2}, {3, -7}});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("sentence 1 has token id -7"), std::string::npos)
      << outside.status();
}

// One admission of sentences with different options (beam, n-best, length penalty, scores,
// alignment): each gets exactly what it gets translated alone with its own options.
TEST_F(TranslatorTest, OneAdmissionTakesSentencesOfDifferentOptions) {
  const std::vector<std::vector<int32_t>> sources = real_sources(6);
  std::vector<TranslationOptions> options(sources.size());
  options[1].beam_size = 1;
  options[2].n_best = 3;
  options[3].length_penalty = 0.f;
  options[4].alignment = AlignmentOptions{};
  options[5].beam_size = 2;
  options[5].return_scores = false;
  ContinuousDecoderOptions limits;
  limits.max_sentences = 6;
  ContinuousDecoder decoder(translator_->model(), limits);
  auto handles = decoder.Admit(sources, options);
  ASSERT_TRUE(handles.ok()) << handles.status();
  std::map<int64_t, std::vector<Hypothesis>> results;
  for (int steps = 0; decoder.live_sentences() > 0; ++steps) {
    ASSERT_LT(steps, 1000);
    for (ContinuousDecoder::Finished& done : decoder.Step()) {
      ASSERT_TRUE(done.status.ok()) << done.status;
      results[done.handle] = std::move(done.hypotheses);
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto alone = translator_->TranslateTokens({sources[i]}, options[i]);
    ASSERT_TRUE(alone.ok()) << alone.status();
    const std::vector<Hypothesis>& together = results.at((*handles)[i]);
    ASSERT_EQ(together.size(), (*alone)[0].size()) << "sentence " << i;
    for (size_t j = 0; j < together.size(); ++j) {
      EXPECT_EQ(together[j].tokens, (*alone)[0][j].tokens) << "sentence " << i << " #" << j;
      ASSERT_EQ(together[j].alignment.size(), (*alone)[0][j].alignment.size()) << i;
      for (size_t k = 0; k < together[j].alignment.size(); ++k) {
        EXPECT_NEAR(together[j].alignment[k], (*alone)[0][j].alignment[k], 1e-5) << i;
      }
    }
  }
  EXPECT_FALSE(results.at((*handles)[4]).front().alignment.empty());
  EXPECT_FALSE(decoder.Admit(sources, std::vector<TranslationOptions>(2)).ok())
      << "one set of options per sentence";
}


// Sentences admitted with report_stable_prefixes report, by handle, stable prefixes that grow
// and are prefixes of their results; their results are those of sentences that do not report.
TEST_F(TranslatorTest, ContinuousDecoderReportsStablePrefixesByHandle) {
  const std::vector<std::vector<int32_t>> sources = real_sources(4);
  TranslationOptions reporting, plain;
  reporting.report_stable_prefixes = true;
  ContinuousDecoderOptions limits;
  limits.max_sentences = 4;
  ContinuousDecoder decoder(translator_->model(), limits);
  auto reported = decoder.Admit({sources[0], sources[1]}, reporting);
  auto quiet = decoder.Admit({sources[2], sources[3]}, plain);
  ASSERT_TRUE(reported.ok() && quiet.ok());
  std::map<int64_t, std::vector<Hypothesis>> results;
  std::map<int64_t, std::vector<std::vector<int32_t>>> prefixes;
  for (int steps = 0; decoder.live_sentences() > 0; ++steps) {
    ASSERT_LT(steps, 2000);
    for (ContinuousDecoder::Finished& done : decoder.Step()) results[done.handle] = done.hypotheses;
    for (ContinuousDecoder::Progress& progress : decoder.TakeProgress()) {
      EXPECT_EQ(results.count(progress.handle), 0u) << "a prefix after its result";
      prefixes[progress.handle].push_back(progress.stable_tokens);
    }
  }
  for (int64_t handle : *quiet) EXPECT_EQ(prefixes.count(handle), 0u);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t handle = (*reported)[i];
    const std::vector<int32_t>& best = results.at(handle).at(0).tokens;
    ASSERT_FALSE(prefixes[handle].empty()) << "sentence " << i;
    size_t before = 0;
    for (const std::vector<int32_t>& prefix : prefixes[handle]) {
      EXPECT_GT(prefix.size(), before);
      ASSERT_LE(prefix.size(), best.size());
      EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), best.begin())) << "sentence " << i;
      before = prefix.size();
    }
    auto expected = translator_->TranslateTokens({sources[i]}, plain);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(best, (*expected)[0][0].tokens) << "sentence " << i;
  }
}

// A sentence dropped from a running decode (its request was cancelled) frees its slot at once,
// never comes back as finished, and the sentences around it decode exactly as they would have;
// every step or every 4th alike.
TEST_F(TranslatorTest, ContinuousDecoderDropsASentenceMidDecode) {
  const std::vector<std::vector<int32_t>> sources = real_sources(3);
  const TranslationOptions beam4;
  for (int sync_interval : {0, 4}) {
    ContinuousDecoderOptions limits;
    limits.max_sentences = 3;
    limits.sync_interval = sync_interval;
    ContinuousDecoder decoder(translator_->model(), limits);
    auto handles = decoder.Admit(sources, beam4);
    ASSERT_TRUE(handles.ok()) << handles.status();
    std::map<int64_t, std::vector<Hypothesis>> results;
    for (int step = 0; step < 2; ++step) {
      for (ContinuousDecoder::Finished& done : decoder.Step()) results[done.handle] = done.hypotheses;
    }
    ASSERT_TRUE(results.empty());  // real sentences take more than 2 steps
    const KvCachePool::Usage before = decoder.kv_cache().usage();
    EXPECT_EQ(decoder.Drop({(*handles)[1], 12345}), 1);
    EXPECT_EQ(decoder.free_slots(), 1);
    EXPECT_EQ(decoder.live_sentences(), 2);
    EXPECT_EQ(decoder.Drop({(*handles)[1]}), 0);  // already gone
    // The dropped sentence's blocks (4 beams' first block, its source's) and reservation are back.
    const KvCachePool::Usage after = decoder.kv_cache().usage();
    EXPECT_EQ(after.blocks_in_use,
              before.blocks_in_use - 4 - KvCachePool::blocks_for(sources[1].size() + 1));
    EXPECT_EQ(after.blocks_reserved,
              before.blocks_reserved - decoder.cache_blocks_for(sources[1].size(), beam4, false));
    for (int steps = 0; decoder.live_sentences() > 0; ++steps) {
      ASSERT_LT(steps, 2000);
      for (ContinuousDecoder::Finished& done : decoder.Step()) results[done.handle] = done.hypotheses;
    }
    EXPECT_EQ(results.count((*handles)[1]), 0u);
    EXPECT_EQ(decoder.free_slots(), 3);
    EXPECT_EQ(decoder.kv_cache().usage().blocks_in_use, 0);
    EXPECT_EQ(decoder.kv_cache().usage().blocks_reserved, 0);
    for (size_t i : {0u, 2u}) {
      auto expected = translator_->TranslateTokens({sources[i]}, beam4);
      ASSERT_TRUE(expected.ok());
      ASSERT_FALSE(results[(*handles)[i]].empty()) << "sentence " << i;
      EXPECT_EQ(results[(*handles)[i]][0].tokens, (*expected)[0][0].tokens)
          << "sentence " << i << " sync " << sync_interval;
    }
  }
}

// Sentences share a capped pool: admission reserves each one's worst case and refuses, by name
// and without side effects, what does not fit; finished sentences give their blocks back, and
// the pool, which grew only as far as the work needed, is reused as it is.
TEST_F(TranslatorTest, ContinuousDecoderAdmitsWhatItsKvCacheHolds) {
  const std::vector<std::vector<int32_t>> sources = real_sources(3);
  const TranslationOptions beam4;
  const TransformerModel& model = translator_->model();
  ContinuousDecoderOptions limits;
  limits.max_sentences = 3;
  ContinuousDecoder sizing(model, limits);
  const int64_t first_two = sizing.cache_blocks_for(sources[0].size(), beam4, false) +
                            sizing.cache_blocks_for(sources[1].size(), beam4, false);
  auto pool = model.kv_cache_pool(first_two);  // room for two of them at once
  ContinuousDecoder decoder(model, limits, pool);
  auto handles = decoder.Admit({sources[0], sources[1]}, beam4);
  ASSERT_TRUE(handles.ok()) << handles.status();
  auto refused = decoder.Admit({sources[2]}, beam4);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("the KV cache cannot hold 1 more sentences now"),
            std::string::npos)
      << refused.status();
  EXPECT_EQ(decoder.free_slots(), 1);  // nothing taken by the refusal
  EXPECT_EQ(pool->usage().blocks_reserved, first_two);
  std::map<int64_t, std::vector<Hypothesis>> results;
  for (int steps = 0; decoder.live_sentences() > 0; ++steps) {
    ASSERT_LT(steps, 2000);
    // Never more blocks in use than reserved, nor a pool larger than its cap.
    ASSERT_LE(pool->usage().blocks_in_use, pool->usage().blocks_reserved);
    ASSERT_LE(pool->usage().blocks_in_pool, first_two);
    for (ContinuousDecoder::Finished& done : decoder.Step()) results[done.handle] = done.hypotheses;
  }
  EXPECT_EQ(pool->usage().blocks_in_use, 0);
  EXPECT_EQ(pool->usage().blocks_reserved, 0);
  const int64_t grown = pool->usage().blocks_in_pool;
  auto later = decoder.Admit({sources[2]}, beam4);
  ASSERT_TRUE(later.ok()) << later.status();
  while (decoder.live_sentences() > 0) {
    for (ContinuousDecoder::Finished& done : decoder.Step()) results[done.handle] = done.hypotheses;
  }
  EXPECT_EQ(pool->usage().blocks_in_pool, grown);  // the third sentence fit in what was taken
  for (size_t i = 0; i < 3; ++i) {
    auto expected = translator_->TranslateTokens({sources[i]}, beam4);
    ASSERT_TRUE(expected.ok());
    const int64_t handle = i < 2 ? (*handles)[i] : (*later)[0];
    ASSERT_FALSE(results[handle].empty()) << "sentence " << i;
    EXPECT_EQ(results[handle][0].tokens, (*expected)[0][0].tokens) << "sentence " << i;
  }
}

// Create names what is wrong: options out of range, or caches that cannot be allocated (here
// 2^28 sentences x 15 beams: the first cache alone exceeds any address space, so it fails the
// same way under every overcommit policy, before any memory is touched).
// Each sentence's options are validated, the second of two whose beams are equal too (Check
// skips a sentence whose options equal its neighbour's: equality must compare every field).
TEST_F(TranslatorTest, ContinuousDecoderValidatesEachSentencesOptions) {
  const std::vector<std::vector<int32_t>> sources = real_sources(2);
  ContinuousDecoderOptions limits;
  limits.max_sentences = 2;
  ContinuousDecoder decoder(translator_->model(), limits);
  TranslationOptions valid;
  valid.beam_size = 2;
  TranslationOptions too_many = valid;
  too_many.n_best = 3;  // more hypotheses than beams
  auto refused = decoder.Admit(sources, std::vector<TranslationOptions>{valid, too_many});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("n_best"), std::string::npos) << refused.status();
  EXPECT_EQ(decoder.free_slots(), 2);
}

TEST_F(TranslatorTest, ContinuousDecoderOptionsAndMemoryAreChecked) {
  const TransformerModel& model = translator_->model();
  ContinuousDecoderOptions fine;
  fine.max_sentences = 3;
  fine.max_beam_size = 2;
  fine.max_source_tokens = 8;
  fine.max_target_tokens = 16;
  EXPECT_TRUE(ContinuousDecoder::Create(model, fine).ok());
  const ModelConfig& config = model.config();
  // Per sentence: 2 beams x 1 block of 16 target positions, 1 block of 8 source positions.
  EXPECT_EQ(ContinuousDecoder::worst_case_blocks(config, fine), 3 * (2 * 1 + 1));
  fine.max_target_tokens = 17;
  EXPECT_EQ(ContinuousDecoder::worst_case_blocks(config, fine), 3 * (2 * 2 + 1));
  fine.max_target_tokens = 16;

  // The CPU backend's search takes any beam (CUDA's at most 15).
  ContinuousDecoderOptions beamless = fine;
  beamless.max_beam_size = 0;
  auto refused = ContinuousDecoder::Create(model, beamless);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("max_beam_size 0 (1 to "), std::string::npos)
      << refused.status();
  ContinuousDecoderOptions none = fine;
  none.max_sentences = 0;
  EXPECT_EQ(ContinuousDecoder::Create(model, none).status().code(),
            absl::StatusCode::kInvalidArgument);

  ContinuousDecoderOptions huge = fine;
  huge.max_sentences = 1 << 28;
  huge.max_beam_size = 15;
  huge.max_target_tokens = 256;
  auto exhausted = ContinuousDecoder::Create(model, huge);
  EXPECT_EQ(exhausted.status().code(), absl::StatusCode::kResourceExhausted) << exhausted.status();
  EXPECT_NE(exhausted.status().message().find("268435456 sentences x 15 beams"),
            std::string::npos)
      << exhausted.status();
}

// The address space this process has mapped, in bytes (/proc/self/statm's first field).
size_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Runs `body` with this process's address space capped `headroom` bytes above what it has
// mapped, then lifts the cap (for death-test children that must run out of memory).
template <typename Body>
auto with_memory_headroom(size_t headroom, Body body) {
  rlimit limit{};
  getrlimit(RLIMIT_AS, &limit);
  const rlim_t unlimited = limit.rlim_cur;
  limit.rlim_cur = mapped_bytes() + headroom;
  setrlimit(RLIMIT_AS, &limit);
  auto result = body();
  limit.rlim_cur = unlimited;
  setrlimit(RLIMIT_AS, &limit);
  return result;
}

// An encoder pass that cannot be allocated is ResourceExhausted and takes no slot: in a child
// process whose address space is capped 64 MiB above what it has mapped, 512 sentences of 255
// tokens (~130k tokens, a 133 MB feed-forward activation alone) are refused; with the cap lifted
// all 512 slots are still free.
TEST_F(TranslatorTest, ContinuousDecoderRefusesAnEncoderPassBeyondMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child runs afresh, not forked mid-run
  ContinuousDecoderOptions options;
  options.max_sentences = 512;
  options.max_beam_size = 1;
  options.max_source_tokens = 256;
  options.max_target_tokens = 2;
  auto decoder = ContinuousDecoder::Create(translator_->model(), options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const std::vector<std::vector<int32_t>> longest(512, std::vector<int32_t>(255, 7));
  const std::vector<std::vector<int32_t>> shortest(512, std::vector<int32_t>(1, 7));
  TranslationOptions greedy;
  greedy.beam_size = 1;
  EXPECT_EXIT(
      {
        const auto refused = with_memory_headroom(
            size_t{64} << 20, [&] { return (*decoder)->Admit(longest, greedy); });
        std::cerr << refused.status() << "\n";
        const bool named = refused.status().code() == absl::StatusCode::kResourceExhausted &&
                           refused.status().message().find("512 sentences of up to 256 tokens") !=
                               std::string::npos;
        const auto admitted = (*decoder)->Admit(shortest, greedy);
        std::cerr << admitted.status() << "\n";
        _exit(named && admitted.ok() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// A decoding step that cannot be allocated fails every live sentence with ResourceExhausted and
// frees their slots; with memory back, the decoder translates again. In a child process capped
// 1 MiB above what it has mapped (one step of 256 sentences x 4 beams needs 4 MB of logits).
TEST_F(TranslatorTest, ContinuousDecoderStepBeyondMemoryFailsItsSentences) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ContinuousDecoderOptions options;
  options.max_sentences = 256;
  options.max_source_tokens = 16;
  options.max_target_tokens = 8;
  auto decoder = ContinuousDecoder::Create(translator_->model(), options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const std::vector<std::vector<int32_t>> sources(256, std::vector<int32_t>{7, 8, 9});
  EXPECT_EXIT(
      {
        const bool admitted = (*decoder)->Admit(sources, TranslationOptions{}).ok();
        const std::vector<ContinuousDecoder::Finished> failed =
            with_memory_headroom(size_t{1} << 20, [&] { return (*decoder)->Step(); });
        bool all_failed = failed.size() == sources.size() && (*decoder)->free_slots() == 256;
        for (const ContinuousDecoder::Finished& sentence : failed) {
          all_failed = all_failed &&
                       sentence.status.code() == absl::StatusCode::kResourceExhausted &&
                       sentence.hypotheses.empty();
        }
        std::cerr << "admitted " << admitted << ", failed " << failed.size() << ": "
                  << (failed.empty() ? absl::OkStatus() : failed[0].status) << "\n";
        const bool again = (*decoder)->Admit({sources[0]}, TranslationOptions{}).ok();
        size_t translated = 0;
        for (int step = 0; step < 20 && translated == 0; ++step) {
          for (const ContinuousDecoder::Finished& sentence : (*decoder)->Step()) {
            translated += sentence.status.ok() && !sentence.hypotheses.empty();
          }
        }
        _exit(admitted && all_failed && again && translated == 1 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(TranslatorTest, ConcurrentCallersGetTheSerialResults) {
  const std::vector<std::string> sentences = real_sentences(6);
  TranslationOptions options;
  auto serial = translator_->Translate(sentences, options);
  ASSERT_TRUE(serial.ok());
  std::vector<std::vector<Translation>> parallel(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < parallel.size(); ++t) {
    threads.emplace_back([&, t] {
      auto result = translator_->Translate(sentences, options);
      if (result.ok()) parallel[t] = *std::move(result);
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& result : parallel) {
    ASSERT_EQ(result.size(), serial->size());
    for (size_t i = 0; i < result.size(); ++i) {
      EXPECT_EQ(result[i].hypotheses, (*serial)[i].hypotheses);
    }
  }
}

// Batches translated side by side (TranslationOptions::workers) give what one worker gives, in
// the callers' order: fewer workers than batches, and more.
TEST_F(TranslatorTest, WorkersTranslateAsOneWorkerDoes) {
  const std::vector<std::string> sentences = real_sentences(13);
  TranslationOptions options;
  options.max_batch_size = 3;  // 5 batches
  auto one = translator_->Translate(sentences, options);
  ASSERT_TRUE(one.ok()) << one.status();
  for (const int workers : {2, 3, 8}) {
    options.workers = workers;
    auto several = translator_->Translate(sentences, options);
    ASSERT_TRUE(several.ok()) << several.status();
    ASSERT_EQ(several->size(), one->size());
    for (size_t i = 0; i < sentences.size(); ++i) {
      EXPECT_EQ((*several)[i].hypotheses, (*one)[i].hypotheses)
          << workers << " workers, sentence " << i;
      EXPECT_NEAR((*several)[i].scores[0], (*one)[i].scores[0], 1e-5)
          << workers << " workers, sentence " << i;
    }
  }
  options.workers = 0;
  auto refused = translator_->Translate(sentences, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("workers = 0"), std::string::npos)
      << refused.status();
}

TEST_F(TranslatorTest, NBestReturnsSortedHypotheses) {
  TranslationOptions options;
  options.n_best = 3;
  auto result = translator_->Translate(real_sentences(2), options);
  ASSERT_TRUE(result.ok());
  for (const Translation& translation : *result) {
    ASSERT_EQ(translation.hypotheses.size(), 3u);
    ASSERT_EQ(translation.scores.size(), 3u);
    EXPECT_GE(translation.scores[0], translation.scores[1]);
    EXPECT_GE(translation.scores[1], translation.scores[2]);
  }
}

TEST_F(TranslatorTest, OutputLengthRespectsTheLimits) {
  TranslationOptions options;
  options.max_extra_length = 3;
  const std::vector<std::string> sentences = real_sentences(3);
  auto result = translator_->TranslateTokens({{10, 11}, {12}}, options);
  ASSERT_TRUE(result.ok());
  EXPECT_LE((*result)[0][0].tokens.size(), 2u + 3u);
  EXPECT_LE((*result)[1][0].tokens.size(), 1u + 3u);
  options.min_output_length = 4;
  options.max_output_length = 4;
  result = translator_->TranslateTokens({{10, 11}, {12}}, options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)[0][0].tokens.size(), 4u);
  EXPECT_EQ((*result)[1][0].tokens.size(), 4u);
}

TEST_F(TranslatorTest, InvalidUtf8IsRejectedWithItsPosition) {
  auto result = translator_->Translate({"fine", "bad \xc3\x28 byte"}, TranslationOptions());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("sentence 1 is not valid UTF-8"), std::string::npos)
      << result.status();
  EXPECT_NE(result.status().message().find("offset 4"), std::string::npos);
}

TEST_F(TranslatorTest, OverLongInputNamesTheLimit) {
  std::string long_sentence;
  for (int i = 0; i < 400; ++i) long_sentence += "dog ";
  auto result = translator_->Translate({long_sentence}, TranslationOptions());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("the limit is 256"), std::string::npos)
      << result.status();
}

TEST_F(TranslatorTest, OutOfRangeOptionsNameTheOption) {
  TranslationOptions options;
  options.beam_size = 0;
  auto result = translator_->Translate({"a dog"}, options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("beam_size"), std::string::npos);
  options.beam_size = 2;
  options.n_best = 3;
  result = translator_->Translate({"a dog"}, options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("n_best = 3"), std::string::npos);
  options.n_best = 1;
  options.length_penalty = -1.f;
  EXPECT_FALSE(translator_->Translate({"a dog"}, options).ok());
}

TEST_F(TranslatorTest, EmptyBatchAndEmptySentence) {
  auto empty = translator_->Translate({}, TranslationOptions());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto blank = translator_->Translate({""}, TranslationOptions());
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->size(), 1u);
}

TEST(TranslatorLoad, VocabularyMismatchIsReported) {
  // The golden model has 40 tokens; pairing it with the fixture's spm.model must fail clearly.
  namespace fs = std::filesystem;
  const fs::path directory = fs::path(testing::scratch_dir()) / "mismatched_vocab";
  fs::remove_all(directory);
  fs::create_directories(directory);
  for (const char* name : {"config.json", "model.safetensors"}) {
    fs::copy_file(fs::path(testing::golden_model_dir()) / name, directory / name);
  }
  fs::copy_file(fs::path(testing::tiny_model_dir()) / "spm.model", directory / "spm.model");
  auto loaded = Translator::Load(directory.string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("vocab_size = 40"), std::string::npos)
      << loaded.status();
}

TEST(TranslatorLoad, MissingTokenizerIsReported) {
  auto loaded = Translator::Load(testing::golden_model_dir());  // has no spm.model
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("spm.model"), std::string::npos);
}

}  // namespace
}  // namespace xlate
