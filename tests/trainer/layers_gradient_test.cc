// Every training layer's backward pass (the training ops of engine/ops/training_ops.h, CPU
// bodies) against central finite differences of its forward.
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"
#include "tests/trainer/gradient_check.h"
#include "engine/key_rows.h"
#include "trainer/model/dropout_key.h"

namespace xlate::trainer {
namespace {

using testing::expect_gradient_matches;
using testing::random_tensor;
using testing::weighted_sum;

TEST(LayerGradients, LinearWithReluAndBias) {
  std::mt19937 rng(1);
  Tensor inp = random_tensor({6, 5}, rng), weight = random_tensor({4, 5}, rng);
  Tensor bias = random_tensor({4}, rng), probe = random_tensor({6, 4}, rng);
  Tensor out = Tensor::empty({6, 4}, DType::kFloat32);
  auto loss = [&] {
    linear_forward(out, inp, weight, bias, Activation::kRelu);
    return weighted_sum(out, probe);
  };
  loss();
  Tensor dout = Tensor::empty({6, 4}, DType::kFloat32);
  relu_backward(dout, probe, out);
  Tensor dinp = Tensor::empty({6, 5}, DType::kFloat32);
  Tensor dweight = Tensor::zeros({4, 5}, DType::kFloat32), dbias = Tensor::zeros({4}, DType::kFloat32);
  linear_backward(dinp, dweight, dbias, dout, inp, weight, GradientWrite::kOverwrite);
  expect_gradient_matches(loss, inp, dinp, "dinp");
  expect_gradient_matches(loss, weight, dweight, "dweight");
  expect_gradient_matches(loss, bias, dbias, "dbias");
}

TEST(LayerGradients, LinearAccumulatesParameterAndRequestedInputGradients) {
  std::mt19937 rng(2);
  Tensor inp = random_tensor({3, 2}, rng), weight = random_tensor({2, 2}, rng);
  Tensor dout = random_tensor({3, 2}, rng);
  Tensor dinp = Tensor::zeros({3, 2}, DType::kFloat32), dweight = Tensor::zeros({2, 2}, DType::kFloat32);
  Tensor no_bias;
  linear_backward(dinp, dweight, no_bias, dout, inp, weight, GradientWrite::kAccumulate);
  const Tensor once_inp = dinp.clone(), once_weight = dweight.clone();
  linear_backward(dinp, dweight, no_bias, dout, inp, weight, GradientWrite::kAccumulate);
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(dinp.data<float>()[i], 2 * once_inp.data<float>()[i]);
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(dweight.data<float>()[i], 2 * once_weight.data<float>()[i]);
}

// LN(residual + Dropout(inp)) with its dropout at p (0: none): the backward against finite
// differences of the forward (the mask is fixed by its key, so the loss is smooth in inp).
void check_residual_layer_norm(float p, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor inp = random_tensor({5, 8}, rng, 2.f), residual = random_tensor({5, 8}, rng);
  Tensor gamma = random_tensor({8}, rng), beta = random_tensor({8}, rng);
  Tensor probe = random_tensor({5, 8}, rng);
  Tensor out = Tensor::empty({5, 8}, DType::kFloat32);
  LayerNormTraining saved{p, 77, Tensor::empty({5, 8}, DType::kFloat32),
                          Tensor::empty({5}, DType::kFloat32), Tensor::empty({5}, DType::kFloat32)};
  auto loss = [&] {
    add_layer_norm_forward(out, inp, residual, gamma, beta, 1e-5f, &saved);
    return weighted_sum(out, probe);
  };
  loss();
  // The training forward is the inference forward after dropout_forward (whose rows the CPU
  // vectorises in another order); the sum it keeps is the dropped-out inp plus the residual.
  Tensor dropped = Tensor::empty({5, 8}, DType::kFloat32);
  dropout_forward(dropped, inp, p, 77);
  Tensor composite_out = Tensor::empty({5, 8}, DType::kFloat32);
  add_layer_norm_forward(composite_out, dropped, residual, gamma, beta, 1e-5f);
  for (int64_t i = 0; i < 40; ++i) {
    EXPECT_NEAR(out.data<float>()[i], composite_out.data<float>()[i], 1e-5) << i;
    EXPECT_EQ(saved.sum.data<float>()[i], dropped.data<float>()[i] + residual.data<float>()[i]);
  }
  Tensor dresidual = Tensor::empty({5, 8}, DType::kFloat32);
  Tensor dinp = Tensor::empty({5, 8}, DType::kFloat32);
  Tensor dgamma = Tensor::zeros({8}, DType::kFloat32), dbeta = Tensor::zeros({8}, DType::kFloat32);
  layer_norm_backward(dresidual, dinp, dgamma, dbeta, probe, saved, gamma);
  expect_gradient_matches(loss, inp, dinp, "d(inp)");
  expect_gradient_matches(loss, residual, dresidual, "d(residual)");
  expect_gradient_matches(loss, gamma, dgamma, "dgamma");
  expect_gradient_matches(loss, beta, dbeta, "dbeta");
  // inp's gradient is the residual's through dropout's backward.
  Tensor expected_dinp = Tensor::empty({5, 8}, DType::kFloat32);
  dropout_backward(expected_dinp, dresidual, p, 77);
  for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(dinp.data<float>()[i], expected_dinp.data<float>()[i]);

  // In place, as the model runs it: the sum over inp, the residual's gradient over dout.
  loss();  // the finite differences left the outputs of a perturbed input
  LayerNormTraining in_place = saved;
  in_place.sum = inp.clone();
  Tensor in_place_out = Tensor::empty({5, 8}, DType::kFloat32);
  add_layer_norm_forward(in_place_out, in_place.sum, residual, gamma, beta, 1e-5f, &in_place);
  Tensor dout = probe.clone(), in_place_dinp = Tensor::empty({5, 8}, DType::kFloat32);
  Tensor dgamma_again = Tensor::zeros({8}, DType::kFloat32);
  Tensor dbeta_again = Tensor::zeros({8}, DType::kFloat32);
  layer_norm_backward(dout, in_place_dinp, dgamma_again, dbeta_again, dout, in_place, gamma);
  for (int64_t i = 0; i < 40; ++i) {
    EXPECT_EQ(in_place_out.data<float>()[i], out.data<float>()[i]);
    EXPECT_EQ(in_place.sum.data<float>()[i], saved.sum.data<float>()[i]);
    EXPECT_EQ(dout.data<float>()[i], dresidual.data<float>()[i]);
    EXPECT_EQ(in_place_dinp.data<float>()[i], dinp.data<float>()[i]);
  }
}

TEST(LayerGradients, ResidualLayerNormSavesWhatItsBackwardNeeds) { check_residual_layer_norm(0.f, 3); }

TEST(LayerGradients, ResidualLayerNormDropsItsSublayerOut) { check_residual_layer_norm(0.3f, 4); }

TEST(LayerGradients, ResidualLayerNormRefusesASumOverItsResidual) {
  Tensor x = Tensor::zeros({2, 4}, DType::kFloat32), y = Tensor::zeros({2, 4}, DType::kFloat32);
  Tensor gamma = Tensor::zeros({4}, DType::kFloat32), out = Tensor::empty({2, 4}, DType::kFloat32);
  LayerNormTraining saved{0.1f, 1, y, Tensor::empty({2}, DType::kFloat32),
                          Tensor::empty({2}, DType::kFloat32)};
  try {
    add_layer_norm_forward(out, x, y, gamma, gamma, 1e-5f, &saved);
    ADD_FAILURE() << "a sum over the residual was accepted";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("may alias inp, not residual"), std::string::npos)
        << error.what();
  }
  saved.sum = x;
  saved.dropout = 1.f;
  EXPECT_THROW(add_layer_norm_forward(out, x, y, gamma, gamma, 1e-5f, &saved), std::logic_error);
  saved.dropout = 0.1f;
  Tensor dx = Tensor::empty({2, 4}, DType::kFloat32), dgamma = Tensor::zeros({4}, DType::kFloat32);
  try {
    layer_norm_backward(dx, dx, dgamma, dgamma, out, saved, gamma);
    ADD_FAILURE() << "one tensor for both input gradients was accepted";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("dresidual and dinp must differ"), std::string::npos)
        << error.what();
  }
}

