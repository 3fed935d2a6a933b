// The dynamic-batching policy: a pure function of (queue, clock), so that it can be tested with
// a fake clock. Triton's semantics: a batch is dispatched when it is full or when its first
// sentence has waited max_queue_delay; otherwise the caller waits the returned time. The first
// sentence is the first in fair order (PendingSentence::fair_start), the oldest among equals.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "absl/time/time.h"

namespace xlate::server {

struct PendingSentence {
  int64_t tokens = 0;        // source tokens, end token included
  absl::Time enqueued;       // when it entered the queue
  absl::Time deadline = absl::InfiniteFuture();
  // The sentence's place in fair order (start-time fair queuing over clients: the scheduler
  // gives each client's sentences consecutive slices of virtual time, in source tokens, from
  // the later of now and its previous sentence's end). Batches grow from the first sentence in
  // this order, so one client's flood cannot hold a lighter client's sentence behind it. Equal
  // values keep arrival order.
  double fair_start = 0;
};

struct BatchingLimits {
  // Padded source tokens of a batch (sentences x longest sentence) may not exceed this; a
  // single sentence over the budget still forms a batch of its own.
  int64_t max_batch_tokens = 8192;
  int max_batch_sentences = 64;
  absl::Duration max_queue_delay = absl::Milliseconds(5);
};

struct BatchDecision {
  std::vector<size_t> expired;  // queue indices whose deadline has passed: drop them
  // Queue indices to dispatch now, ascending (may be empty): the first sentence in fair order
  // (the oldest, among equals) and those closest to it in length, whatever their options (each
  // sentence decodes with its own).
  std::vector<size_t> batch;
  // When `batch` is empty: how long until the decision may change without a new arrival
  // (the first sentence's delay running out, or the next deadline). InfiniteDuration when
  // the queue is empty.
  absl::Duration wait = absl::InfiniteDuration();
};

// `queue` is in arrival order.
BatchDecision decide_batch(const std::deque<PendingSentence>& queue, absl::Time now,
                           const BatchingLimits& limits);

}  // namespace xlate::server
