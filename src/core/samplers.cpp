// Portable workload samplers (see samplers.hpp). The algorithms are numpy's (numpy/random/src/distributions), written
// anew here; every transcendental is kairos::pmath, every other operation an IEEE-754 basic one (no FMA: the core is
// built with -ffp-contract=off), in numpy's order of operations so the roundings match.
#include "samplers.hpp"

#include <cmath>

#include "portable_math.hpp"
#include "ziggurat_tables.hpp"

namespace kairos::samplers {

namespace {
constexpr u128 kMultiplier = (static_cast<u128>(0x2360ED051FC65DA4ULL) << 64) | 0x4385DF649FCCF645ULL;

// The slow branch of the exponential ziggurat: the tail (layer 0) or the wedge test of layer idx.
double exponential_unlikely(Pcg64& g, unsigned idx, double x) {
    if (idx == 0) {
        return zig::kExpR - pmath::log1p(-g.next_double());
    }
    if ((zig::kExpF[idx - 1] - zig::kExpF[idx]) * g.next_double() + zig::kExpF[idx] < pmath::exp(-x)) {
        return x;
    }
    return standard_exponential(g);
}
}  // namespace

std::uint64_t Pcg64::next_u64() {
    state = state * kMultiplier + inc;
    const auto hi = static_cast<std::uint64_t>(state >> 64);
    const auto lo = static_cast<std::uint64_t>(state);
    const unsigned rot = static_cast<unsigned>(hi >> 58);
    const std::uint64_t v = hi ^ lo;
    return (v >> rot) | (v << ((64U - rot) & 63U));
}

double standard_exponential(Pcg64& g) {
    std::uint64_t ri = g.next_u64() >> 3;
    const unsigned idx = static_cast<unsigned>(ri & 0xFF);
    ri >>= 8;  // 53-bit magnitude
    const double x = static_cast<double>(ri) * zig::kExpW[idx];
    if (ri < zig::kExpK[idx]) {
        return x;
    }
    return exponential_unlikely(g, idx, x);
}

double standard_normal(Pcg64& g) {
    for (;;) {
        std::uint64_t r = g.next_u64();
        const unsigned idx = static_cast<unsigned>(r & 0xFF);
        r >>= 8;
        const bool negative = (r & 1U) != 0;
        const std::uint64_t rabs = (r >> 1) & 0x000FFFFFFFFFFFFFULL;  // 52-bit magnitude
        double x = static_cast<double>(rabs) * zig::kNormalW[idx];
        if (negative) {
            x = -x;
        }
        if (rabs < zig::kNormalK[idx]) {
            return x;
        }
        if (idx == 0) {  // the tail beyond r (Marsaglia's method), sign from bit 8 of rabs
            for (;;) {
                const double xx = -zig::kNormalInvR * pmath::log1p(-g.next_double());
                const double yy = -pmath::log1p(-g.next_double());
                if (yy + yy > xx * xx) {
                    return ((rabs >> 8) & 1U) ? -(zig::kNormalR + xx) : zig::kNormalR + xx;
                }
            }
        }
        if ((zig::kNormalF[idx - 1] - zig::kNormalF[idx]) * g.next_double() + zig::kNormalF[idx] <
            pmath::exp(-0.5 * x * x)) {
            return x;
        }
    }
}

double standard_gamma(Pcg64& g, double shape) {
    if (shape == 1.0) {
        return standard_exponential(g);
    }
    if (shape == 0.0) {
        return 0.0;
    }
    if (shape < 1.0) {  // rejection from a power / exponential mixture (numpy's branch for shape < 1)
        for (;;) {
            const double u = g.next_double();
            const double v = standard_exponential(g);
            if (u <= 1.0 - shape) {
                const double x = pmath::pow(u, 1.0 / shape);
                if (x <= v) {
                    return x;
                }
            } else {
                const double y = -pmath::log((1 - u) / shape);
                const double x = pmath::pow(1.0 - shape + shape * y, 1.0 / shape);
                if (x <= v + y) {
                    return x;
                }
            }
        }
    }
    // Marsaglia & Tsang (2000)
    const double b = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9 * b);
    for (;;) {
        double x;
        double v;
        do {
            x = standard_normal(g);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        const double u = g.next_double();
        if (u < 1.0 - 0.0331 * (x * x) * (x * x)) {
            return b * v;
        }
        if (pmath::log(u) < 0.5 * x * x + b * (1.0 - v + pmath::log(v))) {
            return b * v;
        }
    }
}

double pareto(Pcg64& g, double a) { return pmath::expm1(standard_exponential(g) / a); }

double lognormal(Pcg64& g, double mean, double sigma) { return pmath::exp(mean + sigma * standard_normal(g)); }

double loggam(double x) {
    // Stirling's series with the Bernoulli terms B_2k / (2k (2k - 1)), k = 1..10, after shifting x to >= 7.
    static const double a[10] = {1.0 / 12.0,        -1.0 / 360.0,     1.0 / 1260.0,   -1.0 / 1680.0,
                                 1.0 / 1188.0,      -691.0 / 360360.0, 1.0 / 156.0,   -3617.0 / 122400.0,
                                 43867.0 / 244188.0, -174611.0 / 125400.0};
    if (x == 1.0 || x == 2.0) {
        return 0.0;
    }
    std::int64_t n = 0;
    if (x < 7.0) {
        n = static_cast<std::int64_t>(7 - x);
    }
    double x0 = x + static_cast<double>(n);
    const double x2 = (1.0 / x0) * (1.0 / x0);
    const double lg2pi = 1.8378770664093453;  // log(2 pi)
    double gl0 = a[9];
    for (int k = 8; k >= 0; --k) {
        gl0 *= x2;
        gl0 += a[k];
    }
    double gl = gl0 / x0 + 0.5 * lg2pi + (x0 - 0.5) * pmath::log(x0) - x0;
    if (x < 7.0) {
        for (std::int64_t k = 1; k <= n; ++k) {
            gl -= pmath::log(x0 - 1.0);
            x0 -= 1.0;
        }
    }
    return gl;
}

std::int64_t poisson(Pcg64& g, double lam) {
    if (lam >= 10) {  // PTRS, Hoermann (1993)
        const double slam = std::sqrt(lam);
        const double loglam = pmath::log(lam);
        const double b = 0.931 + 2.53 * slam;
        const double a = -0.059 + 0.02483 * b;
        const double invalpha = 1.1239 + 1.1328 / (b - 3.4);
        const double vr = 0.9277 - 3.6224 / (b - 2);
        for (;;) {
            const double u = g.next_double() - 0.5;
            const double v = g.next_double();
            const double us = 0.5 - std::fabs(u);
            const auto k = static_cast<std::int64_t>(std::floor((2 * a / us + b) * u + lam + 0.43));
            if (us >= 0.07 && v <= vr) {
                return k;
            }
            if (k < 0 || (us < 0.013 && v > us)) {
                continue;
            }
            if ((pmath::log(v) + pmath::log(invalpha) - pmath::log(a / (us * us) + b)) <=
                (-lam + static_cast<double>(k) * loglam - loggam(static_cast<double>(k) + 1))) {
                return k;
            }
        }
    }
    if (lam == 0) {
        return 0;
    }
    const double enlam = pmath::exp(-lam);  // multiplication of uniforms
    std::int64_t x = 0;
    double prod = 1.0;
    for (;;) {
        prod *= g.next_double();
        if (prod > enlam) {
            x += 1;
        } else {
            return x;
        }
    }
}

}  // namespace kairos::samplers
