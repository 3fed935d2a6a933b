// A prepared token corpus from a stranger: the input is the split's .index file, then the
// .tokens file (the first 4 bytes, little-endian, give the index file's length). Open either
// refuses it with an error or every pair it then hands out lies inside the mapping, with ids
// in [0, vocab_size) once verify_token_ids passes.
#include <cstdint>
#include <cstring>

#include "tests/fuzz/fuzz_input.h"
#include "trainer/data/token_corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t index_bytes = 0;
  std::memcpy(&index_bytes, data, 4);
  data += 4;
  size -= 4;
  index_bytes = static_cast<uint32_t>(std::min<size_t>(index_bytes, size));
  const std::string& directory = xlate::fuzz::scratch_directory();
  xlate::fuzz::write_bytes(directory + "/train.index", data, index_bytes);
  xlate::fuzz::write_bytes(directory + "/train.tokens", data + index_bytes, size - index_bytes);
  auto corpus = xlate::trainer::TokenCorpus::Open(directory, "train");
  if (!corpus.ok()) return 0;
  const bool ids_ok = corpus->verify_token_ids().ok();
  int64_t sum = 0;
  for (int64_t i = 0; i < corpus->size(); ++i) {
    for (int32_t id : corpus->source(i)) {
      sum += id;
      if (ids_ok && (id < 0 || id >= corpus->vocab_size())) __builtin_trap();
    }
    for (int32_t id : corpus->target(i)) sum += id;
  }
  static volatile int64_t sink;
  sink = sum;  // the reads above must happen
  return 0;
}
