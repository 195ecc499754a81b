// Portable exp, log, log1p, expm1, pow and cos (portable_math.hpp says why and how accurate).
//
// Method: every function evaluates its result as a double-double (an unevaluated sum hi + lo of two doubles, about
// 106 bits) with error-free transformations built from + - * / only (Knuth's two-sum, Dekker's split and
// two-product: no FMA, which -ffp-contract=off keeps the compiler from introducing), then rounds hi + lo once.
//   log:  x = 2^k m, m in [sqrt(2)/2, sqrt(2)); m = (1 + r) / c with c from a 92-entry table near 1/m (r exact as a
//         double-double, |r| < 2^-7.4); log x = k ln2 - log c + log1p(r), log1p(r) by its series. Near 1 (k = 0,
//         |m - 1| < 2^-6) no table: r = m - 1 exactly.
//   exp:  x = (64 k + j) ln2/64 + r, |r| <= ln2/128 (ln2/64 in three parts, the first 32 bits long so that n ln2/64
//         is exact); exp x = 2^k 2^(j/64) (1 + r + r^2/2 + ...).
//   pow:  exp(y log x) with log x and the product as double-doubles (so the error of y log x stays below 2^-60 of
//         the result for every finite result).
//   cos:  x = n pi/2 + r (pi/2 in four parts, Cody-Waite, exact for |x| <= 2^20 pi/2); cos or sin of r by series.
// The tables (log c, 2^(j/64), 1/n!) are computed once, on first use, by the same double-double arithmetic from
// exact inputs: no constant here comes from a libm.
#include "portable_math.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace kairos::pmath {
namespace {

// ---------------------------------------------------------------------------------------------- double-double
struct DD {
    double hi;
    double lo;
};

inline DD two_sum(double a, double b) {
    const double s = a + b;
    const double bb = s - a;
    return {s, (a - (s - bb)) + (b - bb)};
}

inline DD fast_two_sum(double a, double b) {  // |a| >= |b| (or a == 0)
    const double s = a + b;
    return {s, b - (s - a)};
}

inline DD split(double a) {  // Veltkamp: a = hi + lo, each with <= 26 significant bits; |a| < 2^995
    const double c = 134217729.0 * a;  // 2^27 + 1
    const double hi = c - (c - a);
    return {hi, a - hi};
}

inline DD two_prod(double a, double b) {  // a b = p + e exactly (no overflow or underflow)
    const double p = a * b;
    const DD as = split(a);
    const DD bs = split(b);
    return {p, ((as.hi * bs.hi - p) + as.hi * bs.lo + as.lo * bs.hi) + as.lo * bs.lo};
}

inline DD dd_add(DD a, DD b) {
    DD s = two_sum(a.hi, b.hi);
    const DD t = two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = fast_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return fast_two_sum(s.hi, s.lo);
}

inline DD dd_add_d(DD a, double b) {
    DD s = two_sum(a.hi, b);
    s.lo += a.lo;
    return fast_two_sum(s.hi, s.lo);
}

inline DD dd_neg(DD a) { return {-a.hi, -a.lo}; }

inline DD dd_mul(DD a, DD b) {
    DD p = two_prod(a.hi, b.hi);
    p.lo += a.hi * b.lo + a.lo * b.hi;
    return fast_two_sum(p.hi, p.lo);
}

inline DD dd_mul_d(DD a, double b) {
    DD p = two_prod(a.hi, b);
    p.lo += a.lo * b;
    return fast_two_sum(p.hi, p.lo);
}

inline DD dd_div(DD a, DD b) {  // three quotient digits
    const double q1 = a.hi / b.hi;
    DD r = dd_add(a, dd_neg(dd_mul_d(b, q1)));
    const double q2 = r.hi / b.hi;
    r = dd_add(r, dd_neg(dd_mul_d(b, q2)));
    const double q3 = r.hi / b.hi;
    return dd_add_d(fast_two_sum(q1, q2), q3);
}

// ---------------------------------------------------------------------------------------------- bits
inline uint64_t bits_of(double x) {
    uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}

inline double from_bits(uint64_t u) {
    double x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}

inline double pow2(int k) {  // 2^k for k in [-1022, 1023], exact
    return from_bits(static_cast<uint64_t>(k + 1023) << 52);
}

// v * 2^k, rounded once for a normal result; a subnormal result may be rounded twice (within 1 ulp).
inline double scale(double v, int k) {
    if (k > 1000) return v * pow2(1000) * pow2(k - 1000);
    if (k < -1000) return v * pow2(-1000) * pow2(k + 1000);
    return v * pow2(k);
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------- constants
// ln 2 as a triple (hi, lo, lo2); ln2/64 as a1 + a2 + a3 (a1: 32 significant bits, a2: 36, so that n a1 and n a2
// are exact for |n| < 2^17, which |z| <= 746 keeps).
constexpr DD kLn2 = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};
// ln 2 with a 42-bit head (k ln2 exact for |k| < 2^11) and two more parts
constexpr double kLn2H42 = 0x1.62e42fefa3800p-1;
constexpr double kLn2M42 = 0x1.ef35793c76730p-45;
constexpr double kLn2L42 = 0x1.f97b57a079a19p-103;
constexpr double kLn2On64A1 = 0x1.62e42ff000000p-7;
constexpr double kLn2On64A2 = -0x1.718432a1c0000p-41;  // 36 significant bits: n a2 exact for |n| < 2^17
constexpr double kLn2On64A3 = 0x1.e3b39803f2f6bp-78;
constexpr double k64OnLn2 = 0x1.71547652b82fep+6;
// pi/2 in four parts, the first two 33 bits long (n p1 and n p2 exact for |n| < 2^20); 2/pi.
constexpr double kPio2P1 = 0x1.921fb54400000p+0;
constexpr double kPio2P2 = 0x1.0b4611a600000p-34;
constexpr double kPio2P3 = 0x1.3198a2e037073p-69;
constexpr double kPio2P4 = 0x1.129024e088a68p-123;
constexpr double kTwoOnPi = 0x1.45f306dc9c883p-1;
constexpr double kSqrtHalf = 0x1.6a09e667f3bcdp-1;

constexpr int kLogTableSize = 92;  // m in [0.703125, 0.703125 + 92/128) covers [sqrt(2)/2, sqrt(2))
constexpr double kLogTableBase = 0.703125;
constexpr int kInvFact = 28;

struct Tables {
    double log_c[kLogTableSize];    // c_i = 1 / (base + (i + 1/2) / 128), rounded to 21 significant bits
    DD log_neg[kLogTableSize];      // -log(c_i)
    DD exp2_j[64];                  // 2^(j/64)
    DD inv_fact[kInvFact];          // 1/n!

