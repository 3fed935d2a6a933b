// A std-only facade over SentencePiece.
//
// Debian's libsentencepiece bundles and exports its own protobuf-lite (3.14), which cannot share
// a process's global symbol scope with the system libprotobuf (3.21) that gRPC uses: whichever
// loads second binds to the other's internals and crashes. So SentencePiece lives in a small
// module of its own (libxlate_sentencepiece.so, built from sentencepiece_module.cc) that
// sentencepiece_wrapper.cc loads with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): the module and
// SentencePiece resolve their symbols among themselves and stay out of the global scope.
// This also keeps SentencePiece's own absl::string_view away from Abseil's. Sanitizer builds
// (whose runtimes refuse RTLD_DEEPBIND) load it without, which is safe in processes without
// another protobuf, and in the server only with a self-contained module (a static SentencePiece
// linked in with its symbols hidden, -DXLATE_SENTENCEPIECE_STATIC_DIR); otherwise it is refused
// there. Errors come back as strings (empty = success).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace xlate::spm {

// What the module implements; created by the module's xlate_sentencepiece_create().
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string load(const std::string& path) = 0;
  virtual std::string encode(const std::string& text, std::vector<int>* ids) const = 0;
  virtual std::string decode(const std::vector<int>& ids, std::string* text) const = 0;
  // The pieces as strings: a character the model does not know stays its own surface (not
  // "<unk>"), and decoding such a piece gives it back.
  virtual std::string encode_pieces(const std::string& text,
                                    std::vector<std::string>* pieces) const = 0;
  virtual std::string decode_pieces(const std::vector<std::string>& pieces,
                                    std::string* text) const = 0;
  virtual int size() const = 0;
  virtual bool is_control(int id) const = 0;
  virtual int piece_to_id(const std::string& piece) const = 0;
  virtual std::string id_to_piece(int id) const = 0;
  // Runs the SentencePiece trainer with a command-line style argument string.
  virtual std::string train(const std::string& arguments) const = 0;
};

// A Backend from the module, or null with *error set when the module cannot be loaded.
// The module is looked up at $XLATE_SENTENCEPIECE_MODULE, beside the running executable, in
// ../lib/ relative to it, and at the build tree's path.
std::unique_ptr<Backend> create_backend(std::string* error);

}  // namespace xlate::spm
