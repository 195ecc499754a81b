// A decode node. Its batch is kept without per-request arrays: every member gains
// one token per step, so a request's context and remaining tokens follow from the node's step counter
// `steps` (ctx = ctx_base[rid] + steps, remaining = end_step[rid] - steps), the next finish is the top of a
// min-heap of (end_step, rid), and a member's worst token gap is a suffix maximum over the node's recorded
// stretches (a monotonic stack). Sizes in tokens, times in seconds.
#pragma once
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "requests.hpp"

namespace kairos {

// what the node is doing
constexpr int MODE_IDLE = 0;
constexpr int MODE_STRETCH = 1;  // decode-only steps t0 + j dt, j = 0..n-1
constexpr int MODE_CHUNK = 2;    // one step carrying a deflected prefill chunk

constexpr int64_t STACK_PRUNE = 1024;  // worst-step stack size past which records no member can query are dropped

struct Deflection {
    int64_t rid = -1;
    int64_t prompt = 0;
    int64_t done = 0;   // prompt tokens built
    int64_t chunk = 0;  // chunk size asked for (0 = LargestSafe)
};

struct DecodeNode {
    int64_t idx = 0;
    int64_t kv_capacity = 0;
    int64_t kv_reserved = 0;
    // the batch, in admission order: an intrusive list over Requests::batch_prev/batch_next
    int64_t batch_head = -1, batch_tail = -1, batch_size = 0;
    int64_t steps = 0;  // decode steps the batch has taken
    std::vector<std::pair<int64_t, int64_t>> heap;  // min-heap of (end_step, rid)
    std::vector<int64_t> fresh;  // admitted at this stretch's start (first decode step)
    int64_t sum_ctx = 0;
    int64_t n_rec = 0;               // stretches recorded so far
    std::vector<int64_t> smax_idx;   // monotonic stack: record index ...
    std::vector<double> smax_val;    // ... and its worst step (s), decreasing: suffix maxima
    std::deque<int64_t> pending;     // KV arrived, waiting for a step boundary
    int64_t incoming = 0;            // transfers in flight to this node
    std::deque<int64_t> swapped;     // swap policy: KV in host memory (fifo: by arrival; lifo: by swap-out)
    int64_t swapping_in = 0;
    bool has_defl = false;
    Deflection defl;
    int mode = MODE_IDLE;
    double start = 0.0, t0 = 0.0, dt = 0.0;
    int64_t n = 0;
    int64_t chunk = 0;  // chunk tokens of the chunk step in progress
    int64_t version = 0;
    double busy_s = 0.0, compute_s = 0.0, flops = 0.0;
    double util_ewma = 0.0, util_t = 0.0;
    // faults (faults.hpp): outages in force (0: up) and the step-time factor (straggler; 1: nominal)
    int64_t down = 0;
    double slow = 1.0;
    int64_t stack_prune = STACK_PRUNE;  // see STACK_PRUNE (tests lower it: Simulator::debug_set_stack_prune)
    // KV blocks of the batch (swap policy; blocks_at): with a member's e = ctx_base + kv_block - 1 = kv_block q + s
    // (floor division, 0 <= s < kv_block), blk_q sums q and blk_res[s] counts the members of each s. Kept by join
    // and leave when kv_block > 0 (the simulator sets it for blocks up to kMaxResidueBlock; 0: not kept).
    int64_t kv_block = 0;
    int64_t blk_q = 0;
    std::vector<int64_t> blk_res;

    // rid joins with ctx cached tokens, rem tokens to decode and a worst gap of `gap` s so far
    void join(Requests& R, int64_t rid, int64_t ctx, int64_t rem, double gap);
    // rid leaves the batch (its heap entry is the caller's business)
    void leave(Requests& R, int64_t rid);
    // worst token gap (s) of batch member rid so far
    double worst_gap(const Requests& R, int64_t rid) const;
    // record a stretch whose longest step took `worst` s
    void record(const Requests& R, double worst);
    // heap helpers (Python heapq order: smallest (end_step, rid) first)
    void heap_push(int64_t e, int64_t rid);
    std::pair<int64_t, int64_t> heap_pop();
    void heap_remove(int64_t e, int64_t rid);
    // sum of ceil((ctx + extra) / block) over the batch, times block (swap policy)
    int64_t blocks_tokens(const Requests& R, int64_t block, int64_t extra) const;
    // blocks_tokens(R, kv_block, extra) / kv_block from the aggregates, in O(kv_block) (kv_block > 0, extra >= 0):
    // sum over members of ceil((ctx + extra) / b) = floor((e + steps + extra) / b) = q + K + [s >= b - J] for
    // steps + extra = b K + J (0 <= J < b), so blk_q + batch_size K + #{s >= b - J}
    int64_t blocks_at(int64_t extra) const;
    // the aggregates of the current members afresh (after the batch was cleared or rebuilt)
    void reset_blocks(int64_t block);
    // a member with this ctx_base joins (sign 1) or leaves (-1) the aggregates (nothing when none are kept)
    void tally_blocks(int64_t ctx_base, int64_t sign);
};

}  // namespace kairos