    Tables() {
        inv_fact[0] = {1.0, 0.0};
        DD fact = {1.0, 0.0};  // n! as a double-double: exact for n <= 27 (its odd part has < 106 bits)
        for (int n = 1; n < kInvFact; ++n) {
            fact = dd_mul_d(fact, static_cast<double>(n));
            inv_fact[n] = dd_div({1.0, 0.0}, fact);
        }
        for (int i = 0; i < kLogTableSize; ++i) {
            // 21 bits: m_hi c and m_lo c are exact for the 21/32-bit halves of m (log_dd)
            const double c = from_bits(bits_of(1.0 / (kLogTableBase + (i + 0.5) / 128.0)) & 0xffffffff80000000ULL);
            log_c[i] = c;
            log_neg[i] = dd_neg(log_atanh(c));
        }
        for (int j = 0; j < 64; ++j) exp2_j[j] = exp_series(dd_mul_d(kLn2, j / 64.0));
    }

    // log c = 2 atanh((c - 1) / (c + 1)) for c in [0.7, 1.43]: |s| <= 0.18, 24 odd terms (error < 2^-104)
    static DD log_atanh(double c) {
        const DD s = dd_div(two_sum(c, -1.0), two_sum(c, 1.0));
        const DD s2 = dd_mul(s, s);
        DD acc = {0.0, 0.0};
        for (int k = 24; k >= 0; --k) acc = dd_add(dd_div({1.0, 0.0}, {2.0 * k + 1.0, 0.0}), dd_mul(s2, acc));
        return dd_mul_d(dd_mul(s, acc), 2.0);
    }