TEST(LayerGradients, TrainingOpsRefuseBadArguments) {
  Tensor x = Tensor::zeros({4}, DType::kFloat32), out = Tensor::empty({4}, DType::kFloat32);
  EXPECT_THROW(dropout_forward(out, x, 1.f, 7), std::logic_error);
  try {
    const Tensor short_relu_out = Tensor::zeros({3}, DType::kFloat32);
    dropout_relu_backward(out, x, short_relu_out, 0.1f, 7);
    ADD_FAILURE() << "a ReLU output of another size was accepted";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("relu_out"), std::string::npos) << error.what();
  }
  Tensor logits = Tensor::zeros({2, 3}, DType::kFloat32);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{1, 3}, {2});
  try {
    cross_entropy_forward(logits, logits, targets, 0.1f, 0);
    ADD_FAILURE() << "a target beyond the classes was accepted";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("target 3 beyond the 3 classes"), std::string::npos)
        << error.what();
  }
  Tensor table = Tensor::zeros({5, 2}, DType::kFloat32), dout = Tensor::zeros({1, 2, 2}, DType::kFloat32);
  Tensor tokens = Tensor::from_vector(std::vector<int32_t>{0, 5}, {1, 2});
  Tensor no_positions;
  EXPECT_THROW(embedding_backward(table, no_positions, dout, tokens, 1.f), std::logic_error);
}

