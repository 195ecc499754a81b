// Portable transcendental functions: the only exp, log, log1p, expm1, pow and cos on a result path.
//
// Why: libm and numpy choose their code by CPU feature (glibc's FMA/AVX2 variants of exp/log/pow, numpy's AVX-512
// loops), so the same expression can round differently on two machines. These functions use only IEEE-754 basic
// operations (+ - * / and sqrt, each correctly rounded by the standard), integer bit manipulation and no FMA (the
// core is compiled with -ffp-contract=off), so each returns the same double on every conforming CPU: x86-64 with or
// without AVX2/FMA/AVX-512, and aarch64 alike.
//
// Accuracy: each result is the double nearest to an internal double-double approximation whose relative error is
// far below 2^-60, so results are correctly rounded except when the true value lies within ~2^-8 ulp of a halfway
// point, and always within 1 ulp of the correctly rounded value on the documented ranges below
// (tests/core/test_portable_math.py checks this against mpmath on a dense sample).
//
// Ranges (outside them the function still returns a value, with IEEE special-case semantics as in C99 Annex F):
//   exp(x):    finite results for x in [-745.13, 709.78]; subnormal results below -708.39 are rounded once.
//   log(x):    x > 0 (log(0) = -inf, log(x < 0) = NaN).
//   log1p(x):  x > -1.
//   expm1(x):  x in [-745, 709.78].
//   pow(x, y): x > 0 with finite results, and x = 0 / negative x with integral y (C99 rules for the specials).
//   cos(x):    |x| <= 2^20 * pi/2 (about 1.6e6); larger |x| throws std::domain_error (no result path needs it).
//   erfc(x):   not double-double: a Maclaurin series with positive terms (erf(z) = 2/sqrt(pi) e^-z^2 sum_n (2z^2)^n
//              z / (1*3*...*(2n+1)), 40 terms) for |z| < 1, the Laplace continued fraction e^-z^2 / sqrt(pi) /
//              (z + (1/2) / (z + (2/2) / (z + ...))) bottom-up from depth 300 for |z| >= 1 (erfc(-z) = 2 - erfc(z)),
//              e^-z^2 without the rounding of z^2: within 8 ulp for normal results on [-6, 26.5], 0 beyond 27.3.
#pragma once

#include <cstddef>

namespace kairos::pmath {

double exp(double x);
double log(double x);
double log1p(double x);
double expm1(double x);
double pow(double x, double y);
double cos(double x);
double erfc(double x);

}  // namespace kairos::pmath
