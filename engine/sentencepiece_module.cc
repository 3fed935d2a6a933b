// The module that holds SentencePiece (see sentencepiece_wrapper.h for why it is separate).
// The only file that includes SentencePiece's headers.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "engine/sentencepiece_wrapper.h"

namespace xlate::spm {
namespace {

std::string message(const sentencepiece::util::Status& status) {
  return status.ok() ? std::string() : status.ToString();
}

class SentencePieceBackend : public Backend {
 public:
  std::string load(const std::string& path) override { return message(processor_.Load(path)); }
  std::string encode(const std::string& text, std::vector<int>* ids) const override {
    return message(processor_.Encode(text, ids));
  }
  std::string decode(const std::vector<int>& ids, std::string* text) const override {
    return message(processor_.Decode(ids, text));
  }
  std::string encode_pieces(const std::string& text,
                            std::vector<std::string>* pieces) const override {
    return message(processor_.Encode(text, pieces));
  }
  std::string decode_pieces(const std::vector<std::string>& pieces,
                            std::string* text) const override {
    return message(processor_.Decode(pieces, text));
  }
  int size() const override { return processor_.GetPieceSize(); }
  bool is_control(int id) const override { return processor_.IsControl(id); }
  int piece_to_id(const std::string& piece) const override { return processor_.PieceToId(piece); }
  std::string id_to_piece(int id) const override { return processor_.IdToPiece(id); }
  std::string train(const std::string& arguments) const override {
    return message(sentencepiece::SentencePieceTrainer::Train(arguments));
  }

 private:
  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace
}  // namespace xlate::spm

extern "C" __attribute__((visibility("default"))) xlate::spm::Backend*
xlate_sentencepiece_create() {
  return new xlate::spm::SentencePieceBackend();
}
