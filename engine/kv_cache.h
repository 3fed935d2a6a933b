// The typed KV cache of one decoder layer (engine/decoder_state.h holds one per layer and the
// rows that use them).
// Legend: R live rows (sentences x beams), R_cap the row capacity, B source sentences,
// S_max the decoding capacity in positions, S_src the padded source length, C = d_model.
#pragma once

#include <vector>

#include "engine/tensor.h"

namespace xlate {

struct DecoderLayerCache {
  // Keys and values side by side in each row (columns [0, h·d_k) and [h·d_k, h·d_k + h·d_v)):
  // one projection GEMM and one scatter write both.
  // Time-major: entry [s, p] holds position s of whichever row occupied physical slot p when
  // position s was decoded. Each position is written once and never moved.
  Tensor self_key_values;   // [S_max, R_cap, h·d_k + h·d_v]
  Tensor cross_key_values;  // [B, S_src, h·d_k + h·d_v], computed once from the encoder output
};

// Storage that the self-attention caches of successive decoding states on one thread reuse (the
// Translator keeps one per worker for a call): a batch then writes its keys and values into pages
// that an earlier batch already faulted in, instead of fresh ones from the allocator (1.8% of
// the shipped model's time on test_2016, most of it the kernel zeroing new pages). CPU models
// only; used by one thread at a time.
struct KvCacheStorage {
  std::vector<Tensor> layers;  // per decoder layer, a flat buffer at least as large as the cache
};

}  // namespace xlate
