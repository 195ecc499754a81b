// EnvStepper: KairosEnv.step's simulator part (kairos_gym/env/core.py KairosEnv.step) in one call.
#include "env_step.hpp"

#include <algorithm>
#include <stdexcept>

namespace kairos {

EnvStepper::EnvStepper(Simulator& sim, ObsParams params, std::vector<int64_t> node, std::vector<int64_t> chunk,
                       int64_t W)
    : sim_(sim), p_(params), node_(std::move(node)), chunk_(std::move(chunk)), W_(W) {
    const CoreConfig& c = sim.config();
    const int64_t K = static_cast<int64_t>(c.menu.size());
    if (node_.size() != chunk_.size() || W_ < K || static_cast<int64_t>(node_.size()) != 1 + c.n_decode * W_)
        throw std::invalid_argument("EnvStepper: the action table does not fit the simulator's scenario");
    if (p_.pull != c.pull)  // the pull feature is there exactly when the scenario raises pull decisions
        throw std::invalid_argument("EnvStepper: the observation's pull feature does not match decision_points");
    obs.assign(static_cast<size_t>(obs_size(c.n_prefill, c.n_decode, K, p_.oracle, p_.pull, p_.faults)), 0.0f);
    mask.assign(node_.size(), 0);
}

void EnvStepper::observe() {
    if (sim_.pending_rid() >= 0) {
        encode_observation(sim_.menu(), p_, obs.data());
        action_mask(sim_.menu(), W_, mask.data());
    } else {
        std::fill(obs.begin(), obs.end(), 0.0f);
        std::fill(mask.begin(), mask.end(), int8_t{0});
        mask[0] = 1;
    }
}

EnvStepResult EnvStepper::step(int64_t a) {
    if (a < 0 || a >= n_actions()) throw std::out_of_range("EnvStepper.step: action index");
    EnvStepResult r;
    r.rid = sim_.pending_rid();
    if (r.rid < 0) throw std::logic_error("EnvStepper.step: no pending decision");
    const RunCounters& c = sim_.counters();
    const double w0 = c.wait_area, t0 = sim_.now();
    const int64_t v0 = c.tbt_violations, tok0 = c.tokens_out, fin0 = c.n_finished, miss0 = c.known_misses();
    const int64_t d = node_[static_cast<size_t>(a)];
    if (d < 0)
        sim_.apply_prefill(-1);
    else
        r.valid = sim_.apply_deflect(d, chunk_[static_cast<size_t>(a)]);
    r.terminated = !sim_.next_decision();
    r.d_wait = c.wait_area - w0;
    r.d_viol = c.tbt_violations - v0;
    r.d_tokens = c.tokens_out - tok0;
    r.d_finished = c.n_finished - fin0;
    r.d_missed = c.known_misses() - miss0;
    r.now = sim_.now();
    r.interval = r.now - t0;
    observe();
    return r;
}

}  // namespace kairos
