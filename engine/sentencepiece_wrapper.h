// A std-only facade over SentencePiece. sentencepiece_wrapper.cc is the one file that includes
// SentencePiece's headers: version 0.1.97 declares its own absl::string_view, which clashes with
// Abseil's, so no Abseil header may meet it. Errors come back as strings (empty = success).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace xlate::spm {

class Processor {
 public:
  Processor();
  ~Processor();
  std::string load(const std::string& path);
  std::string encode(const std::string& text, std::vector<int>* ids) const;
  std::string decode(const std::vector<int>& ids, std::string* text) const;
  int size() const;
  bool is_control(int id) const;
  int piece_to_id(const std::string& piece) const;
  std::string id_to_piece(int id) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs the SentencePiece trainer with a command-line style argument string.
std::string train(const std::string& arguments);

}  // namespace xlate::spm
