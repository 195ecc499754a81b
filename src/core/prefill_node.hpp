// A prefill node: a FIFO queue of prompts, built in steps of at most the token
// budget (chunked prefill across the queue head). Sizes in tokens, times in seconds. The queue terms q_pairs /
// q_kv are path-dependent running sums (they reach policies through prefill_wait), so they are updated in the
// exact order the golden data pins.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

namespace kairos {

struct PrefillItem {
    int64_t rid;
    int64_t rem;   // prompt tokens still to build
    int64_t done;  // prompt tokens built
};

struct StepItem {
    int64_t rid;
    int64_t chunk;   // tokens of this prompt in the step
    int64_t prefix;  // tokens of this prompt built before the step
};

struct PrefillNode {
    int64_t idx = 0;
    std::deque<PrefillItem> queue;
    int64_t queued_tokens = 0;
    double q_pairs = 0.0;  // sum over queued prompts of rem * (done + (rem + 1) / 2): attention work left
    double q_kv = 0.0;     // sum over queued prompts of their full length (KV read by that attention)
    double busy_until = -1.0;  // end of the step in progress, -1 when idle
    bool has_step = false;
    std::vector<StepItem> step;  // the step in progress
    int64_t step_tokens = 0;
    double step_pairs = 0.0;  // attention token pairs of the step in progress
    double step_kv = 0.0;     // KV tokens its attention reads
    double step_start = 0.0;
    double busy_s = 0.0, compute_s = 0.0, flops = 0.0;
    double util_ewma = 0.0, util_t = 0.0;
    // faults (faults.hpp): outages in force (0: up), step-time factor (straggler; 1: nominal), and the version of
    // the step in progress (a failure aborts it: its EV_PREFILL_DONE carries an older version and is stale)
    int64_t down = 0;
    double slow = 1.0;
    int64_t version = 0;

    // append a prompt of p tokens
    void enqueue(int64_t rid, int64_t p);
    // Take request rid (queued, prefill not started) off the queue: the exact reverse of enqueue's running sums.
    // False when rid is not queued here; std::logic_error when its prefill has started.
    bool remove_unstarted(int64_t rid, int64_t p);
    // compose the next step from the queue head (at most `budget` tokens) into `step`; returns false (and
    // clears the step) when the queue is empty. Sets step_tokens/step_pairs/step_kv (kept when the queue is
    // empty, as in Python: they are read only while a step runs); `len(step)` sequences.
    bool compose_step(int64_t budget);
    // the step's chunk of request rid (c tokens) completed: returns the prompt's built tokens if the prompt is
    // now complete (and removed from the queue), else -1
    int64_t complete_chunk(int64_t rid, int64_t c);
    // drop rid's prompt from the queue (a timeout; not while it is in the step in progress): false if not queued
    bool remove(int64_t rid);
    // is rid in the step in progress? Sets *final to whether the step completes its prompt
    bool in_step(int64_t rid, bool* final) const;
};

}  // namespace kairos
