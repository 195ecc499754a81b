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

constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)

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
            return to_float(y * (0.5 * pmath::erfc(-(y * kSqrtHalf))));
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
