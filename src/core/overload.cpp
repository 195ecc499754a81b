// Overload control (scenario section `overload`, all off by default): admission control at
// arrival and per-request timeouts. Times in seconds, sizes in tokens.
//
// Admission: an arrival is rejected (path REJECTED, counted in n_rejected_admission and n_rejected, never asked
// to the policy) when `admit_max_waiting` admitted requests already wait for their first token, or when the
// best predicted prefill-path TTFT (the menu's ttft_prefill_s: queue wait + prefill alone + transfer, the
// smallest over the prefill nodes) exceeds `admit_max_ttft_s`.
//
// Timeout: at arrival + timeout_s a request without a first token times out (counted in n_timed_out, stops
// waiting; never gets a first token or a finish time) unless the step that makes its first token is already
// running (a GPU step is not interrupted: that request completes, its TTFT exceeds timeout_s by at most the
// step). Where it is then:
// - in a prefill queue: removed now (partial prefill work is lost); in the prefill step in progress: removed
//   when the step ends (its prefilled KV is dropped, never transferred);
// - waiting for decode memory: removed now;
// - KV transfer in flight: the transfer finishes, then the KV reservation on the decode node is released;
// - KV arrived, waiting for a decode step (pending): removed now, its reservation released;
// - a deflection not on its last chunk: the chunk step in progress ends, then the deflection is cancelled and
//   its reservation released (at once when no chunk step runs).
// - faults: held while no prefill node is up: removed now (from the held queue); a victim of a failure that had
//   already timed out (flagged above, its step or transfer cut short by the failure) is removed by the failure
//   instead of re-entering (reentry.cpp drop_if_timed_out). A request with a first token never times out, before
//   or after a failure (it keeps its first token when it re-enters).
// Every release is followed by a retry of the requests waiting for memory, so KV is conserved: at the end no
// node holds a reservation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "simulator.hpp"

namespace kairos {

double Simulator::predicted_prefill_ttft(int64_t rid) {
    const int64_t prompt = wl_->prompt[rid];
    double own = pricer_.prefill_alone(prompt, cfg_.prefill_token_budget);
    double xfer = (cfg_.transfer_enabled && cfg_.ttft_includes_transfer)
                      ? cfg_.transfer_setup_s +
                            static_cast<double>(prompt * cfg_.kv_bytes_per_token) / cfg_.transfer_bandwidth
                      : 0.0;
    double best = std::numeric_limits<double>::infinity();
    for (const PrefillNode& node : pnodes_) best = std::min(best, prefill_wait(node) + own + xfer);
    return best;
}

bool Simulator::admission_refuses(int64_t rid) {
    if (cfg_.admit_max_waiting >= 0 && c_.waiting >= cfg_.admit_max_waiting) return true;
    if (cfg_.admit_max_ttft_s >= 0 && predicted_prefill_ttft(rid) > cfg_.admit_max_ttft_s) return true;
    return false;
}

void Simulator::release_reservation(int64_t rid, DecodeNode& d) {
    d.kv_reserved -= kv_need(rid);
    if (d.kv_reserved < 0) throw std::logic_error("simulator: a timeout released more KV than was reserved");
}

void Simulator::on_timeout(int64_t rid) {
    Requests& R = *R_;
    if (R.ring() && R.occupant[rid] != rid) return;  // streaming: retired, its slot taken by a later request
    if (!std::isnan(R.first_token[rid]) || is_timed_out(rid)) return;  // served in time (or already out)
    const int64_t p = wl_->prompt[rid] + R.gen[rid], o = wl_->output[rid];  // its prefill: prompt + gen (faults)
    if (R.path[rid] == PATH_PREFILL && R.p_node[rid] < 0 && std::isnan(R.prefill_end[rid])) {
        // faults: held while no prefill node is up (or waiting for its re-entry decision, which no event
        // precedes): removed now
        auto it = std::find(held_.begin(), held_.end(), rid);
        if (it != held_.end()) {
            held_.erase(it);
        } else {
            auto q = std::find(reentry_q_.begin(), reentry_q_.end(), rid);
            if (q == reentry_q_.end()) throw std::logic_error("simulator: a timed-out request is lost (no node)");
            reentry_q_.erase(q);
        }
        R.timed_out[rid] = now_;
        c_.n_timed_out += 1;
        if (rid >= cfg_.score_from) c_.lost_scored += 1;
        c_.waiting -= 1;
        retire(rid);
        return;
    }
    // 1. is the step that makes its first token running? Then it is served, late; nothing changes.
    bool remove_now = false;  // false: flagged, removed at the end of the step it is in
    DecodeNode* dn = R.d_node[rid] >= 0 ? &dnodes_[static_cast<size_t>(R.d_node[rid])] : nullptr;
    if (R.path[rid] == PATH_DEFLECT) {
        DecodeNode& d = *dn;
        if (!d.has_defl || d.defl.rid != rid) throw std::logic_error("simulator: a deflection without a first token is lost");
        if (d.mode == MODE_CHUNK && d.defl.done + d.chunk >= p) return;  // its last chunk step runs
        remove_now = d.mode != MODE_CHUNK;
    } else if (R.path[rid] == PATH_PREFILL) {
        if (std::isnan(R.prefill_end[rid])) {
            PrefillNode& node = pnodes_[static_cast<size_t>(R.p_node[rid])];
            bool final = false;
            if (node.in_step(rid, &final)) {
                if (final && (o <= 1 || !cfg_.ttft_includes_transfer)) return;  // this step makes its first token
            } else {
                remove_now = true;
            }
        } else if (dn == nullptr) {
            remove_now = true;  // waiting for decode memory
        } else if (std::isnan(R.xfer_end[rid])) {
            remove_now = false;  // KV transfer in flight: released when it ends
        } else {
            auto it = std::find(dn->pending.begin(), dn->pending.end(), rid);
            if (it == dn->pending.end()) return;  // in the batch: its first decode step runs
            remove_now = true;
        }
    } else {
        throw std::logic_error("simulator: a timeout of a request never routed");
    }
    // 2. it times out now
    R.timed_out[rid] = now_;
    c_.n_timed_out += 1;
        if (rid >= cfg_.score_from) c_.lost_scored += 1;
    c_.waiting -= 1;  // the area is integrated up to now: it waited until now
    if (!remove_now) return;
    retire(rid);  // removed now: its fields are final (only its KV reservation is left to return, below)
    if (R.path[rid] == PATH_DEFLECT) {
        dn->has_defl = false;
        dn->defl = Deflection{};
        release_reservation(rid, *dn);
    } else if (std::isnan(R.prefill_end[rid])) {
        if (!pnodes_[static_cast<size_t>(R.p_node[rid])].remove(rid))
            throw std::logic_error("simulator: a timed-out prompt is not queued");
        return;
    } else if (dn == nullptr) {
        auto it = std::find(awaiting_memory_.begin(), awaiting_memory_.end(), rid);
        if (it == awaiting_memory_.end()) throw std::logic_error("simulator: a timed-out request is lost");
        awaiting_memory_.erase(it);  // the requests behind it may fit now: retried below
    } else {
        dn->pending.erase(std::find(dn->pending.begin(), dn->pending.end(), rid));
        release_reservation(rid, *dn);
    }
    retry_memory();
}

}  // namespace kairos
