// The paper's Transformer for inference: an encoder pass and an incremental decoder over a
// paged KV cache (engine/kv_cache_pool.h). Written once against the op interface
// (engine/ops/ops.h), so every backend runs the same code. The model loads, encodes, creates
// decoding states and does a decoding step's maths; the state (engine/decoder_state.h) keeps its
// rows and their blocks. Legend: R rows, S_src source positions, C = d_model, V the target
// vocabulary; T new target positions per call.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/decoder_state.h"
#include "engine/model_config.h"
#include "engine/model_weights.h"
#include "engine/ops/ops.h"

namespace xlate {

// Where a model computes: weights, activations and caches live on `device`, floats stored as
// `dtype` (float32 on the CPU). Inputs (token ids, lengths) are host tensors and logits come
// back as host float32 whatever the placement.
struct Placement {
  Device device = Device::kCPU;
  DType dtype = DType::kFloat32;
  // The elements of the packed linear weights (CPU, float32 activations): kFloat32, or for
  // compute type int8 kInt8 (every linear layer's weight and the output projection quantised at
  // load and multiplied in int8), or for compute type bfloat16 on the CPU kBFloat16 (rounded at
  // load, products of bfloat16 copies of the activations summed in float32). Embeddings,
  // attention, layer norms and softmax stay float32.
  DType weights = DType::kFloat32;
};

class TransformerModel {
 public:
  static absl::StatusOr<std::shared_ptr<const TransformerModel>> Load(
      const std::string& dir, const Placement& placement = {});
  // Moves/converts `weights` to the placement (no copy when they are there already), except the
  // attention projections, which are copied side by side (one GEMM per attention input), and,
  // on a backend that packs weights (the CPU), every linear layer's weight, which is packed: a
  // model made from live parameters (the trainer's) sees their values at construction. The
  // placement must be valid (check_placement).
  TransformerModel(ModelConfig config, TransformerWeights weights, const Placement& placement = {});

  const ModelConfig& config() const { return config_; }
  const TransformerWeights& weights() const { return weights_; }
  const Placement& placement() const { return placement_; }

  // source: int32 [B, S_src] padded at the end; source_lengths: int32 [B].
  // Returns the encoder output [B, S_src, C].
  Tensor encode(const Tensor& source, const Tensor& source_lengths) const;

  // A decoding state with one row per source sentence (its beam 0), room for `max_rows` rows
  // (rounded up to a whole number per sentence) and `max_positions` target positions; computes
  // the cross-attention keys/values once. For teacher-forced passes (alignments, tests).
  DecoderState start_decoding(const Tensor& encoder_output, const Tensor& source_lengths,
                              int64_t max_rows, int64_t max_positions) const;

  // Appends target tokens int32 [R, T] at each row's next positions and returns the logits
  // [R, T, V] of the next token at each of them. T = 1 is one incremental step; T > 1 with an
  // empty cache is the whole-prefix (teacher-forced) pass.
  Tensor decode(DecoderState& state, const Tensor& tokens) const;
  // One incremental step (T = 1) that returns only what the search reads: per row, the k best
  // tokens by log_softmax(logits) + row_scores[r], best first, every input and output on the
  // model's device: tokens int32 [R], row_scores float32 [R], TopK [R, min(k, V)], k <=
  // kMaxDeviceTopK. Nothing waits for the device, so a search that keeps its state there runs
  // ahead of the GPU, and a GPU brings R·k pairs to the host at most instead of R·V logits. wanted: undefined,
  // or int32 [R, W] tokens (-1: none) scored alike into TopK::wanted_values [R, W].
  TopK decode_top_k_on_device(DecoderState& state, const Tensor& tokens, const Tensor& row_scores,
                              int k, const Tensor& wanted = Tensor()) const;

