// The priced menu of one routing decision (Simulator::build_menu, prefill_wait, node_refuses) in flat
// buffers the core rewrites in place at every decision; Python builds the DecisionContext NamedTuples from them
// (kairos_gym/sim/simulator.py). Times in seconds, sizes in tokens. Row-major 2-D buffers.
#pragma once
#include <cstdint>
#include <vector>

namespace kairos {

// why a decode node refuses a deflection (Simulator::node_refuses)
constexpr int REFUSE_NONE = 0;
constexpr int REFUSE_IN_FLIGHT = 1;
constexpr int REFUSE_BATCH_FULL = 2;
constexpr int REFUSE_MEMORY = 3;
constexpr int REFUSE_DOWN = 4;  // the node is down (faults.hpp)

struct DecisionMenu {
    int64_t P = 0, D = 0, K = 0;  // prefill nodes, decode nodes, chunk-menu sizes
    double now = 0.0;
    int64_t rid = -1;
    double arrival = 0.0;
    int64_t prompt = 0;
    int64_t output = -1;  // -1 unless the simulator runs with oracle=True
    int64_t kind = 0;       // DECISION_ARRIVAL (0), DECISION_PULL (1) or DECISION_REENTRY (2, pull.hpp)
    int64_t gen = 0;        // tokens the request already emitted (a re-entry after a failure; else 0): the
                            // menu prices its prefill of prompt + gen tokens (faults.hpp, reentry.cpp)
    int64_t pull_node = -1; // at a pull: the decode node whose deflection slot freed (else -1)
    std::vector<int64_t> prefill_i;  // [P, 2]: queued_tokens, queued_requests
    std::vector<double> prefill_f;   // [P, 2]: predicted_wait_s, utilization
    std::vector<double> ttft_p;      // [P]
    std::vector<int64_t> decode_i;   // [D, 5]: batch_size, total_context, pending_admissions, free_kv_tokens,
                                     //         deflection_remaining_tokens
    std::vector<double> decode_f;    // [D, 4]: free_kv_fraction, decode_step_s, tbt_slo_s, utilization
    std::vector<uint8_t> decode_b;   // [D, 2]: deflection_in_flight, can_deflect (0/1, shown as bool)
    std::vector<double> step_s;      // [D, K]
    std::vector<double> ttft_d;      // [D, K]
    std::vector<uint8_t> ls_ok;      // [D]
    std::vector<double> ls_t;        // [D]
    std::vector<int64_t> ls_first;   // [D]
    std::vector<uint8_t> up_p, up_d;  // [P], [D]: the node is up (faults.hpp; all 1 in a run without faults)

    void resize(int64_t p, int64_t d, int64_t k) {
        P = p;
        D = d;
        K = k;
        prefill_i.assign(static_cast<size_t>(2 * p), 0);
        prefill_f.assign(static_cast<size_t>(2 * p), 0.0);
        ttft_p.assign(static_cast<size_t>(p), 0.0);
        decode_i.assign(static_cast<size_t>(5 * d), 0);
        decode_f.assign(static_cast<size_t>(4 * d), 0.0);
        decode_b.assign(static_cast<size_t>(2 * d), 0);
        step_s.assign(static_cast<size_t>(d * k), 0.0);
        ttft_d.assign(static_cast<size_t>(d * k), 0.0);
        ls_ok.assign(static_cast<size_t>(d), 0);
        ls_t.assign(static_cast<size_t>(d), 0.0);
        ls_first.assign(static_cast<size_t>(d), 0);
        up_p.assign(static_cast<size_t>(p), 1);
        up_d.assign(static_cast<size_t>(d), 1);
    }
};

}  // namespace kairos
