// INTERIM (issue 11, step 3a): minimal stand-ins for the step-2 pieces other helpers are writing (event queue,
// fair-share link, run-stats recorder, cost tables). Replaced by their classes when those land on main.
// Units: seconds, tokens, bytes.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace kairos {

// ---------------------------------------------------------------- events, ordered by (t, seq)
struct Event {
    double t;
    int64_t seq;
    int32_t kind;
    int64_t a;
    int64_t b;
};

class EventQueueI {
public:
    void push(double t, int32_t kind, int64_t a, int64_t b) {
        heap_.push_back(Event{t, ++seq_, kind, a, b});
        std::push_heap(heap_.begin(), heap_.end(), later);
    }
    Event pop() {
        std::pop_heap(heap_.begin(), heap_.end(), later);
        Event e = heap_.back();
        heap_.pop_back();
        return e;
    }
    bool empty() const { return heap_.empty(); }
    int64_t seq() const { return seq_; }
    void clear() {
        heap_.clear();
        seq_ = 0;
    }

private:
    static bool later(const Event& x, const Event& y) { return x.t > y.t || (x.t == y.t && x.seq > y.seq); }
    std::vector<Event> heap_;
    int64_t seq_ = 0;
};

// ---------------------------------------------------------------- fair-share link (latency/transfer.py)
class FairShareLinkI {
public:
    explicit FairShareLinkI(double bandwidth) : bw_(bandwidth) {}
    void advance(double now) {
        size_t n = rem_.size();
        if (n && now > last_) {
            double done = (now - last_) * bw_ / static_cast<double>(n);
            for (auto& kv : rem_) kv.second -= done;
        }
        last_ = std::max(last_, now);
    }
    void add(int64_t tid, double nbytes, double now) {
        advance(now);
        rem_.emplace_back(tid, nbytes);
        ++version;
    }
    void remove(int64_t tid, double now) {
        advance(now);
        for (size_t i = 0; i < rem_.size(); ++i)
            if (rem_[i].first == tid) {
                rem_.erase(rem_.begin() + static_cast<std::ptrdiff_t>(i));
                break;
            }
        ++version;
    }
    // (time, tid) of the next completion if nothing changes; false when idle
    bool next_completion(double& t, int64_t& tid) const {
        if (rem_.empty()) return false;
        double best = rem_[0].second;
        tid = rem_[0].first;
        for (const auto& kv : rem_)
            if (kv.second < best || (kv.second == best && kv.first < tid)) {
                best = kv.second;
                tid = kv.first;
            }
        if (best < 0.0) best = 0.0;
        t = last_ + best * static_cast<double>(rem_.size()) / bw_;
        return true;
    }
    int64_t version = 0;

private:
    double bw_;
    double last_ = 0.0;
    std::vector<std::pair<int64_t, double>> rem_;
};

// ---------------------------------------------------------------- token-gap records (sim/metrics.py RunStats)
struct RunStatsI {
    std::vector<double> s_t0, s_dt;
    std::vector<int64_t> s_n, s_w;
    std::vector<double> gap_v;
    std::vector<int64_t> gap_w;
    void add_stretch(double t0, double dt, int64_t n, int64_t w) {
        s_t0.push_back(t0);
        s_dt.push_back(dt);
        s_n.push_back(n);
        s_w.push_back(w);
    }
    void add_gap(double v, int64_t w) {
        gap_v.push_back(v);
        gap_w.push_back(w);
    }
};

// ---------------------------------------------------------------- cost tables (latency/pricing.py ChunkPricer)
using Cost3 = std::array<double, 3>;  // (seconds, FLOPs, compute seconds)

struct CostTablesI {
    std::vector<Cost3> gc;  // G[T]: everything but LM head and attention, per token count
    std::vector<Cost3> lc;  // L[S]: the LM head, per sampling-sequence count
    Cost3 kcost{};          // per decode pair
    double apf_c = 0, kv_m = 0, p = 1, inv_p = 1, attn_pf_pair = 0, peak_c_attn_pf = 1;

    Cost3 base_cost(int64_t T, int64_t S) const {
        if (T < 0 || S < 0 || T >= static_cast<int64_t>(gc.size()) || S >= static_cast<int64_t>(lc.size()))
            throw std::out_of_range("cost tables: index past the compiled size");
        const Cost3& g = gc[static_cast<size_t>(T)];
        const Cost3& l = lc[static_cast<size_t>(S)];
        return Cost3{g[0] + l[0], g[1] + l[1], g[2] + l[2]};
    }
    double attn_time(double pf_pairs, double kv_read) const {
        if (pf_pairs <= 0.0) return 0.0;
        return std::pow(std::pow(pf_pairs * apf_c, p) + std::pow(kv_read * kv_m, p), inv_p);
    }
    Cost3 attn_cost(double pf_pairs, double kv_read) const {
        if (pf_pairs <= 0.0) return Cost3{0.0, 0.0, 0.0};
        double fl = pf_pairs * attn_pf_pair;
        return Cost3{attn_time(pf_pairs, kv_read), fl, fl / peak_c_attn_pf};
    }
};

}  // namespace kairos
