// KV-cache memory accounting of the decode nodes (KV totals, a request's need, the swap policy's block
// arithmetic). Sizes in tokens. Under "reserve" a request reserves prompt + output tokens up front; under
// "swap" caches occupy whole blocks of `block` tokens and grow block by block.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kairos {

// ceil(a / b) * b for a >= 0, b >= 1 (Python's -(-a // b) * b)
inline int64_t round_up_blocks(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (q * b < a) ++q;  // a >= 0: truncation is floor
    return q * b;
}

// Largest block (tokens) for which a decode node keeps its batch's KV-block aggregates (DecodeNode blocks_at: a
// probe costs O(block), against a pass over the batch without them); vLLM's blocks are 16 to 128 tokens.
constexpr int64_t kMaxResidueBlock = 256;

struct KvPolicy {
    bool swap = false;   // memory_policy == "swap"
    int64_t block = 16;  // kv_block_tokens
    // swap_order (swap policy): true "fifo" (default; vLLM FCFS: the latest-arrived batch member is preempted
    // first, the earliest-arrived swapped request comes back first), false "lifo" (the most recently admitted
    // member is preempted, the most recently swapped comes back first)
    bool fifo = true;

    // does a decode node with `n_swapped` requests in host memory take new KV reservations (routing,
    // deflection)? Under swap + fifo not while any request waits to swap back (vLLM FCFS admits no new
    // prefill while its swapped queue is not empty): the newcomers would otherwise take the memory the
    // swapped requests wait for, so the oldest could starve.
    bool admits_new(size_t n_swapped) const { return !(swap && fifo && n_swapped); }

    // KV tokens that `tokens` cached tokens occupy (whole blocks under swap)
    int64_t total(int64_t tokens) const { return swap ? round_up_blocks(tokens, block) : tokens; }
    // KV tokens a request reserves when it is routed or deflected to a decode node
    int64_t need(int64_t prompt, int64_t output) const {
        return swap ? round_up_blocks(prompt, block) : prompt + output;
    }
    // tokens a request frees when it finishes with `ctx` cached tokens
    int64_t release(int64_t ctx, int64_t prompt, int64_t output) const {
        return swap ? round_up_blocks(ctx, block) : prompt + output;
    }
};

}  // namespace kairos