    // exp a for 0 <= a < ln 2 by its Taylor series (30 terms: error < 2^-105)
    DD exp_series(DD a) const {
        DD acc = inv_fact[kInvFact - 1];
        for (int n = kInvFact - 2; n >= 0; --n) acc = dd_add(inv_fact[n], dd_mul(a, acc));
        return acc;
    }
};

const Tables& tables() {
    static const Tables t;  // thread-safe initialisation (C++11), once per process
    return t;
}

// ---------------------------------------------------------------------------------------------- kernels
// log1p(r) for |r| < 2^-6, r = rh + rl (|rl| <= ulp(rh)/2): r - rh^2/2 as a double-double (rh^2 exact by
// two-product), the rest (-rh rl + rh^3 (1/3 - rh/4 + ...)) as a double: its rounding error is below 2^-66 of r.
DD log1p_small(DD r) {
    const double rh = r.hi;
    // 1/3 - r/4 + r^2/5 - ... - r^9/12 (Horner): the next term is below 2^-66 of r
    const double q = 1.0 / 3 + rh * (-1.0 / 4 + rh * (1.0 / 5 + rh * (-1.0 / 6 + rh * (1.0 / 7 + rh * (-1.0 / 8 + rh * (
        1.0 / 9 + rh * (-1.0 / 10 + rh * (1.0 / 11 + rh * (-1.0 / 12)))))))));
    const DD h = two_prod(rh, rh);
    const DD acc = dd_add(r, {-0.5 * h.hi, -0.5 * h.lo});
    return dd_add_d(acc, h.hi * rh * q - rh * r.lo);
}

// log x as a double-double for a finite x > 0.
DD log_dd(double x) {
    int k = 0;
    uint64_t u = bits_of(x);
    if ((u >> 52) == 0) {  // subnormal: scale into the normal range
        x *= 0x1p54;
        k = -54;
        u = bits_of(x);
    }
    k += static_cast<int>(u >> 52) - 1023;
    double m = from_bits((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
    if (m > 2.0 * kSqrtHalf) {
        m *= 0.5;
        ++k;
    }
    if (k == 0 && m > 1.0 - 0x1p-6 && m < 1.0 + 0x1p-6) return log1p_small({m - 1.0, 0.0});  // m - 1 exact
    const Tables& T = tables();
    const int i = static_cast<int>((m - kLogTableBase) * 128.0);
    const double c = T.log_c[i];
    // r = m c - 1 exactly as a double-double: m = mh + ml (21 and <= 32 significant bits), c has 21 bits, so mh c
    // and ml c are exact, and mh c - 1 is exact (Sterbenz: mh c is within 2^-7 of 1)
    const double mh = from_bits(bits_of(m) & 0xffffffff00000000ULL);
    const DD r = two_sum(mh * c - 1.0, (m - mh) * c);
    DD acc = dd_add(T.log_neg[i], log1p_small(r));
    if (k != 0) {
        const double kd = k;  // |k| <= 1075: kd ln2_head exact
        acc = dd_add({kd * kLn2H42, kd * kLn2M42 + kd * kLn2L42}, acc);
    }
    return acc;
}

// exp(z) = 2^k * e, e a double-double in [~0.99, ~2.02), for |z.hi| <= 746.
DD exp_dd(DD z, int& k) {
    const Tables& T = tables();
    const double nd = (z.hi * k64OnLn2 + 0x1.8p52) - 0x1.8p52;  // nearest integer (round to nearest even)
    const int n = static_cast<int>(nd);
    const int j = n & 63;
    k = (n - j) / 64;
    // r = z - n ln2/64: n a1 and n a2 exact, z.hi - n a1 exact (Sterbenz, or n == 0)
    const DD r0 = two_sum(z.hi - nd * kLn2On64A1, -nd * kLn2On64A2);
    const DD r = fast_two_sum(r0.hi, r0.lo + (z.lo - nd * kLn2On64A3));
    // exp r = 1 + r + r^2/2 + r^3 (1/6 + r/24 + ...); |r| <= 0.0055: r^3/6 < 2^-24, so its tail is a double
    const double rh = r.hi;
    // 1/3! + r/4! + ... + r^7/10! (the constants are folded at compile time: one correctly rounded division each)
    const double q = 1.0 / 6 + rh * (1.0 / 24 + rh * (1.0 / 120 + rh * (1.0 / 720 + rh * (1.0 / 5040 + rh * (
        1.0 / 40320 + rh * (1.0 / 362880 + rh * (1.0 / 3628800)))))));
    DD r2 = two_prod(rh, rh);
    r2.lo += 2.0 * rh * r.lo;
    DD s = dd_add(r, dd_mul_d(fast_two_sum(r2.hi, r2.lo), 0.5));
    s = dd_add_d(s, r2.hi * rh * q);
    // e = 2^(j/64) (1 + s)
    const DD t = T.exp2_j[j];
    return dd_add(t, dd_mul(t, s));
}

inline double round_dd(DD v) { return v.hi + v.lo; }

// exp of a double-double with the over/underflow checks; `sign` multiplies the result (pow of a negative x).
double exp_of(DD z, double sign) {
    if (z.hi > 709.8) return sign * kInf;  // exp(709.79) > DBL_MAX
    if (z.hi < -745.2) return sign * 0.0;
    int k = 0;
    const DD e = exp_dd(z, k);
    if (k >= -1021) {
        const double v = round_dd(e);
        return sign * scale(v, k);  // may overflow to inf (exact threshold), never inexact for a normal result
    }
    // subnormal result: round the scaled sum (hi and lo scaled by powers of two, exact unless they underflow)
    return sign * (scale(e.hi, k) + scale(e.lo, k));
}

// ---------------------------------------------------------------------------------------------- erfc
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi), the double nearest
constexpr double kOneOverSqrtPi = 0.56418958354775628695;  // 1 / sqrt(pi)
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
    return exp(-(t * t)) * exp((t - z) * (t + z));
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
    return kTwoOverSqrtPi * exp(-z2) * sum;
}

// erfc(z) for z >= 1: e^-z^2 / sqrt(pi) / (z + (1/2) / (z + (2/2) / (z + (3/2) / (z + ...)))), bottom-up.
double erfc_fraction(double z) {
    double f = z;
    for (int k = kFractionDepth; k >= 1; --k) f = z + (0.5 * static_cast<double>(k)) / f;
    return kOneOverSqrtPi * exp_minus_square(z) / f;
}

inline bool is_integer(double y) { return y == static_cast<double>(static_cast<int64_t>(y)); }

}  // namespace