  // The teacher-forced pass of decode() over tokens int32 [R, T] that returns, per decoder layer,
  // its cross-attention probabilities: host float32 [R, h, T, S_src] (S_src of the state; 0
  // beyond a row's source length). Query t is the position that predicts the token after
  // tokens[r, t]. For alignments (engine/alignment.h).
  std::vector<Tensor> cross_attention(DecoderState& state, const Tensor& tokens) const;

  // A KV-cache pool (engine/kv_cache_pool.h) for this model's decoder on its device: up to
  // max_blocks blocks, none taken yet.
  std::shared_ptr<KvCachePool> kv_cache_pool(int64_t max_blocks) const;
  // Bytes of one block of such a pool.
  int64_t kv_cache_block_bytes() const;

  // Slot decoding, for sentences that join and leave a running decode (continuous batching).
  // A state with no rows, `max_sentences` sentence slots of up to `max_source_tokens` source
  // tokens and `rows_per_sentence` rows (cache slots) each, its keys and values in `pool`
  // (kv_cache_pool; states that one thread steps may share one). Rows come with
  // DecoderState::place_rows; they decode through decode_top_k_on_device.
  DecoderState start_slots(int64_t max_sentences, int64_t max_source_tokens,
                           int64_t rows_per_sentence, int64_t max_positions,
                           std::shared_ptr<KvCachePool> pool) const;
  // Computes the cross-attention keys/values of encoder_output [n, S <= max_source_tokens, C]
  // (host source_lengths int32 [n]) into blocks of sentence slots sentence_slots[0..n); rows
  // placed afterwards read them. Throws std::bad_alloc when the pool has no room for them.
  void set_sources(DecoderState& state, const Tensor& encoder_output, const Tensor& source_lengths,
                   const std::vector<int32_t>& sentence_slots) const;

