// N env steps (src/core/env_step.hpp) in one call, for kairos_gym/env/vector.py: the envs flagged active
// step with their action; their observation and mask rows and reward terms land in batched buffers. Python keeps
// the action check, the reward formula and the per-env counters. Times in seconds.
#pragma once
#include <cstdint>
#include <vector>

#include "env_step.hpp"

namespace kairos {

class VecStepper {
public:
    // every stepper has the same observation and mask sizes (throws std::invalid_argument otherwise); the
    // steppers must outlive this object (the binding keeps them alive)
    explicit VecStepper(std::vector<EnvStepper*> envs);
    // for every i with active[i]: envs[i]->step(actions[i]), then copy its obs and mask into row i; rows of
    // inactive envs are left as they were
    void step(const int64_t* actions, const uint8_t* active);
    // replace env i's stepper by `e` (same observation and mask sizes; std::out_of_range / std::invalid_argument
    // otherwise, nothing changed); it shares another env's pricing memos where their pricers agree (results
    // unchanged). Row i keeps its values until env i steps. `e` must outlive its use here (the caller keeps it)
    void set(size_t i, EnvStepper* e);
    size_t n() const { return envs_.size(); }
    size_t F = 0, A = 0;
    std::vector<float> obs;        // [N, F]
    std::vector<int8_t> mask;      // [N, A]
    std::vector<uint8_t> valid;    // [N]
    std::vector<uint8_t> terminated;  // [N]
    std::vector<double> d_wait;    // [N] request-seconds
    std::vector<int64_t> d_viol;   // [N]
    std::vector<int64_t> d_missed;  // [N] requests newly known to miss their SLOs

private:
    std::vector<EnvStepper*> envs_;
};

}  // namespace kairos