// ---------------------------------------------------------------------------------------------- public
double exp(double x) {
    if (x != x) return x;
    if (x == kInf) return kInf;
    if (x == -kInf) return 0.0;
    if (x > -0x1p-54 && x < 0x1p-54) return 1.0 + x;  // exp x = 1 + x to well within half an ulp
    return exp_of({x, 0.0}, 1.0);
}

double log(double x) {
    if (x != x) return x;
    if (x < 0.0) return kNaN;
    if (x == 0.0) return -kInf;
    if (x == kInf) return kInf;
    return round_dd(log_dd(x));
}

double log1p(double x) {
    if (x != x) return x;
    if (x < -1.0) return kNaN;
    if (x == -1.0) return -kInf;
    if (x == kInf) return kInf;
    if (x > -0x1p-54 && x < 0x1p-54) return x;  // x - x^2/2 rounds to x
    if (x > -0x1p-6 && x < 0x1p-6) return round_dd(log1p_small({x, 0.0}));
    // |x| >= 2^-6: log(uh + ul) = log uh + ul/uh - (ul/uh)^2/2 + ..., the square below 2^-100 of the result
    const DD u = two_sum(1.0, x);  // 1 + x exactly
    return round_dd(dd_add_d(log_dd(u.hi), u.lo / u.hi));
}

double expm1(double x) {
    if (x != x) return x;
    if (x == kInf) return kInf;
    if (x < -38.0) return -1.0;  // exp(-38) < 2^-54: -1 + exp(x) rounds to -1
    if (x > -0x1p-54 && x < 0x1p-54) return x;
    if (x > -0x1p-5 && x < 0x1p-5) {
        // x (1 + x/2 + x^2/6 + x^3/24 + x^4 (1/120 + ...)): the first four terms in double-double
        const Tables& T = tables();
        double q = 0.0;
        for (int n = 12; n >= 5; --n) q = T.inv_fact[n].hi + x * q;
        DD acc = dd_add(T.inv_fact[4], dd_mul_d(DD{q, 0.0}, x));
        acc = dd_add(T.inv_fact[3], dd_mul_d(acc, x));
        acc = dd_add(T.inv_fact[2], dd_mul_d(acc, x));
        acc = dd_add({1.0, 0.0}, dd_mul_d(acc, x));
        return round_dd(dd_mul_d(acc, x));
    }
    if (x > 709.8) return kInf;
    int k = 0;
    const DD e = exp_dd({x, 0.0}, k);
    const DD v = {scale(e.hi, k), scale(e.lo, k)};  // exact: x >= -38 keeps both far from underflow
    return round_dd(dd_add_d(v, -1.0));
}

