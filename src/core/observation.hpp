// The env's float32 observation and int8 action mask of one decision, from its priced menu (the values of
// kairos_gym/env/observation.py ObservationLayout.values and env/actions.py ActionLayout.mask). Each feature is
// computed in double exactly as Python writes it (int operands converted to double first, same association),
// then rounded to float32 (round to nearest even, as np.array(list, float32)).
#pragma once
#include <cstddef>  // size_t (decision_menu.hpp uses it)
#include <cstdint>

#include "decision_menu.hpp"

namespace kairos {

// Scales and constants of the observation table, all handed over from Python (observation.py owns them) as a
// typed class, _core.ObsParams (env_bindings.cpp; filled by kairos_gym/env/stepper.py).
struct ObsParams {
    double ttft = 1.0;           // TTFT scale (s): the scenario's TTFT SLO
    double tbt = 0.1;            // TBT scale (s): the scenario's TBT SLO
    double budget = 0.1;         // slack scale (s): beta x TBT SLO
    double inv_max_chunk = 1.0;  // 1 / largest menu chunk (1/tokens)
    double log_den = 1.0;        // 1 / log1p(max_context)
    double ttft_slo = 1.0, tbt_slo = 0.1;  // the context's ttft_slo_s / tbt_slo_s
    double ttft_slo_scale = 1.0, tbt_slo_scale = 0.1;
    double queue_tokens_scale = 16384.0, queue_requests_scale = 8.0, batch_scale = 32.0;
    double context_scale = 131072.0, pending_scale = 8.0, remaining_scale = 4096.0;
    bool oracle = false;         // one more request feature: log1p(output) * log_den
    bool pull = false;           // decision_points arrival+pull: one more request feature, 1 at a pull decision
    bool faults = false;         // a faults: section: P + D availability features at the end (1: the node is up)
                                 // and one more, 1 at a re-entry decision (DECISION_REENTRY)
};

// number of features of a menu's shape: 2 + (oracle ? 2 : 1) + (pull ? 1 : 0) + 5 P + 12 D + 2 D K
// (+ P + D + 1 with faults)
int64_t obs_size(int64_t P, int64_t D, int64_t K, bool oracle, bool pull = false, bool faults = false);
// write the observation of `m` into out[0, obs_size)
void encode_observation(const DecisionMenu& m, const ObsParams& p, float* out);
// write the mask of `m` into out[0, 1 + D W): action 0 always valid, node j's W actions = can_deflect[j]
void action_mask(const DecisionMenu& m, int64_t W, int8_t* out);

}  // namespace kairos