// The engine's attention_forward as training calls it: batch-major keys through the identity
// key_rows table, the probabilities saved for the backward pass.
void check_attention(bool causal, int64_t queries, int64_t keys, std::vector<int32_t> lengths) {
  std::mt19937 rng(4);
  const int heads = 2;
  const int64_t sentences = static_cast<int64_t>(lengths.size()), dk = 3, dv = 2;
  Tensor q = random_tensor({sentences, queries, heads * dk}, rng, 2.f);
  Tensor k = random_tensor({sentences, keys, heads * dk}, rng, 2.f);
  Tensor v = random_tensor({sentences, keys, heads * dv}, rng);
  Tensor key_lengths = Tensor::from_vector(lengths, {sentences});
  Tensor probe = random_tensor({sentences, queries, heads * dv}, rng);
  Tensor out = Tensor::empty({sentences, queries, heads * dv}, DType::kFloat32);
  Tensor probs = Tensor::empty({sentences, heads, queries, keys}, DType::kFloat32);
  const Tensor key_rows = batch_major_key_rows(sentences, keys);
  auto loss = [&] {
    attention_forward(out, q, k, v, key_rows, key_lengths, heads, causal, &probs);
    return weighted_sum(out, probe);
  };
  loss();
  Tensor dq = Tensor::empty(q.shape(), DType::kFloat32), dk_ = Tensor::empty(k.shape(), DType::kFloat32);
  Tensor dv_ = Tensor::empty(v.shape(), DType::kFloat32);
  attention_backward(dq, dk_, dv_, probe, probs, q, k, v, heads);
  expect_gradient_matches(loss, q, dq, "dq");
  expect_gradient_matches(loss, k, dk_, "dk");
  expect_gradient_matches(loss, v, dv_, "dv");
  // Padded keys have no influence, so their gradients are exactly zero.
  for (int64_t n = 0; n < sentences; ++n) {
    for (int64_t s = lengths[n]; s < keys; ++s) {
      for (int64_t c = 0; c < heads * dk; ++c) {
        EXPECT_EQ(dk_.data<float>()[(n * keys + s) * heads * dk + c], 0.f);
      }
    }
  }
}

TEST(LayerGradients, AttentionWithPaddingMask) { check_attention(false, 3, 5, {5, 2}); }
// Causal self-attention as the decoder trains it: every key length T (a padded query's output
// reaches no loss).
TEST(LayerGradients, CausalSelfAttention) { check_attention(true, 4, 4, {4, 4}); }

TEST(LayerGradients, LabelSmoothedCrossEntropyIgnoresPadding) {
  std::mt19937 rng(5);
  const int pad = 0;
  Tensor logits = random_tensor({4, 7}, rng, 3.f);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{3, pad, 6, 1}, {4});
  Tensor log_probs = Tensor::empty({4, 7}, DType::kFloat32);
  CrossEntropySums sums;
  auto loss = [&] {
    sums = cross_entropy_forward(log_probs, logits, targets, 0.1f, pad).read();
    return sums.loss;
  };
  loss();
  EXPECT_EQ(sums.tokens, 3);
  Tensor dlogits = Tensor::empty({4, 7}, DType::kFloat32);
  cross_entropy_backward(dlogits, log_probs, targets, 0.1f, pad, 1.f);
  expect_gradient_matches(loss, logits, dlogits, "dlogits", {1e-2f, 1e-3, 1e-2, 28});
  for (int v = 0; v < 7; ++v) EXPECT_EQ(dlogits.data<float>()[7 + v], 0.f);
}

