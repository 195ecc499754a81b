// kairos_gym._core samplers: the portable numpy-Generator samplers of src/core/samplers.hpp over numpy's PCG64 state.
// The Python face is
// kairos_gym/workload/portable_random.py: it reads rng.bit_generator.state, passes the 128-bit state and increment as
// (high, low) 64-bit halves, and writes the returned state back.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <tuple>

#include "samplers.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using kairos::samplers::Pcg64;
using kairos::samplers::u128;
using In = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using OutD = nb::ndarray<double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using OutI = nb::ndarray<std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Halves = std::tuple<std::uint64_t, std::uint64_t>;

// The sampler kinds of pcg_fill (kairos_gym/workload/portable_random.py mirrors these codes).
enum Kind : int { kExponential = 0, kGamma = 1, kLognormal = 2, kPareto = 3, kStandardNormal = 4 };

Pcg64 make(std::uint64_t s_hi, std::uint64_t s_lo, std::uint64_t i_hi, std::uint64_t i_lo) {
    return Pcg64{(static_cast<u128>(s_hi) << 64) | s_lo, (static_cast<u128>(i_hi) << 64) | i_lo};
}

Halves halves(const Pcg64& g) {
    return {static_cast<std::uint64_t>(g.state >> 64), static_cast<std::uint64_t>(g.state)};
}

// Element i of a parameter array of length 1 (broadcast) or n.
inline double at(const In& a, size_t i) { return a.shape(0) == 1 ? a(0) : a(i); }

Halves pcg_fill(int kind, std::uint64_t s_hi, std::uint64_t s_lo, std::uint64_t i_hi, std::uint64_t i_lo, In a, In b,
                OutD out) {
    const size_t n = out.shape(0);
    if ((a.shape(0) != 1 && a.shape(0) != n) || (b.shape(0) != 1 && b.shape(0) != n)) {
        throw nb::value_error("pcg_fill: parameter arrays must have length 1 or len(out)");
    }
    if (kind < kExponential || kind > kStandardNormal) {
        throw nb::value_error("pcg_fill: unknown sampler kind");
    }
    Pcg64 g = make(s_hi, s_lo, i_hi, i_lo);
    double* o = out.data();
    {
        nb::gil_scoped_release release;
        for (size_t i = 0; i < n; ++i) {
            switch (kind) {
                case kExponential: o[i] = at(a, i) * kairos::samplers::standard_exponential(g); break;
                case kGamma: o[i] = at(b, i) * kairos::samplers::standard_gamma(g, at(a, i)); break;
                case kLognormal: o[i] = kairos::samplers::lognormal(g, at(a, i), at(b, i)); break;
                case kPareto: o[i] = kairos::samplers::pareto(g, at(a, i)); break;
                default: o[i] = kairos::samplers::standard_normal(g); break;
            }
        }
    }
    return halves(g);
}

Halves pcg_poisson(std::uint64_t s_hi, std::uint64_t s_lo, std::uint64_t i_hi, std::uint64_t i_lo, In lam, OutI out) {
    const size_t n = out.shape(0);
    if (lam.shape(0) != 1 && lam.shape(0) != n) {
        throw nb::value_error("pcg_poisson: lam must have length 1 or len(out)");
    }
    Pcg64 g = make(s_hi, s_lo, i_hi, i_lo);
    std::int64_t* o = out.data();
    {
        nb::gil_scoped_release release;
        for (size_t i = 0; i < n; ++i) {
            o[i] = kairos::samplers::poisson(g, at(lam, i));
        }
    }
    return halves(g);
}

}  // namespace

void bind_samplers(nb::module_& m) {
    m.def("pcg_fill", &pcg_fill, "kind"_a, "s_hi"_a, "s_lo"_a, "i_hi"_a, "i_lo"_a, "a"_a, "b"_a, "out"_a,
          "Fill out with portable draws (kind: 0 exponential(scale=a), 1 gamma(shape=a, scale=b), 2 lognormal(mean=a, "
          "sigma=b), 3 pareto(a), 4 standard normal) from the PCG64 state (s, i as 64-bit halves); returns the new "
          "state (high, low).");
    m.def("pcg_poisson", &pcg_poisson, "s_hi"_a, "s_lo"_a, "i_hi"_a, "i_lo"_a, "lam"_a, "out"_a,
          "Fill out (int64) with portable Poisson(lam) draws; returns the new PCG64 state (high, low).");
    m.def("pcg_loggam", &kairos::samplers::loggam, "x"_a, "log Gamma(x) by the samplers' portable Stirling series.");
}
