#include "engine/sentencepiece_wrapper.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

namespace xlate::spm {
namespace {

std::string message(const sentencepiece::util::Status& status) {
  return status.ok() ? std::string() : status.ToString();
}

}  // namespace

struct Processor::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

Processor::Processor() : impl_(std::make_unique<Impl>()) {}
Processor::~Processor() = default;

std::string Processor::load(const std::string& path) { return message(impl_->processor.Load(path)); }

std::string Processor::encode(const std::string& text, std::vector<int>* ids) const {
  return message(impl_->processor.Encode(text, ids));
}

std::string Processor::decode(const std::vector<int>& ids, std::string* text) const {
  return message(impl_->processor.Decode(ids, text));
}

int Processor::size() const { return impl_->processor.GetPieceSize(); }
bool Processor::is_control(int id) const { return impl_->processor.IsControl(id); }
int Processor::piece_to_id(const std::string& piece) const {
  return impl_->processor.PieceToId(piece);
}
std::string Processor::id_to_piece(int id) const { return impl_->processor.IdToPiece(id); }

std::string train(const std::string& arguments) {
  return message(sentencepiece::SentencePieceTrainer::Train(arguments));
}

}  // namespace xlate::spm
