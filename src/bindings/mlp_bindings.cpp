// Python face of the portable MLP actor (src/core/mlp_forward.hpp), wrapped by agents/checkpoint.py GreedyActor.
// Arrays in are C-contiguous float32 (weights 2-D out x in, biases and inputs 1-D), masks 1-D bool; no implicit
// conversion (noconvert: a wrong dtype or layout is a TypeError, never a silent cast or copy); a wrong size is a
// ValueError. Arrays out are new.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlp_forward.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace mlp = kairos::mlp;

namespace {

using Mat = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Vec = nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Mask = nb::ndarray<const bool, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using OutVec = nb::ndarray<nb::numpy, float, nb::ndim<1>>;
using OutMat = nb::ndarray<nb::numpy, float, nb::ndim<2>>;

mlp::Layer make_layer(const Mat& w, const Vec& b) {
    mlp::Layer l;
    l.out = w.shape(0);
    l.in = w.shape(1);
    l.weight.assign(w.data(), w.data() + l.out * l.in);
    l.bias.assign(b.data(), b.data() + b.shape(0));
    return l;
}

float* new_floats(std::size_t n, nb::capsule& owner) {
    auto* out = new float[n > 0 ? n : 1];
    owner = nb::capsule(out, [](void* p) noexcept { delete[] static_cast<float*>(p); });
    return out;
}

void check_input(const mlp::MlpActor& a, std::size_t n) {
    if (n != a.input_size())
        throw nb::value_error(("MlpActor: the input has " + std::to_string(n) + " values, the network takes " +
                               std::to_string(a.input_size()))
                                  .c_str());
}

std::vector<std::uint8_t> mask_bytes(const mlp::MlpActor& a, const Mask& m) {
    if (m.shape(0) != a.output_size())
        throw nb::value_error(("MlpActor: the mask has " + std::to_string(m.shape(0)) + " values, the network has " +
                               std::to_string(a.output_size()) + " actions")
                                  .c_str());
    std::vector<std::uint8_t> out(m.shape(0));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = m.data()[i] ? 1 : 0;
    return out;
}

}  // namespace

void bind_mlp(nb::module_& m) {
    nb::class_<mlp::MlpActor>(m, "MlpActor",
                              "A policy's MLP actor with the portable fixed-order float32/double forward pass "
                              "(src/core/mlp_forward.hpp).")
        .def(
            "__init__",
            [](mlp::MlpActor* self, const std::vector<Mat>& weights, const std::vector<Vec>& biases,
               const std::string& activation) {
                if (weights.empty() || weights.size() != biases.size())
                    throw nb::value_error("MlpActor: one weight and one bias per layer, the last the logits layer");
                std::vector<mlp::Layer> hidden;
                for (std::size_t k = 0; k + 1 < weights.size(); ++k) hidden.push_back(make_layer(weights[k], biases[k]));
                mlp::Layer head = make_layer(weights.back(), biases.back());
                try {
                    new (self) mlp::MlpActor(std::move(hidden), std::move(head), mlp::activation_from_name(activation));
                } catch (const std::invalid_argument& e) {
                    throw nb::value_error((std::string("MlpActor: ") + e.what()).c_str());
                }
            },
            "weights"_a.noconvert(), "biases"_a.noconvert(), "activation"_a,
            "weights: float32 (out x in) per layer, hidden layers then the logits layer; biases: float32 (out) each; "
            "activation: Tanh, ReLU, ELU, LeakyReLU, SiLU, GELU or Sigmoid (after each hidden layer).")
        .def_prop_ro("input_size", &mlp::MlpActor::input_size)
        .def_prop_ro("output_size", &mlp::MlpActor::output_size)
        .def(
            "logits",
            [](const mlp::MlpActor& a, Vec x) {
                check_input(a, x.shape(0));
                nb::capsule owner;
                float* out = new_floats(a.output_size(), owner);
                a.logits(x.data(), out);
                return OutVec(out, {a.output_size()}, owner);
            },
            "x"_a.noconvert(), "The logits (float32, output_size) of one input (float32, input_size).")
        .def(
            "logits_rows",
            [](const mlp::MlpActor& a, Mat x) {
                check_input(a, x.shape(1));
                const std::size_t rows = x.shape(0), n_in = x.shape(1), n_out = a.output_size();
                nb::capsule owner;
                float* out = new_floats(rows * n_out, owner);
                const float* in = x.data();
                {
                    nb::gil_scoped_release release;
                    for (std::size_t r = 0; r < rows; ++r) a.logits(in + r * n_in, out + r * n_out);
                }
                return OutMat(out, {rows, n_out}, owner);
            },
            "x"_a.noconvert(), "The logits (float32, rows x output_size) of each row of x (float32, rows x input_size).")
        .def(
            "act",
            [](const mlp::MlpActor& a, Vec x, std::optional<Mask> mask) {
                check_input(a, x.shape(0));
                if (!mask) return a.act(x.data(), nullptr);
                const std::vector<std::uint8_t> mb = mask_bytes(a, *mask);
                return a.act(x.data(), mb.data());
            },
            "x"_a.noconvert(), "mask"_a.noconvert() = nb::none(),
            "The greedy action: argmax of the logits, masked-out actions (mask False) at -inf, ties to the lowest "
            "index.");
    m.def(
        "mlp_masked_argmax",
        [](Vec v, std::optional<Mask> mask) {
            if (!mask) return mlp::masked_argmax(v.data(), nullptr, v.shape(0));
            if (mask->shape(0) != v.shape(0)) throw nb::value_error("mlp_masked_argmax: mask and values differ in length");
            std::vector<std::uint8_t> mb(v.shape(0));
            for (std::size_t i = 0; i < mb.size(); ++i) mb[i] = mask->data()[i] ? 1 : 0;
            return mlp::masked_argmax(v.data(), mb.data(), v.shape(0));
        },
        "v"_a.noconvert(), "mask"_a.noconvert() = nb::none(), "numpy's argmax of where(mask, v, -inf) (float32 v, bool mask or None).");
    m.def(
        "mlp_activate",
        [](const std::string& name, Vec y) {
            mlp::Activation act;
            try {
                act = mlp::activation_from_name(name);
            } catch (const std::invalid_argument& e) {
                throw nb::value_error(e.what());
            }
            nb::capsule owner;
            const std::size_t n = y.shape(0);
            float* out = new_floats(n, owner);
            for (std::size_t i = 0; i < n; ++i) out[i] = mlp::activate(act, y.data()[i]);
            return OutVec(out, {n}, owner);
        },
        "activation"_a, "y"_a.noconvert(), "The portable activation, element-wise over float32 values (float32 out).");
}
