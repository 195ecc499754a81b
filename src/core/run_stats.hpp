// The metrics recorder the simulator fills on its hot path: the token-gap records of `RunStats`
// (kairos_gym/sim/metrics.py reads them), the run counters (waiting, wait_area, tbt_violations, tokens_out,
// n_*) with the token-gap accounting of Simulator::emit_tokens, and the index-rule percentiles
// `weighted_percentiles` and `sorted_percentile` (the same as metrics.py's).
//
// Units: times and gaps in seconds (float64); weights, counts and token numbers are int64; `wait_area` is
// request-seconds. The summary's means (numpy pairwise sums) are not here: Python computes them from these
// records, which give it the same arrays bit for bit.
//
// Records are append-only, in the engine's order (which also orders the percentile ties):
// - a stretch (t0, dt, n, weight): n steps of durations t0 + j dt (j = 0..n-1), each giving `weight` gaps;
// - a single gap (value, weight).
// gaps() expands them exactly as numpy does: t0 + dt * double(j) per step, the stretches first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "streaming_metrics.hpp"

namespace kairos {

// Upper bound on the number of values gaps() expands to (2^31: 32 GiB of values and weights), checked before
// recording (std::length_error), so gaps() never allocates more.
inline constexpr int64_t MAX_GAP_VALUES = int64_t{1} << 31;
// Upper bound on the total weight of weighted_percentiles (2^53: the ceil of q/100 * total is exact below it).
inline constexpr int64_t MAX_TOTAL_WEIGHT = int64_t{1} << 53;

class RunStats {
public:
    // n steps of durations t0 + j dt (j = 0..n-1), each giving `weight` token gaps. n and weight must be >= 0
    // (std::invalid_argument; Python's gaps() would fail on a negative n, its percentiles on a negative weight).
    void add_stretch(double t0, double dt, int64_t n, int64_t weight);
    // One gap of `value` seconds, `weight` (>= 0) times.
    void add_gap(double value, int64_t weight = 1);
    // All gaps as (values, weights): every stretch's steps in record order, then the single gaps.
    void gaps(std::vector<double>& values, std::vector<int64_t>& weights) const;
    // How many values gaps() gives (the sum of the stretches' n plus the number of single gaps).
    int64_t n_gap_values() const noexcept { return steps_ + static_cast<int64_t>(gap_v.size()); }
    // Streaming mode (streaming_metrics.hpp): from now on every gap goes into a LogSketch of relative accuracy
    // alpha instead of the records (which stay empty: memory does not grow with the run).
    void stream(double alpha) {
        streaming_ = true;
        sketch_ = LogSketch(alpha);
    }
    bool streaming() const noexcept { return streaming_; }
    const LogSketch& sketch() const noexcept { return sketch_; }

    std::vector<double> s_t0, s_dt;
    std::vector<int64_t> s_n, s_w;
    std::vector<double> gap_v;
    std::vector<int64_t> gap_w;

private:
    int64_t steps_ = 0;  // sum of s_n
    bool streaming_ = false;
    LogSketch sketch_;
};

// The run counters of Simulator and the clock-driven waiting area.
struct RunCounters {
    int64_t waiting = 0;      // requests arrived without a first token
    double wait_area = 0.0;   // integral of `waiting` over time (request-seconds)
    double area_t = 0.0;      // time up to which wait_area is integrated (seconds)
    int64_t tbt_violations = 0;  // token gaps above the TBT SLO
    int64_t tokens_out = 0;
    int64_t n_decisions = 0;
    int64_t n_invalid = 0;
    int64_t n_finished = 0;
    int64_t n_rejected = 0;            // rejected at arrival, for any reason (the sum of the two below)
    int64_t n_rejected_overlong = 0;   // could never fit (cluster.overlong: reject)
    int64_t n_rejected_admission = 0;  // refused by admission control (overload.admission_*)
    int64_t n_timed_out = 0;           // no first token within overload.timeout_s of arrival (overload.cpp)
    int64_t n_arrived = 0;             // arrival events handled (admitted or rejected)
    int64_t n_preemptions = 0;
    int64_t swap_bytes = 0;
    int64_t n_pull_decisions = 0;  // pull decisions raised (decision_points arrival+pull; counted in n_decisions)
    int64_t n_pulled = 0;          // of them, candidates deflected (pulled off their prefill queue)
    // The benchmark's score as the run goes (rollout.hpp Objective, the Oracle's bound; the SLOs are CoreConfig's
    // ttft_slo_s and tbt_s): finished requests within both SLOs, finished requests' SLOs met (TTFT + TBT), first
    // tokens later than arrival + TTFT SLO (counted at the first token: final, a first token is set once),
    // finished requests whose worst gap exceeds the TBT SLO, and of them those whose first token was in time.
    int64_t score_ok = 0;
    int64_t score_partial = 0;
    int64_t ttft_missed = 0;
    int64_t tbt_missed = 0;
    int64_t tbt_missed_only = 0;
    int64_t lost_scored = 0;  // rejections and time-outs of scored requests (rid >= CoreConfig score_from)

    // Requests known to miss the score so far (each final once counted): a late first token, a finished request
    // with a late token gap, a rejection, a time-out (never finishes); scored requests only (CoreConfig
    // score_from: a burn-in's requests never count). A finished run's count is n_scored - score_ok.
    int64_t known_misses() const noexcept { return ttft_missed + tbt_missed_only + lost_scored; }

    // Every popped event, stale ones included: `wait_area += waiting * (t - area_t)`, `area_t = t`.
    void advance_clock(double t) noexcept {
        wait_area += static_cast<double>(waiting) * (t - area_t);
        area_t = t;
    }
    // A request arrives and waits for its first token.
    void arrive() noexcept { waiting += 1; }
    // A first token at t <= now (seconds): the area was integrated up to now, the request stopped waiting at t.
    void first_token(double now, double t) noexcept {
        waiting -= 1;
        wait_area -= now - t;
    }
};

// One gap of `g` seconds given `w` times (Simulator._emit_tokens: a fresh request's first gap, and step 0's
// gap t0 for the w0 requests that already had a token): records it, counts the tokens and, when g > slo,
// the violations.
void record_gap(RunStats& st, RunCounters& c, double g, int64_t w, double slo);

// Steps 1..n-1 of a stretch of n steps of durations t0 + j dt over a batch of B requests (the `if n > 1` block
// of Simulator._emit_tokens): records the stretch (t0 + dt, dt, n - 1, B), counts B (n - 1) tokens and the
// B-weighted steps j in 1..n-1 with t0 + j dt > slo. Nothing when n <= 1.
void record_stretch_steps(RunStats& st, RunCounters& c, double t0, double dt, int64_t n, int64_t B, double slo);

// Percentiles q (each finite, in [0, 100]) of values repeated by integer weights, numpy's inverted-CDF rule
// (metrics.weighted_percentiles: a stable sort of the values, NaN last, then the first cumulative weight
// >= ceil(q / 100 * total), clamped to [1, total]); all NaN when there is no value or the weights sum to 0.
// Weights must be >= 0 with a total below MAX_TOTAL_WEIGHT; sizes must match (std::invalid_argument).
std::vector<double> weighted_percentiles(const double* values, const int64_t* weights, std::size_t n,
                                         const std::vector<double>& qs);

// np.percentile(x, q, method="inverted_cdf") of s = sort(x), NaN-free (metrics.sorted_percentile): the value
// at index ceil(n q / 100 - 1), at least 0; NaN when n == 0. q finite in [0, 100] (std::invalid_argument).
double sorted_percentile(const double* s, std::size_t n, double q);

}  // namespace kairos
