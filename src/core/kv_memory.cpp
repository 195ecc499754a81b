// The simulator's KV-memory rules: routing a prefilled request to the
// decode node with the least reserved KV that fits it, the queue of requests waiting for memory, and the swap
// policy's preemption and swap-in, in the order KvPolicy::fifo names (swap_order: fifo, the default, by arrival:
// the latest-arrived member is preempted, the earliest-arrived swapped request comes back first; lifo: the
// most recently admitted member is preempted, the most recently swapped comes back first). Sizes in tokens,
// bytes in bytes, times in seconds.
#include <algorithm>
#include <cmath>

#include "simulator.hpp"

namespace kairos {

namespace {
double dbl(int64_t v) { return static_cast<double>(v); }
}  // namespace

void Simulator::route_to_decode(int64_t rid) {
    int64_t need = kv_need(rid);
    DecodeNode* best = nullptr;
    for (DecodeNode& d : dnodes_)
        if (d.down == 0 && d.kv_reserved + need <= d.kv_capacity && cfg_.kv.admits_new(d.swapped.size()))  // a down node takes no work (faults)
            if (best == nullptr || d.kv_reserved < best->kv_reserved ||
                (d.kv_reserved == best->kv_reserved && d.idx < best->idx))
                best = &d;
    if (best == nullptr) {
        awaiting_memory_.push_back(rid);
        return;
    }
    DecodeNode& d = *best;
    d.kv_reserved += need;
    R_->d_node[rid] = d.idx;
    int64_t nbytes = pre_len(rid) * cfg_.kv_bytes_per_token;
    R_->kv_moved[rid] = nbytes;
    R_->xfer_start[rid] = now_;
    d.incoming += 1;
    if (!cfg_.transfer_enabled) {
        on_transfer_done(rid);
    } else if (cfg_.transfer_setup_s > 0) {
        push(now_ + cfg_.transfer_setup_s, EV_SETUP_DONE, rid, R_->attempt[rid]);
    } else {
        int64_t pi = R_->p_node[rid];
        links_[static_cast<size_t>(pi)].add(rid, dbl(nbytes), now_);
        schedule_link(pi);
    }
}

void Simulator::retry_memory() {
    while (!awaiting_memory_.empty()) {
        int64_t rid = awaiting_memory_.front();
        int64_t need = kv_need(rid);
        bool any = false;
        for (const DecodeNode& d : dnodes_)
            if (d.down == 0 && d.kv_reserved + need <= d.kv_capacity && cfg_.kv.admits_new(d.swapped.size())) {
                any = true;
                break;
            }
        if (!any) return;
        awaiting_memory_.pop_front();
        route_to_decode(rid);
    }
}

int64_t Simulator::steps_that_fit(const DecodeNode& d, int64_t n_max) const {
    // largest n <= n_max such that n more decode steps of the batch fit in KV memory
    const int64_t b = cfg_.kv.block;
    // the batch's blocks (tokens) after x more steps: from the node's aggregates (DecodeNode::blocks_at, kept by
    // join and leave: O(b) a probe), else by a pass over the batch (blocks over kMaxResidueBlock); integers only,
    // so both give the same value
    auto blocks = [&](int64_t x) { return d.kv_block > 0 ? d.blocks_at(x) * b : d.blocks_tokens(*R_, b, x); };
    const int64_t room = d.kv_capacity - (d.kv_reserved - blocks(0));
    int64_t lo = 0, hi = n_max;  // invariant: lo fits
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;  // lo + hi + 1 > 0: floor
        if (blocks(mid) <= room) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

void Simulator::preempt_until_fits(DecodeNode& d) {
    // swap out batch members (lifo: the most recently admitted; fifo: the latest arrived) until one more step fits
    Requests& R = *R_;
    const int64_t b = cfg_.kv.block;
    while (d.batch_size && steps_that_fit(d, 1) < 1) {
        int64_t r = d.batch_tail;
        if (cfg_.kv.fifo)  // rids are arrival order: the largest rid arrived last
            for (int64_t q = d.batch_head; q >= 0; q = R.batch_next[q]) r = std::max(r, q);
        int64_t c = R.ctx_base[r] + d.steps, rem = R.end_step[r] - d.steps;
        double g = d.worst_gap(R, r);
        d.leave(R, r);
        d.heap_remove(R.end_step[r], r);
        d.kv_reserved -= round_up_blocks(c, b);
        // a fresh member (admitted at this stretch's start: under lifo the tail is fresh whenever any member is)
        // keeps its pending first token / gap (last_tok unchanged)
        auto fr = std::find(d.fresh.begin(), d.fresh.end(), r);
        if (fr != d.fresh.end()) {
            d.fresh.erase(fr);
        } else if (!std::isnan(R.first_token[r])) {
            R.last_tok[r] = now_;
        }
        if (!R.swapped[r]) n_swap_state_ += 1;
        R.swapped[r] = 1;
        R.swap_ctx[r] = c;
        R.swap_rem[r] = rem;
        R.swap_gap[r] = g;
        if (cfg_.kv.fifo)  // kept in arrival order: the front arrived first
            d.swapped.insert(std::upper_bound(d.swapped.begin(), d.swapped.end(), r), r);
        else
            d.swapped.push_back(r);
        c_.n_preemptions += 1;
        c_.swap_bytes += c * static_cast<int64_t>(cfg_.kv_bytes_per_token_per_gpu);  // Python: c * int(x)
    }
}

void Simulator::try_swap_in(DecodeNode& d) {
    // bring swapped requests back (fifo: the earliest arrived first; lifo: the most recently swapped first)
    // while memory leaves room for the batch to grow by one block per request
    const int64_t b = cfg_.kv.block;
    const bool fifo = cfg_.kv.fifo;
    while (!d.swapped.empty()) {
        int64_t r = fifo ? d.swapped.front() : d.swapped.back();
        int64_t c = R_->swap_ctx[r];
        int64_t need = round_up_blocks(c, b);
        // room for its next token and one more block for every other request that will decode here
        int64_t step_need = round_up_blocks(c + 1, b);
        int64_t headroom = b * (d.batch_size + static_cast<int64_t>(d.pending.size()) + d.swapping_in);
        if (d.kv_reserved + step_need + headroom > d.kv_capacity) return;
        if (fifo) d.swapped.pop_front();
        else d.swapped.pop_back();
        d.kv_reserved += need;
        d.swapping_in += 1;
        double nbytes = dbl(c) * cfg_.kv_bytes_per_token_per_gpu;
        c_.swap_bytes += static_cast<int64_t>(nbytes);  // Python's int(): truncation
        push(now_ + nbytes / cfg_.swap_bandwidth, EV_SWAP_IN_DONE, r, d.idx + cfg_.n_decode * R_->attempt[r]);
    }
}

}  // namespace kairos
