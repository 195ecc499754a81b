#include "decode_node.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "kv_memory.hpp"

namespace kairos {

using Entry = std::pair<int64_t, int64_t>;

void DecodeNode::heap_push(int64_t e, int64_t rid) {
    heap.emplace_back(e, rid);
    std::push_heap(heap.begin(), heap.end(), std::greater<Entry>());
}

Entry DecodeNode::heap_pop() {
    std::pop_heap(heap.begin(), heap.end(), std::greater<Entry>());
    Entry top = heap.back();
    heap.pop_back();
    return top;
}

void DecodeNode::heap_remove(int64_t e, int64_t rid) {
    auto it = std::find(heap.begin(), heap.end(), Entry(e, rid));
    if (it == heap.end()) throw std::logic_error("decode node: heap entry not found");
    heap.erase(it);
    std::make_heap(heap.begin(), heap.end(), std::greater<Entry>());
}

namespace {
// floor(a / b) and a - b floor(a / b) for b >= 1 (a may be negative: a member's ctx_base is ctx - steps)
inline void floor_divmod(int64_t a, int64_t b, int64_t& q, int64_t& s) {
    q = a / b;
    s = a - q * b;
    if (s < 0) {
        --q;
        s += b;
    }
}
}  // namespace

int64_t DecodeNode::blocks_at(int64_t extra) const {
    const int64_t b = kv_block, y = steps + extra;  // y >= 0
    const int64_t K = y / b, J = y % b;
    int64_t over = 0;
    if (J > 0)
        for (int64_t t = b - J; t < b; ++t) over += blk_res[static_cast<size_t>(t)];
    return blk_q + batch_size * K + over;
}

void DecodeNode::tally_blocks(int64_t ctx_base, int64_t sign) {
    if (kv_block <= 0) return;
    int64_t q, s;
    floor_divmod(ctx_base + kv_block - 1, kv_block, q, s);
    blk_q += sign * q;
    blk_res[static_cast<size_t>(s)] += sign;
}

void DecodeNode::reset_blocks(int64_t block) {
    kv_block = block;
    blk_q = 0;
    blk_res.assign(static_cast<size_t>(block > 0 ? block : 0), 0);
}

void DecodeNode::join(Requests& R, int64_t rid, int64_t ctx, int64_t rem, double gap) {
    // append to the batch list
    R.batch_prev[rid] = batch_tail;
    R.batch_next[rid] = -1;
    if (batch_tail >= 0) R.batch_next[batch_tail] = rid; else batch_head = rid;
    batch_tail = rid;
    ++batch_size;
    R.ctx_base[rid] = ctx - steps;
    tally_blocks(R.ctx_base[rid], 1);
    int64_t e = steps + rem;
    R.end_step[rid] = e;
    heap_push(e, rid);
    R.gap_own[rid] = gap;
    R.from_rec[rid] = n_rec;
    sum_ctx += ctx;
}

void DecodeNode::leave(Requests& R, int64_t rid) {
    int64_t p = R.batch_prev[rid], q = R.batch_next[rid];
    if (p >= 0) R.batch_next[p] = q; else batch_head = q;
    if (q >= 0) R.batch_prev[q] = p; else batch_tail = p;
    R.batch_prev[rid] = R.batch_next[rid] = -1;
    --batch_size;
    sum_ctx -= R.ctx_base[rid] + steps;
    tally_blocks(R.ctx_base[rid], -1);
}

double DecodeNode::worst_gap(const Requests& R, int64_t rid) const {
    double own = R.gap_own[rid];
    auto it = std::lower_bound(smax_idx.begin(), smax_idx.end(), R.from_rec[rid]);
    if (it != smax_idx.end()) {
        double v = smax_val[static_cast<size_t>(it - smax_idx.begin())];
        return v > own ? v : own;
    }
    return own;
}

void DecodeNode::record(const Requests& R, double worst) {
    while (!smax_val.empty() && smax_val.back() <= worst) {
        smax_val.pop_back();
        smax_idx.pop_back();
    }
    smax_idx.push_back(n_rec);
    smax_val.push_back(worst);
    ++n_rec;
    if (static_cast<int64_t>(smax_idx.size()) >= stack_prune && n_rec % stack_prune == 0 && batch_size) {
        // records older than every member's join are never queried again: drop them
        int64_t lo = R.from_rec[batch_head];
        for (int64_t r = batch_head; r >= 0; r = R.batch_next[r]) lo = std::min(lo, R.from_rec[r]);
        auto k = std::lower_bound(smax_idx.begin(), smax_idx.end(), lo) - smax_idx.begin();
        smax_idx.erase(smax_idx.begin(), smax_idx.begin() + k);
        smax_val.erase(smax_val.begin(), smax_val.begin() + k);
    }
}

int64_t DecodeNode::blocks_tokens(const Requests& R, int64_t block, int64_t extra) const {
    int64_t blocks = 0;
    for (int64_t r = batch_head; r >= 0; r = R.batch_next[r]) blocks += round_up_blocks(R.ctx_base[r] + steps + extra, block) / block;
    return blocks * block;
}

}  // namespace kairos
