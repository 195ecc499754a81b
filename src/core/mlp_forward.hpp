// The portable forward pass of a trained policy's MLP actor: the same logits, hence the same greedy
// action, on every CPU.
//
// Why: torch (oneDNN/MKL) and numpy/BLAS pick their float32 GEMM kernels by CPU feature (AVX-512, AVX2, FMA), and
// those kernels sum in different orders and contract products into FMAs, so one checkpoint's logits differ in the
// last bits from machine to machine; where two logits are that close the greedy action, and with it every result
// downstream, changes. This forward uses only IEEE-754 basic operations in a fixed order and the portable
// transcendentals of portable_math.hpp (the core is built with -ffp-contract=off, no fast-math).
//
// Arithmetic, exactly (float32 in, float32 out, double inside):
//   - a layer's unit j (weights W, out x in, row-major; bias b; input x):
//         acc = double(b[j]);  for i = 0, 1, ..., in - 1:  acc = acc + double(W[j][i]) * double(x[i]);
//         y[j] = float(acc)                       (round to nearest even, once)
//     Every product of two floats is exact in double (24 + 24 significant bits <= 53); each addition is one
//     correctly rounded double addition, in this order (bias first, then the inputs by increasing index). The
//     result is at least as accurate as a float32 sum in any order (the double sum's error is ~in * 2^-53 relative
//     to the sum of |terms|, far below float32's 2^-24), and it is the same double on every conforming CPU.
//   - an activation (hidden layers only; the head is linear) maps each float y to float(f(double(y))), with f
//     computed in double from basic operations and pmath (see activate()); one rounding to float32 at the end.
//   - the greedy action: the masked argmax of the logits (masked-out actions count as -inf; ties go to the lowest
//     index; a NaN logit wins at its first occurrence; all masked: action 0), exactly numpy's argmax of
//     where(mask, logits, -inf).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kairos::mlp {

// torch.nn activations a checkpoint may name (agents/checkpoint.py ACTIVATIONS), with torch's default arguments.
enum class Activation { Tanh, ReLU, ELU, LeakyReLU, SiLU, GELU, Sigmoid };

// "Tanh", "ReLU", ... -> the enum; anything else throws std::invalid_argument.
Activation activation_from_name(const std::string& name);

// f(y) rounded once to float:
//   Tanh       sign(y) * (-t / (2 + t)),  t = pmath::expm1(-2|y|)
//   ReLU       y > 0 ? y : +0            (NaN stays NaN)
//   ELU        y > 0 ? y : pmath::expm1(y)                          (alpha 1)
//   LeakyReLU  y > 0 ? y : y * 0.01      (0.01 the double nearest)  (negative_slope 0.01)
//   SiLU       y / (1 + pmath::exp(-y))
//   GELU       y * Phi(y),  Phi(y) = pmath::erfc(-y / sqrt 2) / 2 (approximate="none")
//   Sigmoid    1 / (1 + pmath::exp(-y))
// The double value before the rounding is within a few ulp (double) of the exact f(y) (GELU: see pmath::erfc), so the
// float result is the correctly rounded f(y) except when f(y) lies within ~2^-25 ulp(float) of a halfway point.
float activate(Activation a, float y);


// One fully connected layer: weight out x in (row-major), bias out.
struct Layer {
    std::size_t out = 0;
    std::size_t in = 0;
    std::vector<float> weight;
    std::vector<float> bias;
};

// y = layer(x) with the fixed-order arithmetic above; x has layer.in floats, y layer.out.
void linear(const Layer& layer, const float* x, float* y);

// numpy's argmax of where(mask, v, -inf) over n values (mask null: every action allowed; see the header).
std::size_t masked_argmax(const float* v, const std::uint8_t* mask, std::size_t n);

// An MLP actor: hidden layers, each followed by the activation, then the linear logits layer.
class MlpActor {
public:
    // Throws std::invalid_argument on an empty head, a zero size, a weight/bias size that is not out x in / out, or
    // a layer whose in is not the previous layer's out.
    MlpActor(std::vector<Layer> hidden, Layer head, Activation activation);

    std::size_t input_size() const { return hidden_.empty() ? head_.in : hidden_.front().in; }
    std::size_t output_size() const { return head_.out; }
    Activation activation() const { return activation_; }

    // The logits of one input (input_size floats -> output_size floats). Thread-safe (no shared scratch).
    void logits(const float* x, float* out) const;
    // The greedy action of one input: masked_argmax of its logits (mask: output_size bytes, 0 = masked; or null).
    std::size_t act(const float* x, const std::uint8_t* mask) const;

private:
    std::vector<Layer> hidden_;
    Layer head_;
    Activation activation_;
    std::size_t widest_ = 0;
};

}  // namespace kairos::mlp