// A device's sums are copied when first read, once; the CPU's are ready at once.
TEST(LayerGradients, PendingCrossEntropySumsReadTheDeviceOnce) {
  int reads = 0;
  PendingCrossEntropySums pending([&reads] {
    ++reads;
    return CrossEntropySums{2.5, 1.5, 3};
  });
  EXPECT_EQ(reads, 0);
  EXPECT_EQ(pending.read().loss, 2.5);
  EXPECT_EQ(pending.read().tokens, 3);
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(PendingCrossEntropySums().read().tokens, 0);
  EXPECT_EQ(PendingCrossEntropySums(CrossEntropySums{1, 2, 4}).read().nll, 2);
}

TEST(LayerGradients, CrossEntropyWithoutSmoothingIsTheNegativeLogLikelihood) {
  Tensor logits = Tensor::from_vector(std::vector<float>{0.f, std::log(3.f)}, {1, 2});
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{1}, {1});
  Tensor log_probs = Tensor::empty({1, 2}, DType::kFloat32);
  const CrossEntropySums sums =
      cross_entropy_forward(log_probs, logits, targets, 0.f, -1).read();
  EXPECT_NEAR(sums.loss, -std::log(0.75), 1e-5);
  EXPECT_NEAR(sums.nll, -std::log(0.75), 1e-5);
}

TEST(LayerGradients, EmbeddingScatterWithRepeatedTokensAndLearnedPositions) {
  std::mt19937 rng(6);
  Tensor table = random_tensor({5, 4}, rng), positions = random_tensor({6, 4}, rng);
  Tensor tokens = Tensor::from_vector(std::vector<int32_t>{1, 3, 1, 4, 4, 4}, {2, 3});
  Tensor probe = random_tensor({2, 3, 4}, rng);
  Tensor out = Tensor::empty({2, 3, 4}, DType::kFloat32);
  const float scale = 2.f;
  auto loss = [&] {
    embedding_forward(out, tokens, table, positions, scale, 0);
    return weighted_sum(out, probe);
  };
  loss();
  Tensor dtable = Tensor::zeros({5, 4}, DType::kFloat32), dpositions = Tensor::zeros({6, 4}, DType::kFloat32);
  embedding_backward(dtable, dpositions, probe, tokens, scale);
  expect_gradient_matches(loss, table, dtable, "dtable", {1e-2f, 2e-3, 2e-2, 20});
  expect_gradient_matches(loss, positions, dpositions, "dpositions", {1e-2f, 2e-3, 2e-2, 24});
}

TEST(LayerGradients, DropoutBackwardReplaysTheForwardMask) {
  std::mt19937 rng(7);
  Tensor inp = random_tensor({1000, 10}, rng);
  Tensor out = Tensor::empty(inp.shape(), DType::kFloat32);
  const uint64_t key = dropout_key(11, 5, 0, 0, 3);
  dropout_forward(out, inp, 0.3f, key);
  Tensor ones = Tensor::from_vector(std::vector<float>(10000, 1.f), {1000, 10});
  Tensor mask = Tensor::empty(inp.shape(), DType::kFloat32);
  dropout_backward(mask, ones, 0.3f, key);
  int64_t dropped = 0;
  for (int64_t i = 0; i < inp.numel(); ++i) {
    const float m = mask.data<float>()[i];
    EXPECT_FLOAT_EQ(out.data<float>()[i], inp.data<float>()[i] * m);
    if (m == 0.f) ++dropped;
    else EXPECT_FLOAT_EQ(m, 1.f / 0.7f);
  }
  EXPECT_NEAR(static_cast<double>(dropped) / inp.numel(), 0.3, 0.02);
  // With ReLU's backward (inp as ReLU's output): the same mask, and 0 where inp <= 0.
  Tensor relu_mask = Tensor::empty(inp.shape(), DType::kFloat32);
  dropout_relu_backward(relu_mask, ones, inp, 0.3f, key);
  for (int64_t i = 0; i < inp.numel(); ++i) {
    const float expected = inp.data<float>()[i] > 0.f ? mask.data<float>()[i] : 0.f;
    ASSERT_EQ(relu_mask.data<float>()[i], expected) << "at " << i;
  }
  // Another site draws another mask.
  Tensor other = Tensor::empty(inp.shape(), DType::kFloat32);
  dropout_forward(other, inp, 0.3f, dropout_key(11, 5, 0, 0, 4));
  int64_t differ = 0;
  for (int64_t i = 0; i < inp.numel(); ++i) differ += (other.data<float>()[i] != out.data<float>()[i]);
  EXPECT_GT(differ, 2000);
}

}  // namespace
}  // namespace xlate::trainer
