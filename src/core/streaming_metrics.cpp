// Streaming metrics (see streaming_metrics.hpp): the log-bucket sketch and Simulator::retire, which folds a
// request into the run's StreamSummary and frees its ring slot. Times in seconds, sizes in tokens.
#include "portable_math.hpp"
#include "streaming_metrics.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "simulator.hpp"

namespace kairos {

LogSketch::LogSketch(double alpha) : alpha_(alpha) {
    if (!(alpha > 0.0 && alpha < 1.0)) throw std::invalid_argument("LogSketch: alpha must be in (0, 1)");
    gamma_ = (1.0 + alpha) / (1.0 - alpha);
    log_gamma_ = pmath::log(gamma_);
    offset_ = static_cast<int64_t>(std::ceil(pmath::log(MIN_VALUE) / log_gamma_));
    int64_t last = static_cast<int64_t>(std::ceil(pmath::log(MAX_VALUE) / log_gamma_));
    counts_.assign(static_cast<size_t>(last - offset_ + 1), 0);
}

void LogSketch::add(double x, int64_t w) {
    if (w <= 0) {
        if (w < 0) throw std::invalid_argument("LogSketch.add: a negative weight");
        return;
    }
    total_ += w;
    if (x > max_seen_) max_seen_ = x;
    if (!(x >= MIN_VALUE)) {  // below 1 ns (and NaN): reported as 0
        low_ += w;
        return;
    }
    if (x > MAX_VALUE) {
        high_ += w;
        return;
    }
    int64_t i = static_cast<int64_t>(std::ceil(pmath::log(x) / log_gamma_)) - offset_;
    i = std::min<int64_t>(std::max<int64_t>(i, 0), static_cast<int64_t>(counts_.size()) - 1);
    counts_[static_cast<size_t>(i)] += w;
}

double LogSketch::percentile(double q) const {
    if (!(q >= 0.0 && q <= 100.0)) throw std::invalid_argument("LogSketch.percentile: q must be in [0, 100]");
    if (total_ == 0) return std::numeric_limits<double>::quiet_NaN();
    int64_t k = static_cast<int64_t>(std::ceil(q / 100.0 * static_cast<double>(total_)));
    k = std::min(std::max<int64_t>(k, 1), total_);
    if (k <= low_) return 0.0;
    int64_t acc = low_;
    for (size_t i = 0; i < counts_.size(); ++i) {
        acc += counts_[i];
        if (acc >= k) {
            double v = 2.0 * pmath::exp(static_cast<double>(static_cast<int64_t>(i) + offset_) * log_gamma_) /
                       (gamma_ + 1.0);
            return std::min(v, max_seen_);  // never above the largest value seen (a bucket's top half)
        }
    }
    return max_seen_;  // in the overflow above MAX_VALUE
}

void Simulator::retire(int64_t rid) {
    Requests& R = *R_;
    if (!R.ring()) return;  // exact mode: the records stay for the summary
    StreamSummary& S = stream_;
    R.live[rid] = 0;
    S.n_retired += 1;
    const int64_t path = R.path[rid];
    if (path >= 0) {
        S.n_routed += 1;
        if (path == PATH_DEFLECT) S.n_deflect += 1;
    }
    S.kv_moved += R.kv_moved[rid];
    if (R.has_chunks[rid])
        for (int64_t c : R.chunks[rid]) S.chunk_hist[c] += 1;
    const double fin = R.finish[rid];
    if (!std::isnan(fin)) {
        const double arr = wl_->arrival[rid], first = R.first_token[rid], gap = R.max_gap[rid];
        const int64_t outp = wl_->output[rid];
        const double ttft = first - arr;
        S.n_done += 1;
        S.ttft.add(ttft);
        S.ttft_sum.add(ttft);
        S.e2e.add(fin - arr);
        if (outp > 1) {
            S.tpot_sum.add((fin - first) / static_cast<double>(std::max<int64_t>(outp - 1, 1)));
            S.n_tpot += 1;
        }
        if (ttft <= cfg_.ttft_slo_s && gap <= cfg_.tbt_s) S.n_ok += 1;
        if (gap <= cfg_.tbt_s) S.n_tbt_ok += 1;
        S.output_tokens += outp;
        if (fin > S.makespan) S.makespan = fin;
        if (path == PATH_PREFILL) {
            const double queue = R.prefill_start[rid] - arr, exec = R.exec_s[rid];
            double transfer = 0.0, dwait = 0.0;
            if (cfg_.ttft_includes_transfer) {
                transfer = std::isnan(R.xfer_end[rid]) ? 0.0 : R.xfer_end[rid] - R.xfer_start[rid];
                dwait = ttft - (std::isnan(queue) ? 0.0 : queue) - exec - transfer;
            }
            S.n_prefill_done += 1;
            S.ttft_prefill.add(ttft);
            if (!std::isnan(queue)) {
                S.queue.add(queue);
                S.queue_sum.add(queue);
            }
            S.exec.add(exec);
            S.exec_sum.add(exec);
            S.transfer.add(transfer);
            S.transfer_sum.add(transfer);
            S.decode_wait_sum.add(dwait);
        }
    }
    if (stream_rows)
        rows_.push_back(RetiredRow{rid, wl_->prompt[rid], wl_->output[rid], path, R.p_node[rid], R.d_node[rid],
                                   R.kv_moved[rid], wl_->arrival[rid], R.first_token[rid], fin,
                                   R.prefill_start[rid], R.exec_s[rid], R.xfer_start[rid], R.xfer_end[rid],
                                   R.max_gap[rid], R.timed_out[rid],
                                   R.has_chunks[rid] ? R.chunks[rid] : std::vector<int64_t>{}});
}

void Simulator::occupy_slot(int64_t rid) {
    Requests& R = *R_;
    if (!R.ring()) return;
    if (R.live[rid])
        throw std::length_error("simulator: metrics.window too small: request " + std::to_string(rid) +
                                " arrived while request " + std::to_string(R.occupant[rid]) +
                                " (its ring slot) is still in flight; raise metrics.window");
    R.reset_slot(rid);
}

}  // namespace kairos
