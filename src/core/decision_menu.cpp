// Simulator::build_menu, prefill_wait and node_refuses: the priced decision context (decision_menu.hpp); every
// expression keeps the order of operations the golden data pins.
#include <cmath>
#include <limits>

#include "portable_math.hpp"
#include "simulator.hpp"

namespace kairos {

namespace {
double dbl(int64_t v) { return static_cast<double>(v); }
}  // namespace

int Simulator::node_refuses(int64_t di, int64_t need) const {
    const DecodeNode& node = dnodes_[static_cast<size_t>(di)];
    if (node.down) return REFUSE_DOWN;
    if (cfg_.max_deflections_per_node < 1 || node.has_defl) return REFUSE_IN_FLIGHT;
    if (node.batch_size + static_cast<int64_t>(node.pending.size()) + node.incoming +
            static_cast<int64_t>(node.swapped.size()) + node.swapping_in >= cfg_.decode_max_batch)
        return REFUSE_BATCH_FULL;
    if (node.kv_reserved + need > node.kv_capacity || !cfg_.kv.admits_new(node.swapped.size())) return REFUSE_MEMORY;
    return REFUSE_NONE;
}

double Simulator::prefill_wait_at(const PrefillNode& node, double now) {
    double wait = node.busy_until >= 0 ? std::max(0.0, node.busy_until - now) : 0.0;
    double steps_s = 0.0, attn_s = 0.0;  // the queue terms, computed afresh at each call
    int64_t in_step = node.has_step ? node.step_tokens : 0;
    int64_t rest = node.queued_tokens - in_step;
    if (rest > 0) {
        int64_t budget = cfg_.prefill_token_budget;
        int64_t full = rest / budget, last = rest % budget;  // divmod of positive ints
        steps_s = dbl(full) * pricer_.base(budget, 1) + (last ? pricer_.base(last, 1) : 0.0);
        if (node.has_step)
            attn_s = pricer_.attn_time(node.q_pairs - node.step_pairs, node.q_kv - node.step_kv);
        else
            attn_s = pricer_.attn_time(node.q_pairs, node.q_kv);
    }
    return wait + steps_s + attn_s;
}

void Simulator::build_menu(int64_t rid) {
    if (cfg_.info.realistic) {
        build_served_menu(rid);  // the realistic information track (information.cpp)
    } else {
        build_exact_menu(rid);
    }
    if (!faults_.empty()) {  // availability is served true on both tracks (a health check, not a copy)
        DecisionMenu& m = menu_;
        for (int64_t i = 0; i < m.P; ++i) {
            const bool up = pnodes_[static_cast<size_t>(i)].down == 0;
            m.up_p[static_cast<size_t>(i)] = up ? 1 : 0;
            if (!up) m.ttft_p[static_cast<size_t>(i)] = std::numeric_limits<double>::infinity();  // no option
        }
        for (int64_t j = 0; j < m.D; ++j) {
            const bool up = dnodes_[static_cast<size_t>(j)].down == 0;
            m.up_d[static_cast<size_t>(j)] = up ? 1 : 0;
            if (!up) m.decode_b[static_cast<size_t>(2 * j + 1)] = 0;  // can_deflect: a down node takes no work
        }
    }
}

// The request's fields of a menu (both tracks and rollout mode).
void Simulator::menu_request(int64_t rid) {
    DecisionMenu& m = menu_;
    m.now = now_;
    m.rid = rid;
    m.arrival = wl_->arrival[rid];
    m.prompt = wl_->prompt[rid];
    m.output = oracle_ ? wl_->output[rid] : -1;
    m.kind = DECISION_ARRIVAL;  // raise_pull (pull.cpp) / raise_reentry (reentry.cpp) rewrite it after this
    m.pull_node = -1;
    m.gen = R_->gen[rid];
}

// Decode node d's progress now, mid-stretch included: the sum of its batch's contexts (tokens) and the seconds to
// its next step boundary (0 when idle).
int64_t Simulator::batch_context_now(const DecodeNode& d, double& wait_boundary) const {
    if (d.mode == MODE_IDLE) {
        wait_boundary = 0.0;
        return d.sum_ctx;
    }
    const double elapsed = now_ - d.start;
    const double t0 = d.t0, dt = d.dt;
    const int64_t j = d.mode == MODE_STRETCH ? steps_within(t0, dt, elapsed) : 0;
    wait_boundary = std::max(0.0, dbl(j + 1) * t0 + dt * dbl(j + 1) * dbl(j) / 2.0 - elapsed);
    return d.sum_ctx + d.batch_size * std::min(j, d.n);
}

// The request's part of a menu (both tracks): its fields, and its own prefill alone and KV transfer (s) for the
// TTFT of the prefill path.
void Simulator::menu_request_terms(int64_t rid, double& own, double& xfer) {
    menu_request(rid);
    // the prefill it needs: prompt + gen tokens (gen = 0 but for a re-entry after a failure: then the arrival's)
    const int64_t pre = pre_len(rid);
    own = pricer_.prefill_alone(pre, cfg_.prefill_token_budget);
    xfer = (cfg_.transfer_enabled && cfg_.ttft_includes_transfer)
               ? cfg_.transfer_setup_s + dbl(pre * cfg_.kv_bytes_per_token) / cfg_.transfer_bandwidth
               : 0.0;
}

// Rollout mode (Simulator::set_rollout_mode): only what the native base policies read (base_policies.cpp:
// prefill_i, decode_i's batch size, total context and pending admissions, decode_f's TBT SLO, decode_b, the
// request's prompt and gen); the priced rows, waits and utilizations are left as they were.
void Simulator::build_base_menu(int64_t rid) {
    DecisionMenu& m = menu_;
    menu_request(rid);
    for (int64_t i = 0; i < m.P; ++i) {
        const PrefillNode& node = pnodes_[static_cast<size_t>(i)];
        m.prefill_i[2 * i] = node.queued_tokens;
        m.prefill_i[2 * i + 1] = static_cast<int64_t>(node.queue.size());
    }
    const int64_t need = kv_need(rid);
    for (int64_t di = 0; di < m.D; ++di) {
        const DecodeNode& d = dnodes_[static_cast<size_t>(di)];
        double wait_boundary;
        const int64_t sctx = batch_context_now(d, wait_boundary);
        int64_t* di_row = &m.decode_i[static_cast<size_t>(5 * di)];
        di_row[0] = d.batch_size;
        di_row[1] = sctx;
        di_row[2] = static_cast<int64_t>(d.pending.size()) + d.incoming;
        m.decode_f[static_cast<size_t>(4 * di + 2)] = cfg_.tbt_s;
        m.decode_b[static_cast<size_t>(2 * di)] = d.has_defl ? 1 : 0;
        m.decode_b[static_cast<size_t>(2 * di + 1)] = node_refuses(di, need) == REFUSE_NONE ? 1 : 0;
    }
}

void Simulator::build_exact_menu(int64_t rid) {
    if (rollout_mode_) {
        build_base_menu(rid);
        return;
    }
    DecisionMenu& m = menu_;
    const double now = now_;
    const int64_t prompt = pre_len(rid);  // the tokens its prefill builds (the prompt but for a re-entry)
    double own = 0.0, xfer = 0.0;
    menu_request_terms(rid, own, xfer);
    // utilization proxy of every node now: the EWMA decayed over the idle time since its last step
    auto decayed = [now](double ewma, double t) {
        return now <= t ? ewma : ewma * pmath::exp(-(now - t) / UTIL_WINDOW_S);
    };
    for (int64_t i = 0; i < m.P; ++i) {
        const PrefillNode& node = pnodes_[static_cast<size_t>(i)];
        double w = prefill_wait(node);
        m.prefill_i[2 * i] = node.queued_tokens;
        m.prefill_i[2 * i + 1] = static_cast<int64_t>(node.queue.size());
        m.prefill_f[2 * i] = w;
        m.prefill_f[2 * i + 1] = decayed(node.util_ewma, node.util_t);
        m.ttft_p[i] = w + own + xfer;
    }
    const double tbt = cfg_.tbt_s;
    const double budget = cfg_.ls_budget_s;
    const std::vector<MenuTerm>& terms = pricer_.menu_terms_ref(prompt, cfg_.menu, menu_scratch_.terms);
    const int64_t need = kv_need(rid);
    std::vector<double>& firsts = menu_scratch_.firsts;  // reused: no allocation per decision
    std::vector<double>& totals = menu_scratch_.totals;
    std::vector<int64_t>& sizes = menu_scratch_.sizes;
    for (int64_t di = 0; di < m.D; ++di) {
        const DecodeNode& d = dnodes_[static_cast<size_t>(di)];
        const int64_t B = d.batch_size;
        double wait_boundary;
        const int64_t sctx = batch_context_now(d, wait_boundary);
        const double pairs = dbl(sctx + B);
        pricer_.menu_rows(B, pairs, terms, wait_boundary, firsts, totals);
        std::pair<bool, double> ls = pricer_.largest_safe(B, pairs, prompt, budget, cfg_.menu_desc, 0, sizes);
        for (int64_t k = 0; k < m.K; ++k) {
            m.step_s[static_cast<size_t>(di * m.K + k)] = firsts[static_cast<size_t>(k)];
            m.ttft_d[static_cast<size_t>(di * m.K + k)] = totals[static_cast<size_t>(k)];
        }
        m.ls_ok[di] = ls.first ? 1 : 0;
        m.ls_t[di] = ls.first ? wait_boundary + ls.second : std::numeric_limits<double>::infinity();
        m.ls_first[di] = (ls.first && !sizes.empty()) ? sizes[0] : 0;
        int64_t* di_row = &m.decode_i[static_cast<size_t>(5 * di)];
        di_row[0] = B;
        di_row[1] = sctx;
        di_row[2] = static_cast<int64_t>(d.pending.size()) + d.incoming;
        di_row[3] = d.kv_capacity - d.kv_reserved;
        di_row[4] = d.has_defl ? d.defl.prompt - d.defl.done : 0;
        double* df = &m.decode_f[static_cast<size_t>(4 * di)];
        df[0] = 1.0 - dbl(d.kv_reserved) / dbl(d.kv_capacity);
        df[1] = pricer_.step(B, pairs, 0, 0);
        df[2] = tbt;
        df[3] = decayed(d.util_ewma, d.util_t);
        m.decode_b[static_cast<size_t>(2 * di)] = d.has_defl ? 1 : 0;
        m.decode_b[static_cast<size_t>(2 * di + 1)] = node_refuses(di, need) == REFUSE_NONE ? 1 : 0;
    }
}

}  // namespace kairos
