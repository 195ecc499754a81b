// The information track: what the simulator SERVES to every policy at a decision (the
// DecisionMenu, hence the DecisionContext, the env observation and the env action mask). Physics never reads it.
//
// Track "exact" (InfoConfig::realistic = false): the true, fresh state and exact predictions (build_menu,
// decision_menu.cpp); nothing here runs and nothing is drawn.
// Track "realistic" (the paper's limitations: a central dispatcher, stale observations, estimator error):
//   - stale node state: the dispatcher's copy of every node (DispatcherView), refreshed from the truth at a
//     decision when now - refreshed_at >= staleness_s (always at the first decision of a run), plus the
//     dispatcher's own decisions since: a prefill-path dispatch adds the prompt to that prefill node's queue in
//     the copy, a deflection marks that decode node busy (deflection in flight, its prompt still to build), a
//     refused deflection marks that node as refusing. Nothing else is extrapolated: queues do not drain,
//     contexts do not grow, the predicted waits are the ones at the refresh instant (plus the added prompts).
//   - noisy predictions: at every decision one factor f = max(MIN_ERROR_FACTOR, 1 + sigma z) per node,
//     z ~ Normal(0, 1), sigma = model_error sqrt(pi / 2) (so E|f - 1| = model_error when the floor does not
//     bind), drawn from the run's noise stream in node order (prefill nodes 0..P-1, then decode nodes
//     0..D-1); none are drawn when model_error = 0. Every prediction about a node is multiplied by its factor:
//     prefill node p: predicted_wait_s and ttft_prefill_s; decode node d: decode_step_s, step_s[d][*],
//     ttft_deflect_s[d][*], largest_safe_ttft_s[d], and the served LargestSafe schedule is priced with the
//     budget test step * f <= beta x TBT SLO (so largest_safe_feasible / _first_chunk are the noisy model's).
//   - admission is checked fresh at apply time (Simulator::apply_deflect, unchanged): a deflection the served
//     view offered (can_deflect true) that the node refuses now falls back to the shortest prefill queue, counts
//     in n_invalid like every refusal, and also in InfoState::n_stale_refusals.
// Times in seconds, sizes in tokens.
#pragma once
#include <cstdint>
#include <vector>

#include "prefill_node.hpp"

namespace kairos {

constexpr double MIN_ERROR_FACTOR = 0.05;  // floor of a prediction's error factor 1 + e

struct InfoConfig {
    bool realistic = false;
    double staleness_s = 0.1;  // refresh period of the dispatcher's copy (s)
    double model_error = 0.1;  // mean absolute relative error of a served prediction (MAPE)
};

// The run's noise stream: xoshiro256** (Blackman & Vigna), its state filled by splitmix64 from one 64-bit seed
// (drawn from the run's np.random.Generator at reset, kairos_gym/sim/simulator.py).
struct NoiseRng {
    uint64_t s[4] = {0, 0, 0, 0};
    void seed(uint64_t x);
    uint64_t next();
    // in (0, 1): the top 53 bits of one draw, plus one half, times 2^-53
    double uniform();
    // standard normal by Box-Muller from two consecutive uniforms (u1 for the radius, u2 for the angle); the
    // second normal of the pair is not kept, so every normal costs exactly two draws
    double normal();
};

// a decode node as the dispatcher copied it at its last refresh (tokens, seconds)
struct DecodeCopy {
    int64_t B = 0, sctx = 0;     // batch size, total context (mid-stretch progress included)
    double wait_boundary = 0.0;  // seconds to the node's next step boundary (0 when idle)
    int64_t pending = 0;         // pending admissions (KV arrived or arriving)
    int64_t slots = 0;           // batch + pending + incoming + swapped + swapping in (the admission's batch test)
    int64_t kv_reserved = 0, kv_capacity = 0;
    int64_t remaining = 0;       // prompt tokens of the deflected prefill still to build
    bool in_flight = false;      // a deflected prefill in flight (copied, or sent by the dispatcher since)
    bool refused = false;        // a deflection the dispatcher sent here since the refresh was refused
    double util = 0.0;           // utilization proxy at the refresh
};

struct DispatcherView {
    bool valid = false;         // false until the first refresh of the run
    double refreshed_at = 0.0;  // s
    std::vector<PrefillNode> p;  // copies of the prefill nodes (their queues grow by the dispatcher's dispatches)
    std::vector<double> p_util;
    std::vector<DecodeCopy> d;
};

// the whole information state of a run (reset with the run, copied by snapshot/restore)
struct InfoState {
    NoiseRng rng;
    DispatcherView view;
    std::vector<double> factors;  // this decision's factors: prefill nodes, then decode nodes (1 on exact)
    int64_t n_refreshes = 0;
    int64_t n_stale_refusals = 0;  // deflections offered by the served view (can_deflect) refused at apply
};

}  // namespace kairos
