#include "trainer/data/prepare.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/model_config.h"
#include "trainer/data/parallel_text.h"
#include "trainer/data/token_format.h"

namespace xlate::trainer {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string temporary_name(const std::string& path) {
  return absl::StrCat(path, ".tmp.", ::getpid());
}

absl::Status check_options(const PrepareOptions& options) {
  if (options.train_source.empty() || options.train_target.empty()) {
    return absl::InvalidArgumentError("both training files (source and target) are required");
  }
  if (options.valid_source.empty() != options.valid_target.empty()) {
    return absl::InvalidArgumentError(
        "give both validation files (source and target) or neither");
  }
  if (options.output_directory.empty()) {
    return absl::InvalidArgumentError("the output directory is required");
  }
  if (options.spm_model.empty() && options.vocab_size < 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("vocab_size ", options.vocab_size, " is too small; it must be >= 8"));
  }
  if (options.model_type != "bpe" && options.model_type != "unigram") {
    return absl::InvalidArgumentError(absl::StrCat(
        "model_type \"", options.model_type, "\" is not one of \"bpe\", \"unigram\""));
  }
  if (options.max_length < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_length ", options.max_length, " must be >= 2 (a piece + eos)"));
  }
  if (options.max_length_ratio != 0 && !(options.max_length_ratio >= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_length_ratio ", options.max_length_ratio, " must be >= 1, or 0 for no limit"));
  }
  if (options.threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads ", options.threads, " must be >= 0 (0 = all cores)"));
  }
  return absl::OkStatus();
}

absl::Status make_output_directory(const std::string& directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create the output directory ",
                                                    directory, ": ", error.message()));
  }
  if (!fs::is_directory(directory, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the output path ", directory, " exists and is not a directory"));
  }
  if (::access(directory.c_str(), W_OK | X_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("the output directory ", directory,
                                                    " is not writable: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status rename_into_place(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    const int error = errno;
    std::remove(from.c_str());
    return absl::InternalError(absl::StrCat(to, ": rename from ", from,
                                            " failed: ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::Status write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string temporary = temporary_name(path);
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << contents;
    file.flush();
    if (!file) {
      std::remove(temporary.c_str());
      return absl::InternalError(absl::StrCat(temporary, ": write failed"));
    }
  }
  return rename_into_place(temporary, path);
}

// Both sides of the training text as one plain file, the input of SentencePiece training.
absl::Status write_tokenizer_input(const PrepareOptions& options, const std::string& path) {
  absl::StatusOr<ParallelTextReader> reader =
      ParallelTextReader::Open(options.train_source, options.train_target);
  if (!reader.ok()) return reader.status();
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create"));
  std::string source, target;
  while (true) {
    absl::StatusOr<bool> more = reader->next(&source, &target);
    if (!more.ok()) return more.status();
    if (!*more) break;
    file << source << '\n' << target << '\n';
  }
  file.flush();
  if (!file) return absl::InternalError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

// Trains spm.model / spm.vocab in `directory` on both sides of the training text.
absl::Status train_shared_tokenizer(const PrepareOptions& options, const std::string& directory) {
  const std::string input = temporary_name(directory + "/spm_input.txt");
  const std::string prefix = temporary_name(directory + "/spm");
  absl::Status status = write_tokenizer_input(options, input);
  if (status.ok()) {
    const ModelConfig ids;
    TokenizerTrainingOptions training;
    training.input_files = {input};
    training.model_prefix = prefix;
    training.vocab_size = options.vocab_size;
    training.model_type = options.model_type;
    training.max_sentences = options.tokenizer_max_sentences;
    training.pad_id = ids.pad_id, training.unk_id = ids.unk_id;
    training.bos_id = ids.bos_id, training.eos_id = ids.eos_id;
    status = train_tokenizer(training);
  }
  std::remove(input.c_str());
  if (status.ok()) status = rename_into_place(prefix + ".vocab", directory + "/spm.vocab");
  if (status.ok()) status = rename_into_place(prefix + ".model", directory + "/spm.model");
  std::remove((prefix + ".vocab").c_str());
  std::remove((prefix + ".model").c_str());
  return status;
}

// Copies an existing spm.model into `directory` (unless it is that very file).
absl::Status copy_tokenizer(const std::string& model, const std::string& directory) {
  const std::string destination = directory + "/spm.model";
  std::error_code error;
  if (fs::exists(destination, error) && fs::equivalent(model, destination, error)) {
    return absl::OkStatus();
  }
  const std::string temporary = temporary_name(destination);
  fs::copy_file(model, temporary, fs::copy_options::overwrite_existing, error);
  if (error) {
    std::remove(temporary.c_str());
    return absl::NotFoundError(
        absl::StrCat("cannot copy ", model, " to ", temporary, ": ", error.message()));
  }
  return rename_into_place(temporary, destination);
}

// The special ids every xlate model assumes (engine/model_config.h) must be the model's.
absl::Status check_special_ids(const Tokenizer& tokenizer, const std::string& path) {
  const ModelConfig ids;
  const std::pair<int, const char*> expected[] = {
      {ids.pad_id, "<pad>"}, {ids.unk_id, "<unk>"}, {ids.bos_id, "<s>"}, {ids.eos_id, "</s>"}};
  for (const auto& [id, piece] : expected) {
    if (id >= tokenizer.vocab_size() || tokenizer.piece_of(id) != piece) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": id ", id, " must be the piece ", piece, " (pad 0, unk 1, bos 2, eos 3); train "
          "the SentencePiece model with these ids, e.g. by letting prepare train it"));
    }
  }
  return absl::OkStatus();
}

Json split_json(const SplitStats& stats) {
  return Json{{"input_pairs", stats.input_pairs},       {"kept_pairs", stats.kept_pairs},
              {"dropped_empty", stats.dropped_empty},   {"dropped_too_long", stats.dropped_too_long},
              {"dropped_ratio", stats.dropped_ratio},   {"source_tokens", stats.source_tokens},
              {"target_tokens", stats.target_tokens}};
}

std::string corpus_json(const PrepareOptions& options, const PrepareReport& report) {
  Json splits{{"train", split_json(report.train)}};
  if (report.has_valid) splits["valid"] = split_json(report.valid);
  const Json json{
      {"format_version", kTokenFormatVersion},
      {"vocab_size", report.vocab_size},
      {"tokenizer", "spm.model"},
      {"splits", splits},
      {"options",
       {{"train_source", options.train_source},
        {"train_target", options.train_target},
        {"valid_source", options.valid_source},
        {"valid_target", options.valid_target},
        {"vocab_size", options.vocab_size},
        {"model_type", options.model_type},
        {"max_length", options.max_length},
        {"max_length_ratio", options.max_length_ratio},
        {"spm_model", options.spm_model}}}};
  return json.dump(2) + "\n";
}

// Trains (or copies) the shared spm.model into the output directory and loads it.
absl::StatusOr<std::unique_ptr<Tokenizer>> make_shared_tokenizer(const PrepareOptions& options) {
  const std::string& directory = options.output_directory;
  absl::Status status = options.spm_model.empty() ? train_shared_tokenizer(options, directory)
                                                  : copy_tokenizer(options.spm_model, directory);
  if (!status.ok()) return status;
  const std::string model_path = directory + "/spm.model";
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::Load(model_path);
  if (!tokenizer.ok()) return tokenizer.status();
  status = check_special_ids(**tokenizer, model_path);
  if (!status.ok()) return status;
  return tokenizer;
}

EncodeSplitOptions split_options(const PrepareOptions& options, const std::string& split) {
  EncodeSplitOptions encode;
  const bool train = split == "train";
  encode.source_path = train ? options.train_source : options.valid_source;
  encode.target_path = train ? options.train_target : options.valid_target;
  encode.directory = options.output_directory;
  encode.split = split;
  encode.eos_id = ModelConfig().eos_id;
  encode.threads = options.threads > 0
                       ? options.threads
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // The ratio filter cleans training data only; it would make validation easier.
  encode.limits = PairLimits{options.max_length, train ? options.max_length_ratio : 0.0};
  return encode;
}

}  // namespace

absl::StatusOr<PrepareReport> prepare_corpus(const PrepareOptions& options) {
  absl::Status status = check_options(options);
  if (status.ok()) status = make_output_directory(options.output_directory);
  if (!status.ok()) return status;
  // corpus.json is written last: while it is missing, the directory is incomplete.
  const std::string corpus_json_path = options.output_directory + "/corpus.json";
  std::remove(corpus_json_path.c_str());
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = make_shared_tokenizer(options);
  if (!tokenizer.ok()) return tokenizer.status();

  PrepareReport report;
  report.vocab_size = (*tokenizer)->vocab_size();
  absl::StatusOr<SplitStats> train = encode_split(**tokenizer, split_options(options, "train"));
  if (!train.ok()) return train.status();
  report.train = *train;
  if (!options.valid_source.empty()) {
    absl::StatusOr<SplitStats> valid = encode_split(**tokenizer, split_options(options, "valid"));
    if (!valid.ok()) return valid.status();
    report.has_valid = true;
    report.valid = *valid;
  }
  status = write_file_atomically(corpus_json_path, corpus_json(options, report));
  if (!status.ok()) return status;
  return report;
}

}  // namespace xlate::trainer
