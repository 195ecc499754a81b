// The portable MLP actor forward pass: see mlp_forward.hpp for the arithmetic it commits to.
#include "mlp_forward.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "portable_math.hpp"

namespace kairos::mlp {

namespace {

constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi), the double nearest
constexpr double kOneOverSqrtPi = 0.56418958354775628695;  // 1 / sqrt(pi)
constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
constexpr double kSeriesEnd = 1.0;  // the series below |z| = 1, the continued fraction from there
constexpr int kSeriesTerms = 40;   // |z| < 1: the 40th term is < 1e-36 of the sum
constexpr int kFractionDepth = 300;  // |z| >= 1: the fraction's depth (converged to < 4e-16 relative at z = 1)

// e^(-z^2) without the rounding of z^2 (which costs z^2 2^-53 relative, 6e-14 at z = 24): z = t + (z - t) with t
// z's top 21 significant bits, so t^2 is exact and -z^2 = -t^2 + (t - z)(t + z), the second term tiny.
double exp_minus_square(double z) {
    std::uint64_t bits;
    std::memcpy(&bits, &z, sizeof bits);
    bits &= ~std::uint64_t{0xffffffff};
    double t;
    std::memcpy(&t, &bits, sizeof t);
    return pmath::exp(-(t * t)) * pmath::exp((t - z) * (t + z));
}

// erf(z) for |z| < 1: 2/sqrt(pi) e^-z^2 sum_{n>=0} (2 z^2)^n z / (1*3*...*(2n+1)); every term has z's sign.
double erf_series(double z) {
    const double z2 = z * z;
    const double two_z2 = 2.0 * z2;
    double term = z;
    double sum = z;
    for (int n = 1; n < kSeriesTerms; ++n) {
        term = term * two_z2 / static_cast<double>(2 * n + 1);
        sum = sum + term;
    }
    return kTwoOverSqrtPi * pmath::exp(-z2) * sum;
}

// erfc(z) for z >= 1: e^-z^2 / sqrt(pi) / (z + (1/2) / (z + (2/2) / (z + (3/2) / (z + ...)))), bottom-up.
double erfc_fraction(double z) {
    double f = z;
    for (int k = kFractionDepth; k >= 1; --k) f = z + (0.5 * static_cast<double>(k)) / f;
    return kOneOverSqrtPi * exp_minus_square(z) / f;
}

float to_float(double v) { return static_cast<float>(v); }

void check_layer(const Layer& l, const char* what) {
    if (l.out == 0 || l.in == 0) throw std::invalid_argument(std::string(what) + ": a layer with a zero size");
    if (l.weight.size() != l.out * l.in)
        throw std::invalid_argument(std::string(what) + ": weight has " + std::to_string(l.weight.size()) +
                                    " values, not out x in = " + std::to_string(l.out * l.in));
    if (l.bias.size() != l.out)
        throw std::invalid_argument(std::string(what) + ": bias has " + std::to_string(l.bias.size()) +
                                    " values, not out = " + std::to_string(l.out));
}

}  // namespace

Activation activation_from_name(const std::string& name) {
    static const std::pair<const char*, Activation> kNames[] = {
        {"Tanh", Activation::Tanh}, {"ReLU", Activation::ReLU},         {"ELU", Activation::ELU},
        {"LeakyReLU", Activation::LeakyReLU}, {"SiLU", Activation::SiLU}, {"GELU", Activation::GELU},
        {"Sigmoid", Activation::Sigmoid}};
    for (const auto& [n, a] : kNames)
        if (name == n) return a;
    throw std::invalid_argument("activation '" + name + "': not one of Tanh, ReLU, ELU, LeakyReLU, SiLU, GELU, Sigmoid");
}

double erfc(double z) {
    if (std::isnan(z)) return z;
    if (z >= kSeriesEnd) return erfc_fraction(z);
    if (z <= -kSeriesEnd) return 2.0 - erfc_fraction(-z);
    return 1.0 - erf_series(z);
}

float activate(Activation a, float yf) {
    const double y = static_cast<double>(yf);
    switch (a) {
        case Activation::Tanh: {
            const double t = pmath::expm1(-2.0 * std::fabs(y));
            return to_float(std::copysign(-t / (2.0 + t), y));
        }
        case Activation::ReLU:
            return y > 0.0 ? yf : (std::isnan(y) ? yf : 0.0f);
        case Activation::ELU:
            return y > 0.0 ? yf : to_float(pmath::expm1(y));
        case Activation::LeakyReLU:
            return y > 0.0 ? yf : to_float(y * 0.01);
        case Activation::SiLU:
            return to_float(y / (1.0 + pmath::exp(-y)));
        case Activation::GELU:
            return to_float(y * (0.5 * erfc(-(y * kSqrtHalf))));
        case Activation::Sigmoid:
            return to_float(1.0 / (1.0 + pmath::exp(-y)));
    }
    throw std::logic_error("activate: unknown activation");
}

void linear(const Layer& layer, const float* x, float* y) {
    const float* w = layer.weight.data();
    for (std::size_t j = 0; j < layer.out; ++j) {
        const float* row = w + j * layer.in;
        double acc = static_cast<double>(layer.bias[j]);
        for (std::size_t i = 0; i < layer.in; ++i) acc = acc + static_cast<double>(row[i]) * static_cast<double>(x[i]);
        y[j] = static_cast<float>(acc);
    }
}

std::size_t masked_argmax(const float* v, const std::uint8_t* mask, std::size_t n) {
    const float ninf = -std::numeric_limits<float>::infinity();
    std::size_t best = 0;
    float best_v = ninf;
    for (std::size_t i = 0; i < n; ++i) {
        const float x = (mask == nullptr || mask[i] != 0) ? v[i] : ninf;
        if (std::isnan(x)) return i;  // numpy: the first NaN is the maximum
        if (i == 0 || x > best_v) {
            best = i;
            best_v = x;
        }
    }
    return best;
}

MlpActor::MlpActor(std::vector<Layer> hidden, Layer head, Activation activation)
    : hidden_(std::move(hidden)), head_(std::move(head)), activation_(activation) {
    std::size_t fan_in = 0;
    for (std::size_t k = 0; k < hidden_.size(); ++k) {
        const std::string what = "hidden layer " + std::to_string(k);
        check_layer(hidden_[k], what.c_str());
        if (k > 0 && hidden_[k].in != fan_in)
            throw std::invalid_argument(what + ": takes " + std::to_string(hidden_[k].in) +
                                        " inputs, the layer before gives " + std::to_string(fan_in));
        fan_in = hidden_[k].out;
        if (fan_in > widest_) widest_ = fan_in;
    }
    check_layer(head_, "head");
    if (!hidden_.empty() && head_.in != fan_in)
        throw std::invalid_argument("head: takes " + std::to_string(head_.in) + " inputs, the last hidden layer gives " +
                                    std::to_string(fan_in));
}

void MlpActor::logits(const float* x, float* out) const {
    if (hidden_.empty()) {
        linear(head_, x, out);
        return;
    }
    std::vector<float> a(widest_), b(widest_);
    const float* in = x;
    for (const Layer& l : hidden_) {
        linear(l, in, a.data());
        for (std::size_t j = 0; j < l.out; ++j) a[j] = activate(activation_, a[j]);
        std::swap(a, b);
        in = b.data();
    }
    linear(head_, in, out);
}

std::size_t MlpActor::act(const float* x, const std::uint8_t* mask) const {
    std::vector<float> lg(head_.out);
    logits(x, lg.data());
    return masked_argmax(lg.data(), mask, head_.out);
}

}  // namespace kairos::mlp
