// Per-request state of a run as structure-of-arrays, indexed by request id (rid = arrival order). Times in
// seconds from the run's start (NaN: not yet), lengths in tokens, bytes in bytes. The columns Python reads
// (tools/fingerprint.py, kairos_gym.sim.metrics) have the dtypes the Python engine's lists give under
// np.asarray: float64 and int64.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace kairos {

// request paths (kairos_gym.sim.metrics.PATH_*)
constexpr int64_t PATH_PENDING = -2;
constexpr int64_t PATH_REJECTED = -1;
constexpr int64_t PATH_PREFILL = 0;
constexpr int64_t PATH_DEFLECT = 1;

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

struct Requests {
    explicit Requests(int64_t n)
        : path(n, PATH_PENDING), first_token(n, NaN), finish(n, NaN), prefill_start(n, NaN), prefill_end(n, NaN),
          exec_s(n, 0.0), xfer_start(n, NaN), xfer_end(n, NaN), p_node(n, -1), d_node(n, -1), max_gap(n, 0.0),
          last_tok(n, NaN), ctx_base(n, 0), end_step(n, 0), gap_own(n, 0.0), from_rec(n, 0), kv_moved(n, 0),
          batch_prev(n, -1), batch_next(n, -1), has_chunks(n, 0), chunks(n), swapped(n, 0), swap_ctx(n, 0),
          swap_rem(n, 0), swap_gap(n, 0.0), pulled_from(n, -1), gen(n, 0), carry_gap(n, 0.0), attempt(n, 0),
          reentries(n, 0) {}

    std::vector<int64_t> path;
    std::vector<double> first_token, finish, prefill_start, prefill_end;
    std::vector<double> exec_s;  // seconds of prefill execution (steps it took part in)
    std::vector<double> xfer_start, xfer_end;
    std::vector<int64_t> p_node, d_node;  // -1: none
    std::vector<double> max_gap;          // worst token gap (s)
    std::vector<double> last_tok;         // time of the last token before (re)entering a batch (NaN: none)
    // decode-batch membership (DecodeNode): context = ctx_base + node steps, remaining = end_step - node steps,
    // worst gap = max(gap_own, the node's worst step since record from_rec)
    std::vector<int64_t> ctx_base, end_step;
    std::vector<double> gap_own;
    std::vector<int64_t> from_rec;
    std::vector<int64_t> kv_moved;  // KV bytes transferred P -> D
    // the decode batch a request is in, as an intrusive doubly linked list in admission order (-1: none)
    std::vector<int64_t> batch_prev, batch_next;
    // the chunk sizes (tokens) of a deflected request's prefill, in order (Python: None unless deflected)
    std::vector<uint8_t> has_chunks;
    std::vector<std::vector<int64_t>> chunks;
    // swap policy: a preempted request's state while its KV is in host memory (Python: swap_state[rid])
    std::vector<uint8_t> swapped;
    std::vector<int64_t> swap_ctx, swap_rem;  // cached tokens, tokens left to decode
    std::vector<double> swap_gap;             // worst gap so far (s)
    // decision_points arrival+pull: the prefill node a request was pulled from by a pull decision (-1: never)
    std::vector<int64_t> pulled_from;
    // faults (faults.hpp): a request sent back to prefill by a failure keeps `gen` tokens already emitted (its
    // re-prefill builds prompt + gen tokens, its decode makes output - gen), its worst gap so far `carry_gap` (s),
    // `attempt` (bumped at each re-entry: events of an older attempt are stale) and `reentries` (how many)
    std::vector<int64_t> gen;
    std::vector<double> carry_gap;
    std::vector<int64_t> attempt, reentries;
};

using RequestsPtr = std::shared_ptr<Requests>;

}  // namespace kairos