double pow(double x, double y) {
    if (y == 0.0 || x == 1.0) return 1.0;
    if (x != x || y != y) return kNaN;
    const double ay = y < 0.0 ? -y : y;
    double sign = 1.0;
    if (x < 0.0 || (x == 0.0 && bits_of(x) >> 63)) {  // negative x or -0
        const bool integral = ay >= 0x1p53 || is_integer(y);
        if (x != -kInf && x != 0.0 && !integral && ay != kInf) return kNaN;
        const bool odd = ay < 0x1p53 && integral && (static_cast<int64_t>(ay) & 1) != 0;
        if (odd) sign = -1.0;
        x = -x;
    }
    if (x == 0.0) return y < 0.0 ? sign * kInf : sign * 0.0;
    if (x == kInf) return y < 0.0 ? sign * 0.0 : sign * kInf;
    if (ay == kInf) {
        if (x == 1.0) return 1.0;  // (-1)^(+-inf)
        return ((x > 1.0) == (y > 0.0)) ? kInf : 0.0;
    }
    if (x == 1.0) return sign;
    const DD l = log_dd(x);
    const double guess = y * l.hi;
    if (ay > 0x1p900 || guess > 800.0 || guess < -800.0) return guess > 0.0 ? sign * kInf : sign * 0.0;
    DD z = two_prod(y, l.hi);
    z.lo += y * l.lo;
    return exp_of(fast_two_sum(z.hi, z.lo), sign);
}

double cos(double x) {
    if (x != x) return x;
    const double ax = x < 0.0 ? -x : x;
    if (ax == kInf) return kNaN;
    if (ax > 0x1p20 * kPio2P1) throw std::domain_error("pmath::cos: |x| > 2^20 pi/2 is outside the reduced range");
    if (ax < 0x1p-27) return 1.0;  // 1 - x^2/2 rounds to 1
    const Tables& T = tables();
    const double nd = (ax * kTwoOnPi + 0x1.8p52) - 0x1.8p52;
    const int n = static_cast<int>(nd);
    // r = ax - n pi/2: n p1, n p2 exact; ax - n p1 exact (Sterbenz, or n == 0)
    DD r = two_sum(ax - nd * kPio2P1, -nd * kPio2P2);
    const DD p3 = two_prod(nd, kPio2P3);
    r = dd_add(r, {-p3.hi, -p3.lo - nd * kPio2P4});
    const DD z = dd_mul(r, r);
    const bool use_sin = (n & 1) != 0;
    // cos r = sum (-1)^i z^i / (2i)!, sin r = r sum (-1)^i z^i / (2i + 1)!; terms i >= 5 in double
    const int off = use_sin ? 1 : 0;
    double q = 0.0;
    for (int i = 12; i >= 5; --i) {
        const double c = T.inv_fact[2 * i + off].hi;
        q = ((i % 2 == 0) ? c : -c) + z.hi * q;
    }
    DD acc = {q, 0.0};
    for (int i = 4; i >= 0; --i) {
        const DD c = T.inv_fact[2 * i + off];
        acc = dd_add((i % 2 == 0) ? c : dd_neg(c), dd_mul(z, acc));
    }
    if (use_sin) acc = dd_mul(acc, r);
    const int quadrant = n & 3;  // cos(n pi/2 + r): cos r, -sin r, -cos r, sin r
    const double v = round_dd(acc);
    return (quadrant == 1 || quadrant == 2) ? -v : v;
}

double erfc(double z) {
    if (z != z) return z;
    if (z > 27.5) return 0.0;  // e^-z^2 underflows to 0 from z ~ 27.3 on; also z = +inf
    if (z < -27.5) return 2.0;
    if (z >= kSeriesEnd) return erfc_fraction(z);
    if (z <= -kSeriesEnd) return 2.0 - erfc_fraction(-z);
    return 1.0 - erf_series(z);
}

}  // namespace kairos::pmath
