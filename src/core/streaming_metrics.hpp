// Streaming metrics (scenario `metrics: {mode: streaming}`): a run whose memory does not grow
// with its length. Finished requests are folded into the accumulators below and their per-request slots reused
// (Requests ring, requests.hpp); token gaps go into a sketch instead of RunStats' records.
//
// Bounds (docs/reliability.md): counts, token sums and the makespan are exact; means are compensated
// (Neumaier) sums, equal to the exact mode's numpy means up to float rounding (~1e-12 relative); percentiles
// come from LogSketch, a fixed-range DDSketch: the reported value v of the true k-th smallest value x (the same
// rank rule as the exact mode, numpy's inverted CDF) has |v - x| <= alpha x for x in [MIN_VALUE, MAX_VALUE];
// x < MIN_VALUE (1 ns, and any negative rounding noise) reports 0, x > MAX_VALUE reports the largest value seen.
// Memory: a sketch holds ln(MAX/MIN) / ln(gamma) counters, gamma = (1 + alpha) / (1 - alpha): 1,842 int64
// (14.7 KB) at alpha = 0.01. Times in seconds, sizes in tokens, bytes in bytes.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace kairos {

class LogSketch {
public:
    static constexpr double MIN_VALUE = 1e-9;  // s
    static constexpr double MAX_VALUE = 1e7;   // s (115 days)

    LogSketch() = default;
    explicit LogSketch(double alpha);
    void add(double x, int64_t w = 1);
    // the q-th percentile (q in [0, 100]) by the inverted-CDF rank ceil(q / 100 * total) (>= 1); NaN if empty
    double percentile(double q) const;
    int64_t total() const { return total_; }
    double alpha() const { return alpha_; }
    size_t n_buckets() const { return counts_.size(); }

private:
    double alpha_ = 0.0, gamma_ = 1.0, log_gamma_ = 0.0;
    int64_t offset_ = 0;  // bucket index of counts_[0]
    std::vector<int64_t> counts_;
    int64_t low_ = 0, high_ = 0, total_ = 0;  // below MIN_VALUE, above MAX_VALUE, all
    double max_seen_ = -INFINITY;
};

// Neumaier's compensated sum
struct CompSum {
    double s = 0.0, c = 0.0;
    void add(double x) {
        double t = s + x;
        c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
        s = t;
    }
    double value() const { return s + c; }
};

// What kairos_gym.sim.metrics.summarize reads per request, folded as requests retire (streaming_metrics.cpp).
struct StreamSummary {
    StreamSummary() = default;  // exact mode: empty sketches (nothing allocated, nothing for snapshots to copy)
    explicit StreamSummary(double alpha)
        : ttft(alpha), e2e(alpha), ttft_prefill(alpha), queue(alpha), exec(alpha), transfer(alpha) {}
    LogSketch ttft, e2e;                       // completed requests
    LogSketch ttft_prefill, queue, exec, transfer;  // completed prefill-path requests (the TTFT breakdown)
    CompSum ttft_sum, tpot_sum, queue_sum, exec_sum, transfer_sum, decode_wait_sum;
    int64_t n_done = 0, n_tpot = 0, n_prefill_done = 0, n_ok = 0, n_tbt_ok = 0, output_tokens = 0;
    int64_t n_routed = 0, n_deflect = 0, kv_moved = 0, n_retired = 0;
    double makespan = 0.0;  // the last finish (s)
    std::map<int64_t, int64_t> chunk_hist;  // chunk size (tokens) -> chunks run
};

// One retired request, buffered for a streamed --requests-csv (the requests_table fields)
struct RetiredRow {
    int64_t rid, prompt, output, path, p_node, d_node, kv_moved;
    double arrival, first_token, finish, prefill_start, exec_s, xfer_start, xfer_end, max_gap, timed_out;
    std::vector<int64_t> chunks;
};

}  // namespace kairos
