// One env step of KairosEnv (kairos_gym/env/core.py step) in one call: apply the action's decision, run
// to the next decision, write the observation and the mask, and return the reward terms. Python keeps the action
// check, the reward formula, the SLO tracker and the info dict. Times in seconds.
#pragma once
#include <cstdint>
#include <vector>

#include "observation.hpp"
#include "simulator.hpp"

namespace kairos {

struct EnvStepResult {
    bool valid = true;        // false: a refused deflection fell back to the prefill path
    bool terminated = false;  // no decision left (the run is over); the observation is zeros
    double d_wait = 0.0;      // growth of wait_area (request-seconds)
    int64_t d_viol = 0;       // growth of tbt_violations
    int64_t d_tokens = 0;     // growth of tokens_out
    int64_t d_finished = 0;   // growth of n_finished
    int64_t d_missed = 0;     // growth of RunCounters::known_misses (the `misses` reward is minus it)
    double interval = 0.0;    // simulated seconds from this decision to the next (or to the end)
    int64_t rid = -1;         // the request the action routed
    double now = 0.0;         // simulated time after the step (s)
};

class EnvStepper {
public:
    // node[a] (-1: prefill path) and chunk[a] (0: LargestSafe) of every action a (ActionLayout), W actions per
    // decode node; `sim` must outlive the stepper (the binding keeps it alive)
    EnvStepper(Simulator& sim, ObsParams params, std::vector<int64_t> node, std::vector<int64_t> chunk, int64_t W);
    // a must be in [0, n_actions()) (checked by Python first; out of range throws std::out_of_range)
    EnvStepResult step(int64_t a);
    // write the pending decision's observation and mask (zeros and [1, 0, ...] when none is pending)
    void observe();
    int64_t n_actions() const { return static_cast<int64_t>(node_.size()); }
    // the simulator shares `o`'s pricing memos (Simulator::share_pricer_memos; results unchanged)
    bool share_pricer_memos(const EnvStepper& o) { return sim_.share_pricer_memos(o.sim_); }
    std::vector<float> obs;
    std::vector<int8_t> mask;

private:
    Simulator& sim_;
    ObsParams p_;
    std::vector<int64_t> node_, chunk_;
    int64_t W_;
};

}  // namespace kairos
