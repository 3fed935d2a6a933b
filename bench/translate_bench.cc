// Engine throughput on a fixed plan of batches, for side-by-side runs with peers
// (bench/compare_ctranslate2.py writes the plan and runs CTranslate2 on the same batches).
//
// Plan file, one sentence per line: batch_index <TAB> decode_length <TAB> source sentence.
// Random weights decode to arbitrary lengths, so every hypothesis of a batch is decoded for
// exactly decode_length target tokens (min = max output length, no end token), the same for
// every system. Tokenisation is done before timing (peers get pre-tokenised input too).
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
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "engine/backend/cuda_backend.h"
#include "engine/placement_flags.h"
#include "engine/profiling.h"
#include "engine/translator.h"

ABSL_FLAG(std::string, model_dir, "", "model directory");
ABSL_FLAG(std::string, plan, "", "plan file: batch_index<TAB>decode_length<TAB>sentence");
ABSL_FLAG(int, beam_size, 4, "beam size");
ABSL_FLAG(int, threads, 2, "CPU threads");
ABSL_FLAG(int, warmup_batches, 1, "batches translated once before timing");
ABSL_FLAG(std::string, device, "cpu", "cpu, cuda or auto");
ABSL_FLAG(std::string, compute_type, "auto", "auto, float32, float16 or bfloat16");

namespace {

struct PlannedBatch {
  int decode_length = 0;
  std::vector<std::vector<int32_t>> sources;
};

int fail(const std::string& message) {
  std::cerr << "xlate_translate_bench: " << message << "\n";
  return 1;
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

  std::map<int, PlannedBatch> batches;
  int64_t line_number = 0;
  for (std::string line; std::getline(plan, line);) {
    ++line_number;
    std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits('\t', 2));
    int batch_index = 0, decode_length = 0;
    if (fields.size() != 3 || !absl::SimpleAtoi(fields[0], &batch_index) ||
        !absl::SimpleAtoi(fields[1], &decode_length) || decode_length < 1) {
      return fail("plan line " + std::to_string(line_number) + " is not index<TAB>length<TAB>text");
    }
    auto ids = (*translator)->tokenizer().encode(fields[2]);
    if (!ids.ok()) return fail(std::string(ids.status().message()));
    batches[batch_index].decode_length = decode_length;
    batches[batch_index].sources.push_back(*std::move(ids));
  }

  auto options_for = [](const PlannedBatch& batch) {
    xlate::TranslationOptions options;
    options.beam_size = absl::GetFlag(FLAGS_beam_size);
    options.max_batch_size = static_cast<int>(batch.sources.size());
    options.max_extra_length = 4096;
    options.min_output_length = batch.decode_length;
    options.max_output_length = batch.decode_length;
    return options;
  };
  int warmup = absl::GetFlag(FLAGS_warmup_batches);
  for (auto it = batches.begin(); it != batches.end() && warmup-- > 0; ++it) {
    (void)(*translator)->TranslateTokens(it->second.sources, options_for(it->second));
  }

  xlate::set_op_profiling(true);
  xlate::reset_op_profile();
  int64_t sentences = 0, target_tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [index, batch] : batches) {
    auto result = (*translator)->TranslateTokens(batch.sources, options_for(batch));
    if (!result.ok()) return fail(std::string(result.status().message()));
    for (const auto& hypotheses : *result) {
      ++sentences;
      target_tokens += static_cast<int64_t>(hypotheses.at(0).tokens.size());
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  nlohmann::json report = {
      {"system", "xlate"},
      {"device", xlate::device_label(placement->placement.device)},
      {"compute_type", xlate::dtype_label(placement->placement.dtype)},
      {"sentences", sentences},
      {"target_tokens", target_tokens},
      {"seconds", seconds},
      {"tokens_per_second", target_tokens / seconds},
      {"sentences_per_second", sentences / seconds},
      {"peak_rss_mb", usage.ru_maxrss / 1024.0}};
  if (on_gpu) {
    report["gpu_memory_mb"] = xlate::cuda_backend::bytes_reserved() / (1024.0 * 1024.0);
  }
  // Wall-time shares of the op categories (engine/profiling.h). On a GPU they are the host's
  // launch time per category, and transfer_share is mostly the wait for the device each step.
  const std::pair<const char*, xlate::OpCategory> categories[] = {
      {"matmul_share", xlate::OpCategory::kMatmul},
      {"attention_share", xlate::OpCategory::kAttention},
      {"softmax_share", xlate::OpCategory::kSoftmax},
      {"other_ops_share", xlate::OpCategory::kOther},
      {"transfer_share", xlate::OpCategory::kTransfer}};
  for (const auto& [name, category] : categories) {
    report[name] = xlate::op_profile_seconds(category) / seconds;
  }
  std::cout << report.dump() << std::endl;
  return 0;
}
