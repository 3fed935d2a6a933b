// Engine throughput on a fixed plan of batches, for side-by-side runs with peers
// (bench/compare_ctranslate2.py writes the plan and runs CTranslate2 on the same batches).
//
// Plan file, one sentence per line: batch_index <TAB> decode_length <TAB> source sentence.
// Random weights decode to arbitrary lengths, so every hypothesis of a batch is decoded for
// exactly decode_length target tokens (min = max output length, no end token), the same for
// every system. decode_length 0 decodes naturally instead: until the end token, at most the
// source length + 50 tokens, as `xlate translate` does (a trained model; the peers stop by their
// own rules). Tokenisation is done before timing (peers get pre-tokenised input too); --output
// writes each plan line's best translation, detokenised after timing, in plan order.
//
// --engine batch (default) translates each planned batch with Translator; --engine continuous
// runs every sentence through the server's engine (ContinuousDecoder, as many sentences at once
// as the largest planned batch), admitting each batch's sentences as slots free up.
//
// Prints one JSON line: sentences, target_tokens, seconds, tokens_per_second,
// sentences_per_second, peak_rss_mb, and on the CPU matmul_share (and the other op shares: host
// wall time, meaningless for asynchronous GPU work), on CUDA gpu_memory_mb (the caching
// allocator's reserved bytes, its high-water mark). Per-kernel GPU time: run this binary under
// `nsys profile --stats=true`.
#include <omp.h>
#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "engine/ops/backend.h"
#include "engine/continuous_decoder.h"
#include "engine/placement_flags.h"
#include "engine/profiling.h"
#include "engine/translator.h"

ABSL_FLAG(std::string, model_dir, "", "model directory");
ABSL_FLAG(std::string, plan, "", "plan file: batch_index<TAB>decode_length<TAB>sentence");
ABSL_FLAG(int, beam_size, 4, "beam size");
ABSL_FLAG(int, threads, 2, "CPU threads");
ABSL_FLAG(int, workers, 1,
          "natural plans, --engine batch: batches translated at once, each on threads / workers "
          "threads (TranslationOptions::workers: the Translator re-batches the plan's sentences "
          "by length, as the plan did)");
ABSL_FLAG(int, warmup_batches, 1, "batches translated once before timing (at least --workers)");
ABSL_FLAG(std::string, device, "cpu", "cpu, cuda or auto");
ABSL_FLAG(std::string, compute_type, "auto", "auto, float32, float16, bfloat16 or int8");
ABSL_FLAG(std::string, engine, "batch", "batch (Translator) or continuous (the server's engine)");
ABSL_FLAG(std::string, output, "", "file for the best translation of each plan line, in order");

