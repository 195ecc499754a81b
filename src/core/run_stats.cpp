// The metrics recorder (see run_stats.hpp; Python: kairos_gym/sim/metrics.py RunStats and the percentiles).
#include "run_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace kairos {

void RunStats::add_stretch(double t0, double dt, int64_t n, int64_t weight) {
    if (n < 0 || weight < 0) throw std::invalid_argument("RunStats.add_stretch: n and weight must be >= 0");
    if (streaming_) {  // the values gaps() would give, each with its weight
        for (int64_t j = 0; j < n; ++j) sketch_.add(t0 + dt * static_cast<double>(j), weight);
        return;
    }
    if (n > MAX_GAP_VALUES - n_gap_values())
        throw std::length_error("RunStats.add_stretch: more than MAX_GAP_VALUES (2^31) gaps");
    s_t0.push_back(t0);
    s_dt.push_back(dt);
    s_n.push_back(n);
    s_w.push_back(weight);
    steps_ += n;
}

void RunStats::add_gap(double value, int64_t weight) {
    if (weight < 0) throw std::invalid_argument("RunStats.add_gap: the weight must be >= 0");
    if (streaming_) {
        sketch_.add(value, weight);
        return;
    }
    if (n_gap_values() >= MAX_GAP_VALUES)
        throw std::length_error("RunStats.add_gap: more than MAX_GAP_VALUES (2^31) gaps");
    gap_v.push_back(value);
    gap_w.push_back(weight);
}

void RunStats::gaps(std::vector<double>& values, std::vector<int64_t>& weights) const {
    const std::size_t total = static_cast<std::size_t>(n_gap_values());  // <= MAX_GAP_VALUES (checked on add)
    values.clear();
    weights.clear();
    values.reserve(total);
    weights.reserve(total);
    // numpy: t0[idx] + dt[idx] * offs, offs an int64 array converted to float64 by the multiply
    for (std::size_t i = 0; i < s_n.size(); ++i) {
        const double t0 = s_t0[i], dt = s_dt[i];
        const int64_t w = s_w[i];
        for (int64_t j = 0; j < s_n[i]; ++j) {
            values.push_back(t0 + dt * static_cast<double>(j));
            weights.push_back(w);
        }
    }
    values.insert(values.end(), gap_v.begin(), gap_v.end());
    weights.insert(weights.end(), gap_w.begin(), gap_w.end());
}

void record_gap(RunStats& st, RunCounters& c, double g, int64_t w, double slo) {
    st.add_gap(g, w);
    c.tokens_out += w;
    if (g > slo) c.tbt_violations += w;
}

void record_stretch_steps(RunStats& st, RunCounters& c, double t0, double dt, int64_t n, int64_t B, double slo) {
    if (n <= 1) return;
    const double last = t0 + dt * static_cast<double>(n - 1);
    st.add_stretch(t0 + dt, dt, n - 1, B);
    c.tokens_out += B * (n - 1);
    if (last > slo) {  // count steps j in 1..n-1 with t0 + j dt > slo
        if (dt > 0) {
            // Python: jmin = max(1, floor((slo - t0) / dt) + 1), an unbounded int. `t0 + j dt > slo` is monotone
            // in j (rounding is monotone) and holds at j = n - 1 (last > slo), so the two loops below end on the
            // least such j from any start: an estimate beyond n - 1 starts from n - 1 instead, which avoids an
            // int64 overflow and gives the same jmin. An infinite estimate (a subnormal dt; Python's floor raises
            // OverflowError there, the engine never gets one) starts from 1 or n - 1 likewise.
            const double est = std::floor((slo - t0) / dt) + 1.0;
            int64_t jmin = 1;
            if (est >= static_cast<double>(n - 1)) jmin = n - 1;
            else if (est > 1.0) jmin = static_cast<int64_t>(est);  // an integer value below n - 1: exact
            while (jmin > 1 && t0 + static_cast<double>(jmin - 1) * dt > slo) jmin -= 1;
            while (t0 + static_cast<double>(jmin) * dt <= slo) jmin += 1;
            c.tbt_violations += B * (n - jmin);
        } else {
            c.tbt_violations += B * (n - 1);
        }
    }
}

namespace {

void check_q(double q, const char* where) {
    if (!(q >= 0.0 && q <= 100.0)) throw std::invalid_argument(std::string(where) + ": q must be in [0, 100]");
}

// numpy's searchsorted(a, key, side="left") for one key (npysort binsearch): the first i with a[i] >= key.
std::size_t searchsorted_left(const std::vector<int64_t>& a, int64_t key) {
    std::size_t min_idx = 0, max_idx = a.size();
    while (min_idx < max_idx) {
        const std::size_t mid = min_idx + ((max_idx - min_idx) >> 1);
        if (a[mid] < key) min_idx = mid + 1;
        else max_idx = mid;
    }
    return min_idx;
}

}  // namespace

std::vector<double> weighted_percentiles(const double* values, const int64_t* weights, std::size_t n,
                                         const std::vector<double>& qs) {
    for (double q : qs) check_q(q, "weighted_percentiles");
    int64_t sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (weights[i] < 0) throw std::invalid_argument("weighted_percentiles: weights must be >= 0");
        if (weights[i] >= MAX_TOTAL_WEIGHT - sum)
            throw std::invalid_argument("weighted_percentiles: the weights sum to 2^53 or more");
        sum += weights[i];
    }
    if (n == 0 || sum == 0) return std::vector<double>(qs.size(), std::numeric_limits<double>::quiet_NaN());
    // np.argsort(values, kind="stable"): ascending, equal values (-0.0 == 0.0) in input order, NaN last
    std::vector<std::pair<double, int64_t>> vw(n);
    for (std::size_t i = 0; i < n; ++i) vw[i] = {values[i], weights[i]};
    std::stable_sort(vw.begin(), vw.end(), [](const auto& x, const auto& y) {
        return x.first < y.first || (!std::isnan(x.first) && std::isnan(y.first));
    });
    std::vector<int64_t> cw(n);
    int64_t acc = 0;
    for (std::size_t i = 0; i < n; ++i) cw[i] = acc += vw[i].second;
    const int64_t total = cw[n - 1];
    std::vector<double> out;
    out.reserve(qs.size());
    for (double q : qs) {
        // math.ceil(q / 100.0 * total): exact in int64, since q / 100.0 <= 1 and total < 2^53
        int64_t k = static_cast<int64_t>(std::ceil(q / 100.0 * static_cast<double>(total)));
        k = std::min(std::max(k, int64_t{1}), total);
        out.push_back(vw[searchsorted_left(cw, k)].first);
    }
    return out;
}

double sorted_percentile(const double* s, std::size_t n, double q) {
    check_q(q, "sorted_percentile");
    if (n == 0) return std::numeric_limits<double>::quiet_NaN();
    const double idx = static_cast<double>(n) * (q / 100.0) - 1.0;
    const double prev = std::floor(idx);  // >= -1 and <= n - 1: exact as an int64
    const int64_t p = static_cast<int64_t>(prev);
    const int64_t k = idx - prev == 0 ? p : p + 1;
    return s[k > 0 ? k : 0];
}

}  // namespace kairos
