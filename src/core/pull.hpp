// Pull decisions (scenario option deflection.decision_points: arrival+pull; docs/scenarios.md). Besides every
// arrival, the simulator asks the policy when a decode node's deflection slot frees (its deflected prefill
// completed): it nominates ONE candidate, a request queued on a prefill node whose prefill has not started, and
// prices the same menu as at an arrival for it. The answers: "prefill" = stay (it keeps its place in its queue,
// nothing is re-dispatched) or deflect it to the freed node (it leaves its prefill queue; its KV is built on the
// decode node and never transfers). Times in seconds, sizes in tokens.
//
// Candidate rule (Simulator::raise_pull, pull.cpp): among the queued, not-started requests of every prefill node
// that the freed node would accept now (batch room, KV memory), the one with the largest predicted remaining
// TTFT on its prefill path (the wait for the tokens ahead of it in its queue + its own prefill + its KV transfer
// when TTFT includes it), ties by arrival order (smaller request id). No candidate: no pull decision.
#pragma once
#include <cstdint>

namespace kairos {

constexpr int64_t DECISION_ARRIVAL = 0;  // a request arrived: route it
constexpr int64_t DECISION_PULL = 1;     // a deflection slot freed: pull the nominated candidate or not
constexpr int64_t DECISION_REENTRY = 2;  // faults.reentry: policy: a failure's victim re-enters (reentry.cpp)

// LoggedDecision.kind values
constexpr int64_t LOG_PREFILL = 0;
constexpr int64_t LOG_DEFLECT = 1;
constexpr int64_t LOG_PULL_STAY = 2;
constexpr int64_t LOG_PULL_DEFLECT = 3;
constexpr int64_t LOG_REENTRY_PREFILL = 4;  // a re-entry decision (reentry.cpp): the prefill path
constexpr int64_t LOG_REENTRY_DEFLECT = 5;  // a re-entry decision: a deflection

}  // namespace kairos
