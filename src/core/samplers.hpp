// Portable workload samplers: numpy's Generator algorithms (PCG64 bit stream, 256-layer ziggurats, Marsaglia-Tsang
// and Johnk-type gamma, PTRS / multiplication Poisson) re-implemented with kairos::pmath in place of libm, so each
// draw is the same double on every CPU. On this machine they equal numpy's draws bit for bit, except
// where libm itself rounds differently from pmath and (normal / lognormal only) where numpy's double-precision
// ziggurat table differs from the exact one (src/core/ziggurat_tables.hpp; docs in kairos_gym/workload/portable_random.py).
//
// The state is numpy's PCG64 state (128-bit LCG state and increment); the Python side reads it from
// ``rng.bit_generator.state`` and writes the advanced state back, so the numpy Generator continues exactly as if its
// own sampler had run. Every sampler draws only 64-bit outputs (numpy's buffered 32-bit half is left untouched).
#pragma once

#include <cstdint>

namespace kairos::samplers {

using u128 = unsigned __int128;

// numpy's PCG64: 128-bit LCG (state = state * M + inc), XSL-RR output of the new state.
struct Pcg64 {
    u128 state;
    u128 inc;

    std::uint64_t next_u64();
    // numpy's next_double: the top 53 bits times 2^-53, in [0, 1).
    double next_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
};

double standard_exponential(Pcg64& g);             // ziggurat (numpy's random_standard_exponential)
double standard_normal(Pcg64& g);                  // ziggurat (numpy's random_standard_normal)
double standard_gamma(Pcg64& g, double shape);     // shape >= 0 (numpy's random_standard_gamma)
double pareto(Pcg64& g, double a);                 // Lomax: expm1(E / a), a > 0
double lognormal(Pcg64& g, double mean, double sigma);  // exp(mean + sigma * N)
std::int64_t poisson(Pcg64& g, double lam);        // lam >= 0 (numpy's random_poisson)
double loggam(double x);                           // log Gamma(x), x > 0 (numpy's random_loggam algorithm)

}  // namespace kairos::samplers