 private:
  // Weights arrive one parameter at a time (from a file as it is read, or from weights given in
  // memory), and each linear layer the model multiplies by is made as soon as its parts have
  // all come: an attention's projections of one input fused into one weight and bias, then, on
  // a backend that packs weights (the CPU) or for int8 or bfloat16 weights, packed as float32,
  // bfloat16 or int8, with the plain copies dropped. So a load holds one tensor's staging beside
  // what it has made, never the whole model twice.
  struct PendingLinear {
    std::vector<LinearWeights*> parts;  // fused, in order, into `made`, or `made` itself
    LinearWeights* made;
    size_t missing;  // the parts' weights and biases not yet arrived
  };
  // A model to be given its weights by prepare() (Load's path).
  TransformerModel(ModelConfig config, const Placement& placement);
  // Sizes weights_'s layers and lists the linear layers to make.
  void plan_linears();
  // Takes one parameter that has arrived in weights_ (float32 on the host): converts it to the
  // placement and makes what it completes. The tied embedding table packed in float32 or int8 is
  // the output projection too: lookups read their rows from it (packed_weight_rows; int8's are
  // its quantised values, as CTranslate2's int8 embeddings are), and the plain table is dropped,
  // so that it is held once (NLLB-200's 256k x 1024 table: a GB).
  void prepare(const NamedParameter& parameter);
  void make_linear(PendingLinear& linear);
  // Once every parameter has come: the output projection's bias, and the device in step.
  void finish_preparing();
  // x[N, T, C] = the embedding of tokens [N, T] (scaled) plus their positions' (as
  // embedding_forward), from `table`, or, when the model holds the table only as its packed
  // output projection (`table` undefined), from that.
  void embed(Tensor& x, const Tensor& tokens, const Tensor& table, const Tensor& positions,
             int64_t position_offset, const Tensor& row_positions) const;
  // A stack's activations [rows, T, C] between sub-layers. Each sub-layer k has one layer norm
  // N_k. Post-norm (the paper's, Marian's): x = N_k(x + F_k(x)), and F_k reads x. Pre-norm
  // (config.pre_norm, M2M100): x = x + F_k(N_k(x)), and the stack's output is N_final(x); the
  // norm of what comes next is applied in the same pass as the residual sum.
  struct Residual {
    Tensor x;      // the residual stream
    Tensor input;  // what the next sub-layer (or the stack's caller) reads: x, or N_next(x)
  };
  // The stream of a stack's embedded input; `first` is its first sub-layer's norm.
  Residual start_stack(Tensor embedded, const LayerNormWeights& first) const;
  // Adds a sub-layer's output: `own` is the sub-layer's norm (post-norm), `next` the norm of
  // what reads the stream next (pre-norm).
  void add_sublayer(Residual& stream, Tensor sublayer_out, const LayerNormWeights& own,
                    const LayerNormWeights& next) const;
  // The norm after layer `index`: the next layer's first, or the stack's final norm.
  const LayerNormWeights& norm_after_encoder_layer(size_t index) const;
  const LayerNormWeights& norm_after_decoder_layer(size_t index) const;
  void encoder_layer(size_t index, Residual& stream, const Tensor& key_rows,
                     const Tensor& lengths) const;
  // cross_weights: null, or [R, h, T, S_src] on the device for the cross-attention's weights.
  // cache: the layer's keys and values in the state's pool ([pool rows, h·d_k + h·d_v]), self-
  // and cross-attention alike, addressed by the step tables.
  void decoder_layer(size_t index, Tensor& cache, const DecoderState::StepTables& tables,
                     Residual& stream, Tensor* cross_weights) const;
  void feed_forward(const LinearWeights& inner, const LinearWeights& outer,
                    const LayerNormWeights& norm, Residual& stream,
                    const LayerNormWeights& next) const;
  Tensor activations(std::vector<int64_t> shape) const;  // uninitialised, on the placement
  Tensor on_device(const Tensor& host) const;             // a host input on the model's device
  Tensor logits_to_host(const Tensor& logits) const;      // host float32, for decode()
  // decode() with the logits [R, T, V] left on the model's device.
  Tensor decode_on_device(DecoderState& state, const Tensor& tokens) const;
  // decode_on_device of one step (T = 1), logits [R, V], with each forced row's distribution
  // made certain of its token (logit 0, every other -inf: log P = 0, as transformers' forced
  // BOS processor leaves it).
  Tensor step_logits(DecoderState& state, const Tensor& tokens) const;
  // The decoder layers of decode(): the last layer's output [R, T, C]; with cross_weights, each
  // layer's cross-attention weights [R, h, T, S_src] (on the device) are appended to it.
  Tensor decoder_layers(DecoderState& state, const Tensor& tokens,
                        std::vector<Tensor>* cross_weights) const;
  // log_softmax_top_k of logits [R, V] with offsets [R] on the logits' device, min(k, V) per row.
  static TopK top_k_of(const Tensor& logits, const Tensor& offsets, int k);

  ModelConfig config_;
  TransformerWeights weights_;
  Placement placement_;
  // Per layer: the self-attentions' q | k | v [h·d_k + h·d_k + h·d_v, C] (encoder, decoder) and
  // the cross-attentions' k | v [h·d_k + h·d_v, C] (they project the encoder output).
  std::vector<LinearWeights> encoder_projections_, decoder_projections_, cross_projections_;
  // The output layer: the shared embedding (tied) and the logits bias; packed on the CPU.
  LinearWeights output_projection_;
  bool packs_ = false;                          // the linear layers' weights are packed
  const Tensor* output_source_ = nullptr;       // the parameter that is the output projection
  std::vector<PendingLinear> pending_;          // emptied once every parameter has come
  std::map<const Tensor*, size_t> pending_of_;  // a part's weight or bias -> its pending_ entry
};

// OK, or why `placement` cannot run in this build / on this machine ("--dtype F16 needs the
// CUDA backend", "no CUDA device", int8 on a GPU or on a processor without AVX2).
absl::Status check_placement(const Placement& placement);

}  // namespace xlate
