// Beam search whose state lives on the decoder's device (the op beam_search_step): on a GPU a
// step launches the decoder, the top-k and the search step and returns without waiting for the
// device. The host looks at the sentences' done flags every `sync_interval` steps (one small
// copy), and then reads the finished sentences' hypotheses back and drops their rows. Sentences
// may join between any two steps, each with its own beam and options (continuous batching); a
// batch is the case where all join at once. It is the one search, on every backend (the rule:
// rules/beam_search.h); greedy search is its beam of 1. Beams of 1 to the backend's
// max_beam (15 on CUDA, any on the CPU).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "engine/decoding/search.h"
#include "engine/decoding/stable_prefix.h"
#include "engine/decoder_state.h"

namespace xlate {

// What the device search needs of a model: every input and output on device().
class DeviceIncrementalDecoder {
 public:
  virtual ~DeviceIncrementalDecoder() = default;
  virtual Device device() const = 0;
  // Feeds one token per live row and returns, per row r, the k' = min(k, V) most probable next
  // tokens, best first (ties: smaller id first), scored row_scores[r] + log P(token | row r),
  // on device(): tokens int32 [R], row_scores float32 [R] (each hypothesis's log P so far);
  // TopK values float32 [R, k'], indices int32 [R, k'] stay there. 1 <= k <= kMaxDeviceTopK.
  // wanted: undefined, or int32 [R, W] tokens (-1: none) whose scores TopK::wanted_values
  // returns too (gather_log_probs).
  virtual TopK step_on_device(const Tensor& tokens, const Tensor& row_scores, int k,
                              const Tensor& wanted) = 0;
  // Beam reordering: source_rows int32 [R] on device(), each a row of the same sentence.
  virtual void select_rows_on_device(const Tensor& source_rows) = 0;
  // New live rows when sentences join or leave (DecoderState::place_rows).
  virtual void place_rows(const std::vector<RowPlacement>& rows) = 0;
};

class DeviceBeamSearch {
 public:
  // Up to `slots` sentences at once, each of up to `max_beam` (<= the max_beam of the decoder
  // device's backend) rows and `max_length` tokens. `decoder` must outlive the search and hold
  // `slots` sentence slots of max_beam rows and max_length positions: beam b of the sentence in
  // slot s is the decoder's row (RowPlacement) {sentence s, beam b}. sync_interval 0: the
  // device's own (every step on the CPU, where looking costs nothing; every 4th on a GPU).
  DeviceBeamSearch(DeviceIncrementalDecoder& decoder, int slots, int max_beam, int max_length,
                   int sync_interval);

  // Sentences in free `slots` (whose source the decoder holds) decode from the next step on,
  // searched with `options` (beam_size <= max_beam; the same end token for every sentence),
  // sentence i producing at most max_lengths[i] <= max_length tokens, the end token included.
  // constraints: empty, or per sentence the token sequences every hypothesis of it must contain
  // (lexical constraints, rules/beam_search.h: at most kMaxConstraints non-empty ones of
  // kMaxConstraintTokens tokens in all, no end token; a backend with lexical_constraints).
  void add(const std::vector<int>& slots, const std::vector<int>& max_lengths,
           const SearchOptions& options, const std::vector<Constraints>& constraints = {});
  // The same with options[i] for sentence i (each its own beam, n-best, length penalty...).
  void add(const std::vector<int>& slots, const std::vector<int>& max_lengths,
           const std::vector<SearchOptions>& options,
           const std::vector<Constraints>& constraints = {});

  struct Finished {
    int slot;
    std::vector<Hypothesis> hypotheses;  // up to n_best, best first
  };
  // One token for every live sentence. Every sync_interval-th step, and whenever a sentence may
  // have reached its max length, waits for the device and returns the sentences that finished;
  // their slots are free again.
  std::vector<Finished> step();

  struct Progress {
    int slot;
    std::vector<int32_t> stable_tokens;  // the sentence's stable prefix (stable_prefix.h)
  };
  // The stable prefixes that grew since the last call, of live sentences added with
  // report_stable_prefix. They are computed when step() looks at the done flags (every step on
  // the CPU, every sync_interval-th on a GPU), for the sentences that go on decoding; a
  // sentence that finishes comes back from step() instead.
  std::vector<Progress> take_progress() { return std::move(progress_); }

  // Drops every live sentence without results (after a step that failed part-way, e.g. out of
  // memory); returns their slots, free again. The search stays usable for new sentences.
  std::vector<int> abandon();
  // Drops the live sentences in `slots` without results (nobody waits for them): their rows
  // leave before the next step, and their slots are free again. Slots with no live sentence
  // are ignored. Returns the slots dropped.
  std::vector<int> drop(const std::vector<int>& slots);

  // Sentences added and not yet returned by step().
  int live_sentences() const { return static_cast<int>(live_.size()); }
  int live_rows() const { return rows_; }  // their hypotheses (beams), one decoder row each

 private:
  struct Sentence {
    int slot;
    int beam;
    int n_best;
    int max_length;
    float length_penalty;
    int decoded;  // steps it has taken part in (the position its rows decode next)
    bool reports_prefix;
    size_t stable_length = 0;  // tokens of its stable prefix reported so far
    int constraints = 0;       // lexical constraints it has
  };
  // The search state as the host reads it: the state itself on the CPU, copies on a GPU (the
  // history up to `steps`).
  struct HostState {
    Tensor finished_count, finished_scores, finished_log_probs;
    Tensor finished_last_steps, finished_last_index;
    Tensor history_tokens, history_parents;
    HypothesisHistory history(int slot, int max_beam) const;
  };
  HostState read_state(int steps) const;
  std::vector<Finished> sync();
  std::vector<Finished> collect(const std::vector<Sentence>& sentences) const;
  // Adds to progress_ the stable prefixes that grew; `first_rows[i]`: sentences[i]'s first row.
  void report_prefixes(const std::vector<Sentence*>& sentences, const std::vector<int>& first_rows);
  // Removes from progress_ what it holds of sentences in `slots` (finished or dropped).
  void forget_progress(const std::vector<int>& slots);
  // Places the rows of live_: its first kept_rows.size() rows continue those rows (the kept
  // sentences, in order); the sentences after them start.
  void place(const std::vector<int32_t>& kept_rows);
  // place() for the rows' constraint state: kept rows keep theirs, the others start afresh.
  void place_constraint_rows(const std::vector<int32_t>& kept_rows);
  // Writes the settings of constrained sentences' slots (allocated at the first).
  void set_constraints(const std::vector<int>& slots, const std::vector<Constraints>& constraints);

  DeviceIncrementalDecoder& decoder_;
  const Device device_;
  const int max_beam_;
  const int sync_interval_;
  BeamSearchTensors t_;
  Tensor done_on_host_;  // where a GPU's done flags are read into: pinned, reused every sync
  // The slots' constraints on the host (t_'s constraint_* are their copies on the device, the
  // same tensors on the CPU): what placing rows reads.
  struct {
    Tensor counts, starts, tokens;
  } host_constraints_;
  std::vector<Sentence> live_;  // in row order
  std::vector<Progress> progress_;
  int rows_ = 0;                // their rows
  int start_token_ = 2;
  int end_token_ = -1;
  int candidates_ = 1;          // per row: 2·B + 1 for the widest live beam
  int since_sync_ = 0;
  int steps_to_max_length_ = 0;  // the fewest steps a live sentence has left
};

}  // namespace xlate
