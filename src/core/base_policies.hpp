// Base policies inside the core: the rules the rollout Oracle continues with, decided
// from the simulator's priced decision menu (decision_menu.hpp) without a round trip to Python. Each decides as its
// Python policy does, bit for bit (tests/core/test_base_policies.py):
//   no-deflect          agents/baselines.py NoDeflect: always the prefill path (the shortest queue)
//   kairos-exact        agents/kairos.py Kairos with staleness_s = 0 and model_error = 0 (a fresh view, no draws)
//   always-deflect      AlwaysDeflect (chunk 0 = LargestSafe: always-deflect-ls)
//   sq                  SQ: deflect when the shortest prefill queue (tokens or requests) > threshold (sq-ls: chunk 0)
//   sl                  SL: deflect prompts shorter than threshold tokens (sl-ls: chunk 0)
//   pending-switch      PendingSwitch: deflect when the decode nodes' pending admissions (DecisionMenu::decode_i
//                       column 2, the context's pending_admissions) sum to >= min_pending requests (chunk 0 default)
// Every one is Markov in the simulator state (no memory between decisions), which the Oracle's improvement
// property needs. At a re-entry decision (faults.reentry: policy) each decides as at an arrival, on the prefill
// the request now needs (prompt + gen tokens: DecisionMenu::gen). Times in seconds, sizes in tokens.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "decision_menu.hpp"
#include "pricer.hpp"

namespace kairos {

class Simulator;

constexpr int BASE_NO_DEFLECT = 0;
constexpr int BASE_KAIROS_EXACT = 1;
constexpr int BASE_ALWAYS_DEFLECT = 2;
constexpr int BASE_SQ = 3;
constexpr int BASE_SL = 4;
constexpr int BASE_PENDING_SWITCH = 5;

// One routing decision: kind 0 = prefill path (node -1: the shortest queue), 1 = deflect to decode node `node`
// with `chunk` tokens per step (0: LargestSafe).
struct Action {
    int64_t kind = 0;
    int64_t node = -1;
    int64_t chunk = 0;
    bool operator==(const Action& o) const { return kind == o.kind && node == o.node && chunk == o.chunk; }
};

// What a base policy is. The Kairos fields are its constants as agents/kairos.py computes them (Python builds
// them, so every double is the same bits).
struct BaseSpec {
    int kind = BASE_NO_DEFLECT;
    int64_t chunk = 0;           // always-deflect, sq, sl, pending-switch: tokens per chunk step (0: LargestSafe)
    double threshold = 0.0;      // sq: queue threshold (tokens or requests); sl: length threshold (tokens)
    bool unit_requests = false;  // sq: the queue in requests (else tokens)
    int64_t min_pending = 1;     // pending-switch: k, the pending admissions (requests, >= 1) that switch it
    // kairos-exact
    double alpha = 1.3;
    double beta = 1.0;
    double ttft_slo_s = 1.0;
    int64_t prefill_budget = 8192;  // tokens per prefill step
    double xfer_setup_s = 0.0;      // 0 and 0: the transfer is not in TTFT
    double xfer_per_token_s = 0.0;  // seconds per prompt token on the link
    std::vector<int64_t> menu_desc;  // Kairos's chunk menu, decreasing
};

// A base policy with its own pricer copy (Kairos's memos change on reads; values never do).
class BaseDecider {
public:
    BaseDecider(BaseSpec spec, const Pricer& pricer);
    // The decision for the pending request of `m` (the simulator's menu of that decision).
    Action decide(const DecisionMenu& m);
    const BaseSpec& spec() const { return spec_; }
    // give the pricer memos of its own (Pricer::own_memos): before this decider runs on another thread
    void own_pricer_memos() { pricer_.own_memos(); }
    void set_pricer_value_memos(bool on) { pricer_.set_value_memos(on); }  // Pricer::set_value_memos

private:
    Action kairos(const DecisionMenu& m);
    double own_prefill_s(int64_t prompt);
    double queue_wait_s(int64_t queued_tokens, int64_t queued_requests);
    BaseSpec spec_;
    Pricer pricer_;
    double attn0_ = 0.0, step_full_ = 0.0;
    std::unordered_map<int64_t, double> own_memo_;
    std::vector<int64_t> sizes_;  // scratch
};

// Among decode nodes that can take a deflection (can_deflect, none in flight): the smallest batch, then the
// smallest total context, then the lowest index (agents/base.py least_loaded_deflectable); -1 when none.
int64_t least_loaded_deflectable(const DecisionMenu& m);

// Apply `a` to the simulator's pending decision (Simulator::apply_prefill / apply_deflect); false on a refusal.
bool apply_action(Simulator& sim, const Action& a);

// Run `sim` to the end of its workload under `base` (from its pending decision, if any). Returns the decisions
// taken.
int64_t run_base(Simulator& sim, BaseDecider& base);

}  // namespace kairos
