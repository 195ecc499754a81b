// The base policies of base_policies.hpp, expression by expression as in agents/baselines.py and
// agents/kairos.py (staleness 0, model error 0: every factor 1 + e is 1.0, so the products by it are dropped:
// x * 1.0 == x and x / 1.0 == x exactly). Times in seconds, sizes in tokens.
#include "base_policies.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "simulator.hpp"

namespace kairos {

namespace {
double dbl(int64_t v) { return static_cast<double>(v); }
}  // namespace

BaseDecider::BaseDecider(BaseSpec spec, const Pricer& pricer) : spec_(std::move(spec)), pricer_(pricer) {
    if (spec_.kind < BASE_NO_DEFLECT || spec_.kind > BASE_PENDING_SWITCH)
        throw std::invalid_argument("base policy: unknown kind");
    if (spec_.chunk < 0) throw std::invalid_argument("base policy: chunk < 0");
    if (spec_.kind == BASE_PENDING_SWITCH && spec_.min_pending < 1)
        throw std::invalid_argument("base policy pending-switch: min_pending < 1");
    if (spec_.kind == BASE_KAIROS_EXACT) {
        if (spec_.menu_desc.empty()) throw std::invalid_argument("base policy kairos-exact: empty chunk menu");
        if (spec_.prefill_budget < 1) throw std::invalid_argument("base policy kairos-exact: prefill budget < 1");
        attn0_ = pricer_.model_time(1.0, 1.0, 0.0, 0.0, 0.0);
        step_full_ = pricer_.base(spec_.prefill_budget, 1);
    }
}

int64_t least_loaded_deflectable(const DecisionMenu& m) {
    int64_t best = -1, bb = 0, bc = 0;
    for (int64_t i = 0; i < m.D; ++i) {
        bool can = m.decode_b[static_cast<size_t>(2 * i + 1)] != 0;
        bool busy = m.decode_b[static_cast<size_t>(2 * i)] != 0;
        if (!can || busy) continue;
        int64_t b = m.decode_i[static_cast<size_t>(5 * i)], c = m.decode_i[static_cast<size_t>(5 * i + 1)];
        if (best < 0 || b < bb || (b == bb && c < bc)) {
            best = i;
            bb = b;
            bc = c;
        }
    }
    return best;
}

Action BaseDecider::decide(const DecisionMenu& m) {
    const BaseSpec& s = spec_;
    switch (s.kind) {
        case BASE_NO_DEFLECT:
            return Action{0, -1, 0};
        case BASE_KAIROS_EXACT:
            return kairos(m);
        case BASE_ALWAYS_DEFLECT: {
            int64_t d = least_loaded_deflectable(m);
            return d < 0 ? Action{0, -1, 0} : Action{1, d, s.chunk};
        }
        case BASE_SQ: {
            int64_t q = 0;
            for (int64_t p = 0; p < m.P; ++p) {
                int64_t v = m.prefill_i[static_cast<size_t>(2 * p + (s.unit_requests ? 1 : 0))];
                if (p == 0 || v < q) q = v;
            }
            if (dbl(q) > s.threshold) {
                int64_t d = least_loaded_deflectable(m);
                if (d >= 0) return Action{1, d, s.chunk};
            }
            return Action{0, -1, 0};
        }
        case BASE_PENDING_SWITCH: {
            int64_t pending = 0;
            for (int64_t d = 0; d < m.D; ++d) pending += m.decode_i[static_cast<size_t>(5 * d + 2)];
            if (pending >= s.min_pending) {
                int64_t d = least_loaded_deflectable(m);
                if (d >= 0) return Action{1, d, s.chunk};
            }
            return Action{0, -1, 0};
        }
        default: {  // BASE_SL
            if (dbl(m.prompt + m.gen) < s.threshold) {  // the prefill's tokens (+ gen at a re-entry)
                int64_t d = least_loaded_deflectable(m);
                if (d >= 0) return Action{1, d, s.chunk};
            }
            return Action{0, -1, 0};
        }
    }
}

// Kairos._own_prefill (memoised like own_prefill_s)
double BaseDecider::own_prefill_s(int64_t prompt) {
    auto it = own_memo_.find(prompt);
    if (it != own_memo_.end()) return it->second;
    const int64_t budget = spec_.prefill_budget;
    double t;
    if (prompt <= budget) {
        t = pricer_.model_time(dbl(prompt), 1.0, 0.0, dbl(prompt * (prompt + 1)) / 2.0, dbl(prompt));
    } else {
        t = 0.0;
        int64_t done = 0;
        while (done < prompt) {
            int64_t c = std::min(budget, prompt - done);
            t += pricer_.model_time(dbl(c), 1.0, 0.0, dbl(c) * (dbl(done) + dbl(c + 1) / 2.0), dbl(done + c));
            done += c;
        }
    }
    if (own_memo_.size() >= Pricer::kMemoLimit) own_memo_.clear();
    own_memo_.emplace(prompt, t);
    return t;
}

// Kairos.queue_wait_s
double BaseDecider::queue_wait_s(int64_t queued_tokens, int64_t queued_requests) {
    if (queued_tokens <= 0) return 0.0;
    const int64_t budget = spec_.prefill_budget;
    int64_t full = queued_tokens / budget, last = queued_tokens % budget;
    double wait = dbl(full) * step_full_ + (last ? pricer_.base(last, 1) : 0.0);
    int64_t n = std::max<int64_t>(queued_requests, 1);
    double mean_len = dbl(queued_tokens) / dbl(n);
    double pairs = dbl(queued_tokens) * (mean_len + 1.0) / 2.0;
    wait += pricer_.model_time(1.0, 1.0, 0.0, pairs, dbl(queued_tokens)) - attn0_;
    return wait;
}

// Kairos._decide with a fresh view (refreshed at every decision) and factors 1.0
Action BaseDecider::kairos(const DecisionMenu& m) {
    const BaseSpec& s = spec_;
    const int64_t prompt = m.prompt + m.gen;  // the prefill's tokens (a re-entry after a failure: + gen)
    double xfer = 0.0;
    if (!(s.xfer_per_token_s == 0.0 && s.xfer_setup_s == 0.0)) xfer = s.xfer_setup_s + dbl(prompt) * s.xfer_per_token_s;
    const double base_p = own_prefill_s(prompt) + xfer;
    double ttft_p = std::numeric_limits<double>::infinity();
    for (int64_t p = 0; p < m.P; ++p) {
        double t = queue_wait_s(m.prefill_i[static_cast<size_t>(2 * p)], m.prefill_i[static_cast<size_t>(2 * p + 1)]) +
                   base_p;
        if (p == 0 || t < ttft_p) ttft_p = t;
    }
    int64_t best_d = -1;
    double best_t = std::numeric_limits<double>::infinity();
    for (int64_t d = 0; d < m.D; ++d) {
        bool busy = m.decode_b[static_cast<size_t>(2 * d)] != 0;
        bool can = m.decode_b[static_cast<size_t>(2 * d + 1)] != 0;
        if (busy || !can) continue;
        int64_t b = m.decode_i[static_cast<size_t>(5 * d)];
        int64_t ctx = m.decode_i[static_cast<size_t>(5 * d + 1)];
        double tbt = m.decode_f[static_cast<size_t>(4 * d + 2)];
        std::pair<bool, double> ls = pricer_.largest_safe(b, dbl(ctx + b), prompt, s.beta * tbt, s.menu_desc, 0, sizes_);
        if (!ls.first) continue;
        if (ls.second < best_t) {
            best_t = ls.second;
            best_d = d;
        }
    }
    if (best_d >= 0 && best_t <= s.alpha * ttft_p && best_t <= s.ttft_slo_s) return Action{1, best_d, 0};
    int64_t pbest = 0;
    for (int64_t p = 1; p < m.P; ++p)
        if (m.prefill_i[static_cast<size_t>(2 * p)] < m.prefill_i[static_cast<size_t>(2 * pbest)]) pbest = p;
    return Action{0, pbest, 0};
}

bool apply_action(Simulator& sim, const Action& a) {
    if (a.kind == 0) {
        sim.apply_prefill(a.node);
        return true;
    }
    return sim.apply_deflect(a.node, a.chunk);
}

int64_t run_base(Simulator& sim, BaseDecider& base) {
    int64_t n = 0;
    if (sim.pending_rid() >= 0) {
        apply_action(sim, base.decide(sim.menu()));
        ++n;
    }
    while (sim.next_decision()) {
        apply_action(sim, base.decide(sim.menu()));
        ++n;
    }
    return n;
}

}  // namespace kairos
