// Re-entry decisions (faults.reentry; docs/reliability.md, "Faults"): what happens to a request a failure sends
// back (Simulator::reenter, faults.cpp). Times in seconds, sizes in tokens.
//
// `reentry: policy` (CoreConfig::reentry_policy): the victims of one failure queue up, in arrival (rid) order, and
// each becomes a decision of its own kind (DECISION_REENTRY), one at a time, at the failure's time and before any
// later event (next_decision serves this queue first). Its menu is an arrival's, priced for the prefill it now
// needs, prompt + gen tokens (the menu's `gen`), and answered like an arrival's: the prefill path (a named up node,
// or the shortest up queue; held when no prefill node is up) or a deflection to an up decode node with a chunk size
// (same admission test; a refusal takes the prefill path, counted). A deflected re-entry builds its prompt + gen
// tokens' KV as chunks on the decode node (no KV transfer) and then decodes its output - gen tokens; with gen > 0
// it is admitted like a re-entry on the prefill path (advance_deflection: pending first, so the gap since its last
// token spans the outage). `reentry: prefill`: each victim takes the shortest up prefill queue by rule (the
// behaviour before re-entry decisions, bit for bit).
//
// Timeouts (overload.timeout_s) with faults: a victim that had already timed out (flagged in a step or a transfer
// a failure cut short) is removed there and then, never re-entered (drop_if_timed_out; its attempt moves on so the
// events of the cut attempt are stale); a held request times out where it waits (overload.cpp).
#include <stdexcept>

#include "simulator.hpp"

namespace kairos {

void Simulator::send_back(int64_t rid) {
    if (cfg_.reentry_policy) {
        reentry_q_.push_back(rid);
        return;
    }
    dispatch_prefill(rid);
}

bool Simulator::raise_reentry() {
    const int64_t rid = reentry_q_.front();
    reentry_q_.pop_front();
    if (is_timed_out(rid)) throw std::logic_error("simulator: a timed-out request at a re-entry decision");
    pending_rid_ = rid;
    pending_kind_ = DECISION_REENTRY;
    pull_node_ = -1;
    fc_.n_reentry_decisions += 1;
    build_menu(rid);  // an arrival's menu, priced for prompt + gen tokens (decision_menu.cpp, information.cpp)
    menu_.kind = DECISION_REENTRY;
    return true;
}

bool Simulator::drop_if_timed_out(int64_t rid) {
    if (!is_timed_out(rid)) return false;
    R_->attempt[rid] += 1;  // the cut attempt's events (transfer set-up, swap-in) are stale
    fc_.n_dropped_timed_out += 1;
    retire(rid);
    return true;
}

bool Simulator::all_settled() const {
    if (c_.n_finished + c_.n_rejected + c_.n_timed_out != n_) return false;
    for (const FairShareLink& l : links_)
        if (l.size() != 0) return false;  // a timed-out request's transfer stalled on a cut link: KV still reserved
    return true;
}

}  // namespace kairos
