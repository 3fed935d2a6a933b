#include "engine/tokenizer.h"

#include <sstream>

#include "engine/sentencepiece_wrapper.h"

namespace xlate {

struct Tokenizer::Impl {
  std::unique_ptr<spm::Backend> processor;
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  std::string error;
  impl->processor = spm::create_backend(&error);
  if (!impl->processor) return absl::FailedPreconditionError(error);
  error = impl->processor->load(path);
  if (!error.empty()) {
    return absl::NotFoundError(path + ": cannot load the SentencePiece model: " + error);
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  const std::string error = impl_->processor->encode(text, &ids);
  if (!error.empty()) return absl::InvalidArgumentError("tokenizer: " + error);
  return std::vector<int32_t>(ids.begin(), ids.end());
}

absl::StatusOr<std::string> Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<int> pieces;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return absl::InvalidArgumentError("tokenizer: id " + std::to_string(id) +
                                        " is outside the vocabulary of " +
                                        std::to_string(vocab_size()));
    }
    if (!impl_->processor->is_control(id)) pieces.push_back(id);
  }
  std::string text;
  const std::string error = impl_->processor->decode(pieces, &text);
  if (!error.empty()) return absl::InternalError("tokenizer: " + error);
  return text;
}

int Tokenizer::vocab_size() const { return impl_->processor->size(); }
int Tokenizer::id_of(const std::string& piece) const { return impl_->processor->piece_to_id(piece); }
std::string Tokenizer::piece_of(int id) const { return impl_->processor->id_to_piece(id); }

size_t Tokenizer::whole_words(const std::vector<int32_t>& ids) const {
  static constexpr char kWordStart[] = "\xE2\x96\x81";  // U+2581, SentencePiece's space
  for (size_t i = ids.size(); i-- > 1;) {
    if (piece_of(ids[i]).rfind(kWordStart, 0) == 0) return i;
  }
  return 0;
}

absl::Status train_tokenizer(const TokenizerTrainingOptions& options) {
  if (options.input_files.empty()) return absl::InvalidArgumentError("no input text files given");
  if (options.vocab_size < 8) {
    return absl::InvalidArgumentError("vocab_size " + std::to_string(options.vocab_size) +
                                      " is too small; it must be at least 8");
  }
  std::ostringstream args;
  args << "--input=";
  for (size_t i = 0; i < options.input_files.size(); ++i) {
    args << (i ? "," : "") << options.input_files[i];
  }
  args << " --model_prefix=" << options.model_prefix << " --vocab_size=" << options.vocab_size
       << " --model_type=" << options.model_type << " --character_coverage=1.0"
       << " --hard_vocab_limit=false --input_sentence_size=" << options.max_sentences
       << " --shuffle_input_sentence=true --pad_id=" << options.pad_id
       << " --unk_id=" << options.unk_id << " --bos_id=" << options.bos_id
       << " --eos_id=" << options.eos_id << " --minloglevel=2";
  std::string error;
  const std::unique_ptr<spm::Backend> backend = spm::create_backend(&error);
  if (!backend) return absl::FailedPreconditionError(error);
  error = backend->train(args.str());
  if (!error.empty()) return absl::InvalidArgumentError("SentencePiece training failed: " + error);
  return absl::OkStatus();
}

}  // namespace xlate
