#include "trainer/model/dropout_key.h"

#include "rules/mix64.h"

namespace xlate::trainer {

uint64_t dropout_key(uint64_t seed, int64_t step, int64_t micro_batch, int rank, int64_t site) {
  using rules::mix64;
  uint64_t key = mix64(seed);
  key = mix64(key ^ static_cast<uint64_t>(step));
  key = mix64(key ^ static_cast<uint64_t>(micro_batch));
  key = mix64(key ^ static_cast<uint64_t>(rank));
  return mix64(key ^ static_cast<uint64_t>(site));
}

}  // namespace xlate::trainer
