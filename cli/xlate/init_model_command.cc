#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "engine/model_directory.h"
#include "engine/tokenizer.h"
#include "cli/xlate/commands.h"

ABSL_FLAG(std::string, preset, "base", "architecture preset: tiny, base or big");
ABSL_FLAG(std::string, spm_from, "", "comma-separated plain-text files to train the vocabulary on");
ABSL_FLAG(int, vocab_size, 8000, "SentencePiece vocabulary size (shared source/target)");
ABSL_FLAG(std::string, spm_type, "unigram", "SentencePiece model type: unigram or bpe");
ABSL_FLAG(std::string, out, "", "model directory to write");
ABSL_FLAG(int64_t, seed, 1, "random seed of the weights");
ABSL_FLAG(std::string, dtype, "F32", "stored weight type: F32, F16 or BF16");
ABSL_FLAG(std::string, source_lang, "en", "source language code");
ABSL_FLAG(std::string, target_lang, "de", "target language code");

namespace xlate::tools {
namespace fs = std::filesystem;

int run_init_model() {
  const std::string out = absl::GetFlag(FLAGS_out);
  auto config = ModelConfig::Preset(absl::GetFlag(FLAGS_preset));
  DType dtype;
  std::string problem;
  if (!config.ok()) problem = std::string(config.status().message());
  else if (out.empty()) problem = "--out is required";
  else if (absl::GetFlag(FLAGS_spm_from).empty()) problem = "--spm_from is required";
  else if (!dtype_from_name(absl::GetFlag(FLAGS_dtype), &dtype) || dtype == DType::kInt32) {
    problem = "--dtype must be F32, F16 or BF16";
  }
  if (!problem.empty()) {
    std::cerr << "xlate init-model: " << problem << "\n";
    return 2;
  }
  std::error_code error;
  fs::create_directories(out, error);
  if (error) {
    std::cerr << "xlate init-model: cannot create " << out << ": " << error.message() << "\n";
    return 1;
  }
  TokenizerTrainingOptions training;
  training.input_files = absl::StrSplit(absl::GetFlag(FLAGS_spm_from), ',', absl::SkipEmpty());
  for (const std::string& file : training.input_files) {
    if (!fs::is_regular_file(file)) {
      std::cerr << "xlate init-model: --spm_from file " << file << " does not exist\n";
      return 1;
    }
  }
  training.model_prefix = (fs::path(out) / "spm").string();
  training.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  training.model_type = absl::GetFlag(FLAGS_spm_type);
  if (auto status = train_tokenizer(training); !status.ok()) {
    std::cerr << "xlate init-model: " << status.message() << "\n";
    return 1;
  }
  fs::remove(fs::path(out) / "spm.vocab", error);
  auto tokenizer = Tokenizer::Load((fs::path(out) / "spm.model").string());
  if (!tokenizer.ok()) {
    std::cerr << "xlate init-model: " << tokenizer.status().message() << "\n";
    return 1;
  }
  config->vocab_size = (*tokenizer)->vocab_size();
  config->source_lang = absl::GetFlag(FLAGS_source_lang);
  config->target_lang = absl::GetFlag(FLAGS_target_lang);
  const TransformerWeights weights =
      random_weights(*config, static_cast<uint64_t>(absl::GetFlag(FLAGS_seed)));
  if (auto status = save_model_directory(out, *config, weights, dtype); !status.ok()) {
    std::cerr << "xlate init-model: " << status.message() << "\n";
    return 1;
  }
  std::cerr << "xlate init-model: wrote " << out << " (" << absl::GetFlag(FLAGS_preset)
            << ", vocabulary " << config->vocab_size << ")\n";
  return 0;
}

}  // namespace xlate::tools
