// Fault injection (docs/reliability.md, "Faults"): the events a scenario's `faults:` section
// compiles to (kairos_gym/faults.py: timed events and the random-failure draws, merged and sorted by time) and the
// counters the simulator keeps about them. Times in seconds from the run's start; factors are plain numbers.
//
// The simulator (faults.cpp) pushes one EV_FAULT event per fault (a = its index in the list) when the list is set
// (Simulator::set_faults, right after reset). A run without faults pushes none: its results and event sequence
// are those of a simulator without this file.
#pragma once
#include <cstdint>

namespace kairos {

constexpr int8_t EV_FAULT = 6;

// what a fault event does (kairos_gym/faults.py FAULT_KINDS, same order)
enum FaultKind : int8_t {
    F_PREFILL_DOWN = 0,
    F_PREFILL_UP = 1,
    F_DECODE_DOWN = 2,
    F_DECODE_UP = 3,
    F_PREFILL_SLOW = 4,    // the prefill node's step times x factor (a straggler)
    F_PREFILL_NORMAL = 5,  // back to nominal step times
    F_DECODE_SLOW = 6,
    F_DECODE_NORMAL = 7,
    F_LINK_DEGRADED = 8,  // link `node` (prefill node `node`'s P->D link) at factor x its nominal bandwidth
    F_LINK_CUT = 9,       // link moves nothing: transfers on it stall (their KV stays reserved) until restored
    F_LINK_RESTORED = 10, // nominal bandwidth again
    F_KIND_COUNT = 11,
};

struct FaultEvent {
    double t = 0.0;      // seconds
    int8_t kind = 0;     // FaultKind
    int64_t node = 0;    // node (or link) index in its class
    double factor = 1.0; // slow: step-time factor (> 1); degraded: bandwidth factor (0, 1); else 1
};

// Most fault events one run holds (timed + drawn; kairos_gym/faults.py checks the same bound first).
constexpr int64_t MAX_FAULT_EVENTS = 100000;

// What the faults did to requests (all 0 in a run without faults). Every count is of request re-entries (one
// request may re-enter several times); none is a loss: every request still ends completed or rejected.
struct FaultCounters {
    int64_t n_events = 0;           // fault events applied
    int64_t n_requeued = 0;         // queued or prefilling on a prefill node that went down: back to prefill
    int64_t n_transfers_lost = 0;   // KV on a prefill node that went down (in transfer or awaiting memory)
    int64_t n_decode_reentries = 0; // resident on a decode node that went down (batch, pending, swapped, deflection)
    int64_t n_rerouted = 0;         // in transfer to a decode node that went down: the transfer starts again
    int64_t n_refused_down = 0;     // decisions that named a down node (refused, counted, then the prefill path)
    int64_t n_held = 0;             // re-entries or decisions held because no prefill node was up (total)
    int64_t n_reentry_decisions = 0;  // re-entries offered to the policy (faults.reentry: policy; reentry.cpp)
    int64_t n_reentry_deflected = 0;  // of them, deflections accepted (prefilled on a decode node, no transfer)
    int64_t n_dropped_timed_out = 0;  // victims that had already timed out (overload.timeout_s): removed, not re-entered
};

}  // namespace kairos
