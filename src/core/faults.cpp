// Fault injection (faults.hpp; docs/reliability.md, "Faults"): nodes going down and up, stragglers, degraded and
// cut links. Times in seconds, sizes in tokens. Nothing here runs in a scenario without faults.
//
// A request a failure touches re-enters the prefill path (Simulator::reenter) with the tokens it already emitted
// (`gen`, vLLM's recompute: its re-prefill builds prompt + gen tokens) and its worst gap so far; it keeps its
// arrival time (TTFT) and its first token if it had one. Victims go back in arrival (rid) order (send_back,
// reentry.cpp): each offered to the policy as a re-entry decision (faults.reentry: policy), or (reentry: prefill)
// sent to the up prefill node with the fewest queued tokens (ties: the lowest index), or held until one is up.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "simulator.hpp"

namespace kairos {

// The requests a fault's scan visits, in id order: the arrived ones (a request not arrived yet holds nothing).
// In streaming mode (a ring of per-request slots) only the last `slots` arrivals can still hold their slot, and
// one whose slot a later request took has retired (the slot's data is the later request's): skipped.
static int64_t scan_begin(const Requests& R, int64_t arrived) {
    return R.ring() ? std::max<int64_t>(0, arrived - static_cast<int64_t>(R.path.size())) : 0;
}
static bool in_scan(const Requests& R, int64_t r) { return !R.ring() || R.occupant[r] == r; }

namespace {
double dbl(int64_t v) { return static_cast<double>(v); }

struct Victim {
    int64_t rid, gen;
    double gap;
    bool operator<(const Victim& o) const { return rid < o.rid; }
};
}  // namespace

void Simulator::set_faults(std::vector<FaultEvent> faults) {
    if (!R_) throw std::logic_error("simulator: set_faults before any reset");
    if (faults_set_) throw std::logic_error("simulator: set_faults twice after one reset");
    if (now_ != 0.0 || pending_rid_ >= 0 || c_.n_decisions != 0 || !trace.empty())
        throw std::logic_error("simulator: set_faults after the run started (call it right after reset)");
    if (static_cast<int64_t>(faults.size()) > MAX_FAULT_EVENTS)
        throw std::length_error("simulator: more fault events than MAX_FAULT_EVENTS");
    double prev = 0.0;
    for (const FaultEvent& f : faults) {
        if (!(f.t >= prev && std::isfinite(f.t)))
            throw std::invalid_argument("simulator: fault times must be finite, >= 0 and sorted");
        prev = f.t;
        if (f.kind < 0 || f.kind >= F_KIND_COUNT) throw std::invalid_argument("simulator: unknown fault kind");
        const bool decode = f.kind == F_DECODE_DOWN || f.kind == F_DECODE_UP || f.kind == F_DECODE_SLOW ||
                            f.kind == F_DECODE_NORMAL;
        if (f.node < 0 || f.node >= (decode ? cfg_.n_decode : cfg_.n_prefill))
            throw std::invalid_argument("simulator: a fault's node index is out of range");
        if ((f.kind == F_PREFILL_SLOW || f.kind == F_DECODE_SLOW) && !(f.factor >= 1.0 && std::isfinite(f.factor)))
            throw std::invalid_argument("simulator: a slow factor must be finite and >= 1");
        if (f.kind == F_LINK_DEGRADED && !(f.factor > 0.0 && f.factor <= 1.0))
            throw std::invalid_argument("simulator: a link factor must be in (0, 1]");
    }
    faults_ = std::move(faults);
    faults_set_ = true;
    for (size_t i = 0; i < faults_.size(); ++i) {
        push(faults_[i].t, EV_FAULT, static_cast<int64_t>(i), 0);
        faults_queued_ += 1;
    }
}

void Simulator::on_fault(const FaultEvent& f) {
    fc_.n_events += 1;
    const size_t i = static_cast<size_t>(f.node);
    switch (f.kind) {
        case F_PREFILL_DOWN: fail_prefill(pnodes_[i]); break;
        case F_PREFILL_UP: recover_prefill(pnodes_[i]); break;
        case F_DECODE_DOWN: fail_decode(dnodes_[i]); break;
        case F_DECODE_UP: recover_decode(dnodes_[i]); break;
        case F_PREFILL_SLOW: pnodes_[i].slow = f.factor; break;  // from its next step on
        case F_PREFILL_NORMAL: pnodes_[i].slow = 1.0; break;
        case F_DECODE_SLOW: set_slow_decode(dnodes_[i], f.factor); break;
        case F_DECODE_NORMAL: set_slow_decode(dnodes_[i], 1.0); break;
        case F_LINK_DEGRADED:
            links_[i].set_rate(now_, cfg_.transfer_bandwidth * f.factor, false);
            schedule_link(f.node);
            break;
        case F_LINK_CUT:  // the version moved: the pending completion is stale, none is scheduled until restored
            links_[i].set_rate(now_, links_[i].bandwidth(), true);
            break;
        case F_LINK_RESTORED:
            links_[i].set_rate(now_, cfg_.transfer_bandwidth, false);
            schedule_link(f.node);
            break;
        default: throw std::logic_error("simulator: unknown fault kind");
    }
}

void Simulator::set_slow_decode(DecodeNode& d, double factor) {
    d.slow = factor;
    // a stretch is cut at the step in progress (wake_decode), so the new factor prices every step after it; a
    // chunk step in progress keeps its duration
    if (d.mode == MODE_STRETCH) wake_decode(d);
}

int64_t Simulator::emitted_waiting(int64_t rid) const {
    if (R_->gen[rid] > 0) return R_->gen[rid];
    return std::isnan(R_->first_token[rid]) ? 0 : 1;  // ttft_includes_transfer: false gives the first token early
}

void Simulator::reenter(int64_t rid, int64_t gen, double gap) {
    Requests& R = *R_;
    R.attempt[rid] += 1;  // events of the earlier attempt (transfer set-up, swap-in) are stale now
    R.reentries[rid] += 1;
    R.gen[rid] = gen;
    R.carry_gap[rid] = gap;
    R.path[rid] = PATH_PREFILL;
    R.p_node[rid] = -1;
    R.d_node[rid] = -1;
    R.prefill_start[rid] = NaN;  // the per-request records describe the last attempt
    R.prefill_end[rid] = NaN;
    R.xfer_start[rid] = NaN;
    R.xfer_end[rid] = NaN;
    R.kv_moved[rid] = 0;
    R.has_chunks[rid] = 0;
    R.chunks[rid].clear();
}

void Simulator::dispatch_prefill(int64_t rid) {
    const int64_t pn = shortest_queue();
    if (pn < 0) {  // no prefill node up: held, in order, until one comes up (recover_prefill)
        R_->path[rid] = PATH_PREFILL;
        R_->p_node[rid] = -1;
        held_.push_back(rid);
        fc_.n_held += 1;
        return;
    }
    enqueue_prefill(rid, pnodes_[static_cast<size_t>(pn)]);
}

void Simulator::fail_prefill(PrefillNode& node) {
    if (++node.down > 1) return;  // already down (overlapping outages nest)
    Requests& R = *R_;
    std::vector<Victim> v;
    if (node.busy_until >= 0) {  // the step in progress is aborted: its partial prefill is lost
        node.busy_s -= node.busy_until - now_;  // the rest of the step never ran
        for (const StepItem& s : node.step) R.exec_s[s.rid] += now_ - node.step_start;
        node.version += 1;
        if (record_timeline)  // the aborted step's record ends at the failure
            for (auto it = timeline.rbegin(); it != timeline.rend(); ++it)
                if (!it->decode && it->node == node.idx) {
                    it->end = now_;
                    break;
                }
    }
    for (const PrefillItem& it : node.queue)  // (one timed out in the aborted step is removed now: reentry.cpp)
        if (!drop_if_timed_out(it.rid)) v.push_back({it.rid, R.gen[it.rid], R.carry_gap[it.rid]});
    fc_.n_requeued += static_cast<int64_t>(v.size());
    node.queue.clear();
    node.queued_tokens = 0;
    node.q_pairs = 0.0;
    node.q_kv = 0.0;
    node.step.clear();
    node.has_step = false;
    node.busy_until = -1.0;
    // KV built here that has not reached a decode node is lost with the node: transfers in set-up or on its link
    // (their decode-side reservation is released) and requests awaiting decode memory
    FairShareLink& link = links_[static_cast<size_t>(node.idx)];
    const size_t n_queued = v.size();
    for (int64_t r = scan_begin(R, c_.n_arrived); r < c_.n_arrived; ++r) {
        if (!in_scan(R, r)) continue;
        if (R.p_node[r] != node.idx || R.path[r] != PATH_PREFILL) continue;
        if (std::isnan(R.xfer_start[r]) || !std::isnan(R.xfer_end[r])) continue;
        DecodeNode& d = dnodes_[static_cast<size_t>(R.d_node[r])];
        d.kv_reserved -= kv_need(r);
        d.incoming -= 1;
        if (link.contains(r)) link.remove(r, now_);
        if (!drop_if_timed_out(r)) v.push_back({r, emitted_waiting(r), R.carry_gap[r]});
    }
    for (auto it = awaiting_memory_.begin(); it != awaiting_memory_.end();) {
        if (R.p_node[*it] == node.idx) {
            v.push_back({*it, emitted_waiting(*it), R.carry_gap[*it]});
            it = awaiting_memory_.erase(it);
        } else {
            ++it;
        }
    }
    fc_.n_transfers_lost += static_cast<int64_t>(v.size() - n_queued);
    std::sort(v.begin(), v.end());
    for (const Victim& x : v) reenter(x.rid, x.gen, x.gap);
    for (const Victim& x : v) send_back(x.rid);  // reentry.cpp: a decision each, or the shortest up queue
    schedule_link(node.idx);
    retry_memory();  // decode memory the lost transfers held is free
}

void Simulator::recover_prefill(PrefillNode& node) {
    if (node.down < 1) throw std::logic_error("simulator: a prefill node came up that was not down");
    if (--node.down > 0) return;
    std::deque<int64_t> h;
    h.swap(held_);
    for (int64_t r : h) dispatch_prefill(r);  // in the order they were held
}

void Simulator::fail_decode(DecodeNode& d) {
    if (++d.down > 1) return;
    Requests& R = *R_;
    // the stretch in progress: its completed steps emitted their tokens (accounted as a shortened stretch)
    double t_last = d.start;  // when the batch's last tokens came out
    if (d.mode == MODE_STRETCH) {
        const int64_t j = std::min(steps_within(d.t0, d.dt, now_ - d.start), d.n);
        t_last = d.start + dbl(j) * d.t0 + d.dt * dbl(j) * dbl(j - 1) / 2.0;
        if (j >= 1) {
            d.n = j;
            account_stretch(d, t_last);  // may finish requests (their KV is released as usual)
        }
    }
    std::vector<Victim> v;
    for (int64_t r = d.batch_head; r >= 0;) {
        const int64_t next = R.batch_next[r];
        const int64_t gen = wl_->output[r] - (R.end_step[r] - d.steps);
        const double gap = d.worst_gap(R, r);
        const bool fresh = std::find(d.fresh.begin(), d.fresh.end(), r) != d.fresh.end();
        if (!fresh && gen >= 1) R.last_tok[r] = t_last;  // its next token's gap spans the outage
        d.leave(R, r);
        v.push_back({r, gen, gap});
        r = next;
    }
    if (d.has_defl && !drop_if_timed_out(d.defl.rid))  // its prefill is lost (timed out in its chunk step: removed)
        v.push_back({d.defl.rid, R.gen[d.defl.rid], R.carry_gap[d.defl.rid]});
    auto swapped_out = [&](int64_t r) {
        R.swapped[r] = 0;
        n_swap_state_ -= 1;
        v.push_back({r, wl_->output[r] - R.swap_rem[r], R.swap_gap[r]});
    };
    for (int64_t r : d.pending) {
        if (n_swap_state_ && R.swapped[r]) swapped_out(r);
        else v.push_back({r, emitted_waiting(r), R.carry_gap[r]});
    }
    for (int64_t r : d.swapped) swapped_out(r);
    std::vector<int64_t> moving;  // transfers to this node: the KV is still on its prefill node, sent again
    for (int64_t r = scan_begin(R, c_.n_arrived); r < c_.n_arrived; ++r) {
        if (!in_scan(R, r)) continue;
        if (n_swap_state_ && R.swapped[r] && R.d_node[r] == d.idx) swapped_out(r);  // swapping in
        else if (R.path[r] == PATH_PREFILL && R.d_node[r] == d.idx && !std::isnan(R.xfer_start[r]) &&
                 std::isnan(R.xfer_end[r]))
            moving.push_back(r);
    }
    d.heap.clear();
    d.fresh.clear();
    d.pending.clear();
    d.swapped.clear();
    d.batch_head = d.batch_tail = -1;
    d.batch_size = 0;
    d.sum_ctx = 0;
    d.reset_blocks(d.kv_block);
    d.swapping_in = 0;
    d.incoming = 0;
    d.has_defl = false;
    d.defl = Deflection{};
    d.mode = MODE_IDLE;
    d.n = 0;
    d.chunk = 0;
    d.kv_reserved = 0;  // its KV is lost
    d.version += 1;     // the boundary event in flight is stale
    fc_.n_decode_reentries += static_cast<int64_t>(v.size());
    std::sort(v.begin(), v.end());
    for (const Victim& x : v) reenter(x.rid, x.gen, x.gap);
    for (const Victim& x : v) send_back(x.rid);  // reentry.cpp: a decision each, or the shortest up queue
    std::vector<int64_t> links;
    for (int64_t r : moving) {
        const int64_t pi = R.p_node[r];
        FairShareLink& link = links_[static_cast<size_t>(pi)];
        if (link.contains(r)) {
            link.remove(r, now_);
            links.push_back(pi);
        }
        R.attempt[r] += 1;  // its set-up event is stale
        R.xfer_start[r] = NaN;
        R.d_node[r] = -1;
        R.kv_moved[r] = 0;
        if (!is_timed_out(r)) fc_.n_rerouted += 1;
    }
    for (int64_t r : moving)  // another up node with room, or awaiting memory (timed out in transfer: removed now)
        if (!drop_if_timed_out(r)) route_to_decode(r);
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
    for (int64_t pi : links) schedule_link(pi);
}

void Simulator::recover_decode(DecodeNode& d) {
    if (d.down < 1) throw std::logic_error("simulator: a decode node came up that was not down");
    if (--d.down > 0) return;
    retry_memory();  // requests awaiting decode memory may fit on it now
}

}  // namespace kairos