namespace {

struct PlannedBatch {
  int decode_length = 0;  // 0: natural stopping
  std::vector<std::vector<int32_t>> sources;
  std::vector<int64_t> lines;  // each source's 0-based plan line
};

int fail(const std::string& message) {
  std::cerr << "xlate_translate_bench: " << message << "\n";
  return 1;
}

using Plan = std::map<int, PlannedBatch>;
using OptionsFor = std::function<xlate::TranslationOptions(const PlannedBatch&)>;

// What was decoded: counts, and each plan line's best hypothesis (for --output).
struct Counts {
  int64_t sentences = 0, target_tokens = 0;
  std::map<int64_t, std::vector<int32_t>> best_by_line;
  void add(int64_t line, const std::vector<xlate::Hypothesis>& hypotheses) {
    ++sentences;
    target_tokens += static_cast<int64_t>(hypotheses.at(0).tokens.size());
    best_by_line[line] = hypotheses.at(0).tokens;
  }
};

absl::StatusOr<Counts> translate_batches(const xlate::Translator& translator, const Plan& plan,
                                         const OptionsFor& options_for) {
  Counts counts;
  if (absl::GetFlag(FLAGS_workers) > 1) {
    // One call over every sentence, which the Translator cuts into batches of the plan's size.
    PlannedBatch all;
    for (const auto& [index, batch] : plan) {
      all.sources.insert(all.sources.end(), batch.sources.begin(), batch.sources.end());
      all.lines.insert(all.lines.end(), batch.lines.begin(), batch.lines.end());
    }
    xlate::TranslationOptions options = options_for(all);
    options.max_batch_size = 1;
    for (const auto& [index, batch] : plan) {
      options.max_batch_size = std::max<int>(options.max_batch_size, batch.sources.size());
    }
    options.workers = absl::GetFlag(FLAGS_workers);
    auto result = translator.TranslateTokens(all.sources, options);
    if (!result.ok()) return result.status();
    for (size_t i = 0; i < result->size(); ++i) counts.add(all.lines[i], (*result)[i]);
    return counts;
  }
  for (const auto& [index, batch] : plan) {
    auto result = translator.TranslateTokens(batch.sources, options_for(batch));
    if (!result.ok()) return result.status();
    for (size_t i = 0; i < result->size(); ++i) counts.add(batch.lines[i], (*result)[i]);
  }
  return counts;
}

absl::StatusOr<Counts> translate_continuously(const xlate::Translator& translator,
                                              const Plan& plan, const OptionsFor& options_for) {
  xlate::ContinuousDecoderOptions limits;
  limits.max_beam_size = absl::GetFlag(FLAGS_beam_size);
  limits.max_source_tokens = translator.max_input_tokens();
  limits.max_sentences = 1;
  limits.max_target_tokens = 1;
  for (const auto& [index, batch] : plan) {
    limits.max_sentences = std::max<int>(limits.max_sentences, batch.sources.size());
    for (const auto& source : batch.sources) {
      const int natural = options_for(batch).max_output_tokens(source.size(), 1 << 20);
      limits.max_target_tokens = std::max(
          limits.max_target_tokens, batch.decode_length > 0 ? batch.decode_length : natural);
    }
  }
  xlate::ContinuousDecoder decoder(translator.model(), limits);
  Counts counts;
  std::map<int64_t, int64_t> line_of_handle;
  auto next = plan.begin();
  size_t admitted = 0;  // sentences of `next` already decoding
  while (next != plan.end() || decoder.live_sentences() > 0) {
    while (next != plan.end() && decoder.free_slots() > 0) {
      const auto& sources = next->second.sources;
      const size_t count = std::min(sources.size() - admitted, size_t(decoder.free_slots()));
      const std::vector<std::vector<int32_t>> group(sources.begin() + admitted,
                                                    sources.begin() + admitted + count);
      auto handles = decoder.Admit(group, options_for(next->second));
      if (!handles.ok()) return handles.status();
      for (size_t i = 0; i < count; ++i) {
        line_of_handle[(*handles)[i]] = next->second.lines[admitted + i];
      }
      admitted += count;
      if (admitted == sources.size()) ++next, admitted = 0;
    }
    for (const auto& finished : decoder.Step()) {
      counts.add(line_of_handle.at(finished.handle), finished.hypotheses);
    }
  }
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  omp_set_num_threads(absl::GetFlag(FLAGS_threads));
  auto placement =
      xlate::resolve_placement(absl::GetFlag(FLAGS_device), absl::GetFlag(FLAGS_compute_type));
  if (!placement.ok()) return fail(std::string(placement.status().message()));
  if (!placement->note.empty()) std::cerr << "xlate_translate_bench: " << placement->note << "\n";
  const bool on_gpu = placement->placement.device == xlate::Device::kCUDA;
  auto translator = xlate::Translator::Load(absl::GetFlag(FLAGS_model_dir), placement->placement);
  if (!translator.ok()) return fail(std::string(translator.status().message()));
  std::ifstream plan(absl::GetFlag(FLAGS_plan));
  if (!plan) return fail("cannot open --plan " + absl::GetFlag(FLAGS_plan));

  Plan batches;
  int64_t line_number = 0;
  for (std::string line; std::getline(plan, line);) {
    ++line_number;
    std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits('\t', 2));
    int batch_index = 0, decode_length = 0;
    if (fields.size() != 3 || !absl::SimpleAtoi(fields[0], &batch_index) ||
        !absl::SimpleAtoi(fields[1], &decode_length) || decode_length < 0) {
      return fail("plan line " + std::to_string(line_number) +
                  " is not index<TAB>length<TAB>text with a length >= 0");
    }
    auto ids = (*translator)->tokenizer().encode(fields[2]);
    if (!ids.ok()) return fail(std::string(ids.status().message()));
    batches[batch_index].decode_length = decode_length;
    batches[batch_index].sources.push_back(*std::move(ids));
    batches[batch_index].lines.push_back(line_number - 1);
  }

