// Pull decisions (pull.hpp): the candidate rule, its pull menu and the two answers. Times in seconds, sizes in
// tokens. Only reached with CoreConfig::pull (decision_points: arrival+pull): arrival-only runs never enter here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "simulator.hpp"

namespace kairos {

namespace {

double dbl(int64_t v) { return static_cast<double>(v); }

}  // namespace

bool Simulator::raise_pull(int64_t d) {
    const double now = now_;
    const int64_t budget = cfg_.prefill_token_budget;
    const bool xfer_on = cfg_.transfer_enabled && cfg_.ttft_includes_transfer;
    int64_t best = -1, best_p = -1;
    double best_t = -std::numeric_limits<double>::infinity();
    for (const PrefillNode& node : pnodes_) {
        // the work ahead of each queued prompt, as prefill_wait (decision_menu.cpp) prices a whole queue: the
        // step in progress to its end, then the tokens not in it in steps of the budget, plus their attention
        const double busy = node.busy_until >= 0 ? std::max(0.0, node.busy_until - now) : 0.0;
        int64_t ahead = node.has_step ? -node.step_tokens : 0;
        double pairs = node.has_step ? -node.step_pairs : 0.0, kv = node.has_step ? -node.step_kv : 0.0;
        for (const PrefillItem& it : node.queue) {
            const int64_t rid = it.rid;
            // a request re-entered with tokens already out (faults.cpp) is no candidate: it resumes on the prefill path
            if (it.done == 0 && std::isnan(R_->prefill_start[rid]) && R_->gen[rid] == 0 &&
                node_refuses(d, kv_need(rid)) == REFUSE_NONE) {
                double steps_s = 0.0, attn_s = 0.0;
                if (ahead > 0) {
                    int64_t full = ahead / budget, last = ahead % budget;
                    steps_s = dbl(full) * pricer_.base(budget, 1) + (last ? pricer_.base(last, 1) : 0.0);
                    attn_s = pricer_.attn_time(pairs, kv);
                }
                const int64_t p = wl_->prompt[rid];
                const double xfer =
                    xfer_on ? cfg_.transfer_setup_s + dbl(p * cfg_.kv_bytes_per_token) / cfg_.transfer_bandwidth : 0.0;
                const double t = busy + steps_s + attn_s + pricer_.prefill_alone(p, budget) + xfer;
                if (t > best_t || (t == best_t && rid < best)) {
                    best = rid;
                    best_p = node.idx;
                    best_t = t;
                }
            }
            ahead += it.rem;
            pairs += dbl(it.rem) * (dbl(it.done) + dbl(it.rem + 1) / 2.0);
            kv += dbl(it.done + it.rem);
        }
    }
    if (best < 0) return false;
    pending_rid_ = best;
    pending_kind_ = DECISION_PULL;
    pull_node_ = d;
    c_.n_pull_decisions += 1;
    // the realistic information track: the freed node's signal carries its state (the dispatcher's copy of node d
    // is refreshed with it; information.cpp), and the stay option carries prefill node best_p's served error
    if (cfg_.info.realistic && info_.view.valid) refresh_decode_copy(static_cast<size_t>(d));
    build_menu(best);
    // the pull menu: staying is priced on the candidate's own queue (other prefill nodes are no option: inf), and
    // only the freed node can take it
    DecisionMenu& m = menu_;
    m.kind = DECISION_PULL;
    m.pull_node = d;
    for (int64_t i = 0; i < m.P; ++i)
        m.ttft_p[static_cast<size_t>(i)] =
            i == best_p ? (cfg_.info.realistic ? best_t * info_.factors[static_cast<size_t>(i)] : best_t)
                        : std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < m.D; ++j)
        if (j != d) m.decode_b[static_cast<size_t>(2 * j + 1)] = 0;
    return true;
}

void Simulator::apply_pull_stay(int64_t pn) {
    const int64_t rid = pending_rid_;
    if (pn >= 0 && pn != R_->p_node[rid])
        throw std::invalid_argument("simulator: a pull's prefill path is the candidate's own node (or -1)");
    pending_rid_ = -1;
    pending_kind_ = DECISION_ARRIVAL;
    pull_node_ = -1;
    c_.n_decisions += 1;
    if (!R_->ring()) log_.push_back({rid, LOG_PULL_STAY, pn, 0});
}

bool Simulator::apply_pull_deflect(int64_t d, int64_t chunk) {
    const int64_t rid = pending_rid_;
    const int64_t freed = pull_node_;
    pending_rid_ = -1;
    pending_kind_ = DECISION_ARRIVAL;
    pull_node_ = -1;
    c_.n_decisions += 1;
    if (!R_->ring()) log_.push_back({rid, LOG_PULL_DEFLECT, d, chunk});
    if (d != freed || node_refuses(d, kv_need(rid)) != REFUSE_NONE) {  // refused: it stays where it is
        c_.n_invalid += 1;
        if (cfg_.info.realistic) note_pull(d, rid, R_->p_node[rid], false);
        return false;
    }
    const int64_t pn = R_->p_node[rid];
    if (!pnodes_[static_cast<size_t>(pn)].remove_unstarted(rid, pre_len(rid)))
        throw std::logic_error("pull: the candidate is not queued on its prefill node");
    if (cfg_.info.realistic) note_pull(d, rid, pn, true);
    R_->pulled_from[rid] = pn;
    R_->p_node[rid] = -1;
    c_.n_pulled += 1;
    start_deflection(rid, dnodes_[static_cast<size_t>(d)], chunk);
    return true;
}

}  // namespace kairos
