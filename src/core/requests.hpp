// Per-request state of a run as structure-of-arrays, indexed by request id (rid = arrival order). Times in
// seconds from the run's start (NaN: not yet), lengths in tokens, bytes in bytes. The columns Python reads are
// listed in request_columns.hpp (float64 and int64).
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

// One per-request column. Exact mode (the default): one element per request and `mask` all ones (rid & -1 =
// rid). Streaming mode (metrics.mode: streaming, streaming_metrics.hpp): a ring of `slots` elements (a power of
// two), request rid in slot rid & (slots - 1), reused once its request has retired.
template <class T>
struct Column {
    std::vector<T> v;
    int64_t mask = -1;

    Column() = default;
    Column(int64_t slots, const T& init, int64_t m) : v(static_cast<size_t>(slots), init), mask(m) {}
    T& operator[](int64_t rid) { return v[static_cast<size_t>(rid & mask)]; }
    const T& operator[](int64_t rid) const { return v[static_cast<size_t>(rid & mask)]; }
    size_t size() const { return v.size(); }
};

struct Requests {
    // n requests; ring_slots < 0: exact mode (one slot per request), else a ring of ring_slots (a power of two)
    explicit Requests(int64_t n, int64_t ring_slots = -1)
        : Requests(ring_slots < 0 ? n : ring_slots, ring_slots < 0 ? -1 : ring_slots - 1, true) {}

    Column<int64_t> path;
    Column<double> first_token, finish, prefill_start, prefill_end;
    Column<double> exec_s;  // seconds of prefill execution (steps it took part in)
    Column<double> xfer_start, xfer_end;
    Column<int64_t> p_node, d_node;  // -1: none
    Column<double> max_gap;          // worst token gap (s)
    Column<double> last_tok;         // time of the last token before (re)entering a batch (NaN: none)
    // decode-batch membership (DecodeNode): context = ctx_base + node steps, remaining = end_step - node steps,
    // worst gap = max(gap_own, the node's worst step since record from_rec)
    Column<int64_t> ctx_base, end_step;
    Column<double> gap_own;
    Column<int64_t> from_rec;
    Column<int64_t> kv_moved;  // KV bytes transferred P -> D
    // the decode batch a request is in, as an intrusive doubly linked list in admission order (-1: none)
    Column<int64_t> batch_prev, batch_next;
    // the chunk sizes (tokens) of a deflected request's prefill, in order (has_chunks: deflected)
    Column<uint8_t> has_chunks;
    Column<std::vector<int64_t>> chunks;
    // swap policy: a preempted request's state while its KV is in host memory
    Column<uint8_t> swapped;
    Column<int64_t> swap_ctx, swap_rem;  // cached tokens, tokens left to decode
    Column<double> swap_gap;             // worst gap so far (s)
    // overload.cpp: when the request timed out (s; NaN: it did not). A timed-out request never gets a first
    // token or a finish time; `path` keeps where it was routed.
    Column<double> timed_out;
    // decision_points arrival+pull: the prefill node a request was pulled from by a pull decision (-1: never)
    Column<int64_t> pulled_from;
    // faults (faults.hpp): a request sent back to prefill by a failure keeps `gen` tokens already emitted (its
    // re-prefill builds prompt + gen tokens, its decode makes output - gen), its worst gap so far `carry_gap` (s),
    // `attempt` (bumped at each re-entry: events of an older attempt are stale) and `reentries` (how many)
    Column<int64_t> gen;
    Column<double> carry_gap;
    Column<int64_t> attempt, reentries;
    // streaming mode: the request holding the slot (-1: none yet) and whether it is still in the simulator
    // (arrived and admitted, not yet retired: streaming_metrics.cpp)
    Column<int64_t> occupant;
    Column<uint8_t> live;

    // slots in use: one per request (exact) or the ring's size (streaming)
    int64_t slots() const { return static_cast<int64_t>(path.size()); }
    bool ring() const { return path.mask != -1; }
    // streaming: make slot rid & mask fresh for request rid (every column at its initial value)
    void reset_slot(int64_t rid);

private:
    Requests(int64_t k, int64_t m, bool)
        : path(k, PATH_PENDING, m), first_token(k, NaN, m), finish(k, NaN, m), prefill_start(k, NaN, m),
          prefill_end(k, NaN, m), exec_s(k, 0.0, m), xfer_start(k, NaN, m), xfer_end(k, NaN, m), p_node(k, -1, m),
          d_node(k, -1, m), max_gap(k, 0.0, m), last_tok(k, NaN, m), ctx_base(k, 0, m), end_step(k, 0, m),
          gap_own(k, 0.0, m), from_rec(k, 0, m), kv_moved(k, 0, m), batch_prev(k, -1, m), batch_next(k, -1, m),
          has_chunks(k, 0, m), chunks(k, {}, m), swapped(k, 0, m), swap_ctx(k, 0, m), swap_rem(k, 0, m),
          swap_gap(k, 0.0, m), timed_out(k, NaN, m), pulled_from(k, -1, m), gen(k, 0, m), carry_gap(k, 0.0, m), attempt(k, 0, m),
          reentries(k, 0, m), occupant(k, -1, m), live(k, 0, m) {}
};

inline void Requests::reset_slot(int64_t rid) {
    path[rid] = PATH_PENDING;
    first_token[rid] = finish[rid] = prefill_start[rid] = prefill_end[rid] = NaN;
    exec_s[rid] = 0.0;
    xfer_start[rid] = xfer_end[rid] = NaN;
    p_node[rid] = d_node[rid] = -1;
    max_gap[rid] = 0.0;
    last_tok[rid] = NaN;
    ctx_base[rid] = end_step[rid] = 0;
    gap_own[rid] = 0.0;
    from_rec[rid] = 0;
    kv_moved[rid] = 0;
    batch_prev[rid] = batch_next[rid] = -1;
    has_chunks[rid] = 0;
    chunks[rid].clear();
    swapped[rid] = 0;
    swap_ctx[rid] = swap_rem[rid] = 0;
    swap_gap[rid] = 0.0;
    timed_out[rid] = NaN;
    pulled_from[rid] = -1;
    gen[rid] = 0;
    carry_gap[rid] = 0.0;
    attempt[rid] = reentries[rid] = 0;
    occupant[rid] = rid;
    live[rid] = 0;
}

using RequestsPtr = std::shared_ptr<Requests>;

}  // namespace kairos