  const std::string engine = absl::GetFlag(FLAGS_engine);
  if (engine != "batch" && engine != "continuous") {
    return fail("--engine must be batch or continuous, not " + engine);
  }
  if (absl::GetFlag(FLAGS_workers) < 1) {
    return fail("--workers must be >= 1, not " + std::to_string(absl::GetFlag(FLAGS_workers)));
  }
  if (absl::GetFlag(FLAGS_workers) > 1) {
    if (engine != "batch") return fail("--workers > 1 needs --engine batch");
    for (const auto& [index, batch] : batches) {
      if (batch.decode_length > 0) {
        return fail("--workers > 1 needs a natural plan (a fixed plan gives each batch its own "
                    "length, so its batches are translated one by one)");
      }
    }
  }
  const auto translate = engine == "batch" ? translate_batches : translate_continuously;
  const OptionsFor options_for = [](const PlannedBatch& batch) {
    xlate::TranslationOptions options;
    options.beam_size = absl::GetFlag(FLAGS_beam_size);
    options.max_batch_size = static_cast<int>(batch.sources.size());
    if (batch.decode_length > 0) {
      options.max_extra_length = xlate::TranslationOptions::kMaxExtraLength;
      options.min_output_length = batch.decode_length;
      options.max_output_length = batch.decode_length;
    }
    return options;
  };
  // At least one batch per worker, so that the warm-up runs on the workers' threads as the timed
  // run does: one batch would be translated on this thread with all its OpenMP threads, whose
  // idle pool thread then spins (GOMP_SPINCOUNT, tens of ms) into the timed run's first steps,
  // taking a core from a worker.
  const int warmup_batches =
      std::max(absl::GetFlag(FLAGS_warmup_batches), absl::GetFlag(FLAGS_workers));
  Plan warmup;
  for (auto it = batches.begin();
       it != batches.end() && static_cast<int>(warmup.size()) < warmup_batches; ++it) {
    warmup.insert(*it);
  }
  if (auto warmed = translate(**translator, warmup, options_for); !warmed.ok()) {
    return fail(std::string(warmed.status().message()));
  }

  xlate::set_op_profiling(true);
  xlate::reset_op_profile();
  const auto start = std::chrono::steady_clock::now();
  const absl::StatusOr<Counts> counts = translate(**translator, batches, options_for);
  if (!counts.ok()) return fail(std::string(counts.status().message()));
  const int64_t sentences = counts->sentences, target_tokens = counts->target_tokens;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  nlohmann::json report = {
      {"system", "xlate"},
      {"engine", engine},
      {"device", xlate::device_label(placement->placement.device)},
      {"compute_type", xlate::compute_type_label(placement->placement)},
      {"sentences", sentences},
      {"target_tokens", target_tokens},
      {"seconds", seconds},
      {"tokens_per_second", target_tokens / seconds},
      {"sentences_per_second", sentences / seconds},
      {"peak_rss_mb", usage.ru_maxrss / 1024.0}};
  if (on_gpu) {
    report["gpu_memory_mb"] =
        xlate::op_backend(xlate::Device::kCUDA).memory().reserved / (1024.0 * 1024.0);
  }
  // Wall-time shares of the op categories (engine/profiling.h). On a GPU they are the host's
  // launch time per category, and transfer_share is mostly the wait for the device each step.
  const std::pair<const char*, xlate::OpCategory> categories[] = {
      {"matmul_share", xlate::OpCategory::kMatmul},
      {"attention_share", xlate::OpCategory::kAttention},
      {"softmax_share", xlate::OpCategory::kSoftmax},
      {"other_ops_share", xlate::OpCategory::kOther},
      {"transfer_share", xlate::OpCategory::kTransfer}};
  // With workers, shares of the workers' summed time.
  for (const auto& [name, category] : categories) {
    report[name] = xlate::op_profile_seconds(category) /
                   (seconds * std::max(1, absl::GetFlag(FLAGS_workers)));
  }
  if (const std::string path = absl::GetFlag(FLAGS_output); !path.empty()) {
    std::ofstream output(path);
    for (const auto& [line, tokens] : counts->best_by_line) {
      auto text = (*translator)->tokenizer().decode(tokens);
      if (!text.ok()) return fail(std::string(text.status().message()));
      output << *text << "\n";
    }
    if (!output.flush()) return fail("cannot write --output " + path);
  }
  std::cout << report.dump() << std::endl;
  return 0;
}
