// A brute-force reference for beam search over a tiny model: every complete output of a
// sentence, scored by teacher-forced passes and GNMT's length penalty written here (not taken
// from the library, so that the reference does not share the rule it checks).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "engine/decoding/search.h"
#include "engine/transformer.h"

namespace xlate::testing {

struct Encoded {
  Tensor output, lengths;
};

inline Encoded encode(const TransformerModel& model, const std::vector<int32_t>& source) {
  Encoded encoded;
  encoded.lengths = Tensor::from_vector(std::vector<int32_t>{int32_t(source.size())}, {1});
  encoded.output = model.encode(Tensor::from_vector(source, {1, int64_t(source.size())}),
                                encoded.lengths);
  return encoded;
}

// GNMT's length penalty (Wu et al. 2016, eq. 14), written here rather than taken from the
// library: the brute-force reference must not share the rule it checks.
inline double gnmt_length_penalty(int length, double alpha) { return std::pow((5.0 + length) / 6.0, alpha); }

// log P(token | input) of the token after `input` (start token first), for every token of the
// target vocabulary: the last position of one teacher-forced pass, log-softmaxed in double.
inline std::vector<double> next_log_probs(const TransformerModel& model, const Encoded& encoded,
                                          const std::vector<int32_t>& input) {
  DecoderState state =
      model.start_decoding(encoded.output, encoded.lengths, 1, int64_t(input.size()));
  const Tensor logits =
      model.decode(state, Tensor::from_vector(input, {1, int64_t(input.size())}));
  const int64_t vocabulary = logits.dim(2);
  const float* last = logits.data<float>() + (input.size() - 1) * vocabulary;
  double best = -1e30, total = 0;
  for (int64_t v = 0; v < vocabulary; ++v) best = std::max(best, double(last[v]));
  for (int64_t v = 0; v < vocabulary; ++v) total += std::exp(last[v] - best);
  std::vector<double> log_probs(static_cast<size_t>(vocabulary));
  for (int64_t v = 0; v < vocabulary; ++v) log_probs[v] = last[v] - best - std::log(total);
  return log_probs;
}

// Every complete output of at most max_length tokens (end token included), scored by
// log P / lp(|Y|) from teacher-forced passes; best first.
inline std::vector<Hypothesis> enumerate_all(const TransformerModel& model,
                                             const Encoded& encoded, int max_length, float alpha,
                                             int32_t start_token = 2, int32_t end_token = 3) {
  std::vector<Hypothesis> all;
  std::function<void(std::vector<int32_t>, double)> expand = [&](std::vector<int32_t> prefix,
                                                                 double log_prob) {
    std::vector<int32_t> input = {start_token};
    input.insert(input.end(), prefix.begin(), prefix.end());
    const std::vector<double> next_token = next_log_probs(model, encoded, input);
    const int length = int(prefix.size()) + 1;
    for (int32_t token = 0; token < int32_t(next_token.size()); ++token) {
      const double next = log_prob + next_token[token];
      std::vector<int32_t> extended = prefix;
      if (token != end_token) extended.push_back(token);
      if (token == end_token || length == max_length) {
        Hypothesis finished;
        finished.tokens = extended;
        finished.score = float(next / gnmt_length_penalty(length, alpha));
        finished.log_prob = float(next);
        all.push_back(std::move(finished));
      } else {
        expand(extended, next);
      }
    }
  };
  expand({}, 0.0);
  std::sort(all.begin(), all.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  return all;
}

}  // namespace xlate::testing
