// The discrete-event simulator of a disaggregated (P/D) cluster (the native twin of kairos_gym/sim/engine.py,
// which stays the reference: every expression is translated literally, in the same order, so results are
// bit for bit the same). Times in seconds, sizes in tokens, bytes in bytes.
//
// Events are ordered by (t, seq); seq increments on every push, stale events (an old version) are pushed and
// popped like the others, and the waiting area is accumulated on every pop. A decision is the only place the
// loop stops: next_decision() runs events until an arrival needs routing (then pending_rid() >= 0), and
// apply_*() routes it.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "decision_menu.hpp"
#include "decode_node.hpp"
#include "event_queue.hpp"
#include "kv_memory.hpp"
#include "link.hpp"
#include "prefill_node.hpp"
#include "pricer.hpp"
#include "requests.hpp"
#include "run_stats.hpp"
#include "workload.hpp"

namespace kairos {

// A code path of a port slice not written yet (raised as Python's NotImplementedError): never a silent fallback.
struct NotImplementedSlice : std::logic_error {
    explicit NotImplementedSlice(const std::string& slice)
        : std::logic_error("the native engine does not implement slice " + slice +
                           " yet; use engine=\"python\"") {}
};

// event kinds (engine.py)
constexpr int8_t EV_ARRIVAL = 0;
constexpr int8_t EV_PREFILL_DONE = 1;
constexpr int8_t EV_SETUP_DONE = 2;
constexpr int8_t EV_XFER_DONE = 3;
constexpr int8_t EV_DECODE_BOUNDARY = 4;
constexpr int8_t EV_SWAP_IN_DONE = 5;

// Most requests a run holds (request ids travel in the events' int32 field): 2^31 - 1.
constexpr int64_t MAX_RUN_REQUESTS = 2147483647;

constexpr double UTIL_WINDOW_S = 5.0;  // window of the utilization EWMA shown to policies (s)

// The scenario's constants, frozen (built in Python from ScenarioConfig and the latency model).
struct CoreConfig {
    int64_t n_prefill = 2, n_decode = 2;
    int64_t decode_max_batch = 256;
    int64_t prefill_token_budget = 8192;
    bool ttft_includes_transfer = true;
    double tbt_s = 0.1;
    double ls_budget_s = 0.1;  // LargestSafe step budget: beta x TBT SLO
    std::vector<int64_t> menu, menu_desc;
    int64_t max_deflections_per_node = 1;
    KvPolicy kv;
    double swap_bandwidth = 1e10;  // bytes/s
    double transfer_bandwidth = 17.5e9;  // bytes/s per link
    double transfer_setup_s = 0.005;
    bool transfer_enabled = true;
    int64_t kv_capacity = 0;  // tokens per decode node
    int64_t max_context = 0;  // tokens
    int64_t kv_bytes_per_token = 0;  // bytes per token of the whole model (what a transfer moves)
    double kv_bytes_per_token_per_gpu = 0.0;
};

// One node activity (engine.py timeline): a prefill step, a decode stretch or a chunk step.
struct TimelineRecord {
    bool decode;    // decode node (else prefill node)
    int64_t node;
    double start, end;  // seconds
    int64_t chunk;  // -1: prefill step, 0: decode stretch, > 0: chunk step of that many tokens
};

struct TraceRecord {
    double t;
    int8_t kind;
    int64_t a, b;
    double wait_area;  // after the event's accumulation
};

struct SimSnapshot;

// One applied decision (the decision log pickling replays): the request, 0 prefill / 1 deflect, the node asked
// for (-1: the shortest prefill queue) and the chunk (0: LargestSafe; 0 for the prefill path).
struct LoggedDecision {
    int64_t rid, kind, node, chunk;
};

class Simulator {
public:
    // `pricer` prices every step (its tables compiled by Python's ChunkPricer); copied, with its memos.
    Simulator(CoreConfig cfg, const Pricer& pricer, bool oracle);

    void reset(WorkloadPtr wl);
    // run events until a request needs a decision (true; pending_rid() names it) or the run is over (false)
    bool next_decision();
    // route the pending request to prefill node pn (-1: the shortest queue)
    void apply_prefill(int64_t pn);
    // deflect the pending request to decode node d with `chunk` (0: LargestSafe); a refusal falls back to
    // the shortest prefill queue, counts in n_invalid and returns false
    bool apply_deflect(int64_t d, int64_t chunk);
    // why decode node d refuses a deflection reserving `need` KV tokens now (decision_menu.hpp REFUSE_*)
    int node_refuses(int64_t d, int64_t need) const;
    int64_t kv_need(int64_t rid) const;
    // the priced menu of the pending decision (decision_menu.cpp), rewritten by each next_decision()
    const DecisionMenu& menu() const { return menu_; }
    bool done() const { return pending_rid_ < 0 && events_.empty(); }

    // state read by Python
    const CoreConfig& config() const { return cfg_; }
    const WorkloadPtr& workload() const { return wl_; }
    const RequestsPtr& requests() const { return R_; }
    const std::vector<PrefillNode>& pnodes() const { return pnodes_; }
    const std::vector<DecodeNode>& dnodes() const { return dnodes_; }
    const RunStats& stats() const { return stats_; }
    const RunCounters& counters() const { return c_; }
    const Pricer& pricer() const { return pricer_; }
    // Pricer::share_memos_from (VecStepper: N simulators of one scenario share their pricing memos)
    bool share_pricer_memos(const Simulator& o) { return pricer_.share_memos_from(o.pricer_); }
    int64_t pending_rid() const { return pending_rid_; }
    double now() const { return now_; }
    int64_t n() const { return n_; }
    int64_t events_pushed() const { return events_.seq(); }
    const EventQueue& event_queue() const { return events_; }

    // ---- snapshot/restore (issue 11 step 6): a copy of every piece of mutable state except the pricer (its
    // tables are immutable and its memos change no result) and the menu buffers' storage (Python holds views
    // of it: restore copies their contents in place). The workload is shared, the per-request arrays copied.
    SimSnapshot snapshot() const;
    // Return to `s` (reusable). std::invalid_argument when `s` was taken from a simulator of another shape
    // (node counts, menu size) or before any reset. Per-request arrays are fresh: re-read the columns.
    void restore(const SimSnapshot& s);
    // every decision applied since the reset, in order
    const std::vector<LoggedDecision>& decision_log() const { return log_; }

    // ---- debug API (tests; the Python engine has the same debug_* methods): the decode-node batch bookkeeping
    // (join/leave/record/worst gap of decode node d), the worst-step stack's prune threshold (kept across
    // resets), a raw event push and a prefill node's predicted wait. Indices are checked (std::out_of_range).
    void debug_join(int64_t d, int64_t rid, int64_t ctx, int64_t rem, double gap);
    void debug_leave(int64_t d, int64_t rid);
    void debug_record(int64_t d, double worst);
    double debug_worst_gap(int64_t d, int64_t rid) const;
    void debug_set_stack_prune(int64_t n);
    void debug_push(double t, int8_t kind, int64_t a, int64_t b) { push(t, kind, a, b); }
    double debug_prefill_wait(int64_t p);

    bool trace_on = false;
    std::vector<TraceRecord> trace;
    bool record_timeline = false;
    std::vector<TimelineRecord> timeline;

private:
    void push(double t, int8_t kind, int64_t a, int64_t b) { events_.push(t, kind, static_cast<int32_t>(a), b); }
    void build_menu(int64_t rid);  // decision_menu.cpp
    double prefill_wait(const PrefillNode& node);  // decision_menu.cpp
    bool on_arrival(int64_t rid);
    void enqueue_prefill(int64_t rid, PrefillNode& node);
    void start_prefill_step(PrefillNode& node);
    void on_prefill_done(PrefillNode& node);
    void prefill_complete(int64_t rid);
    void route_to_decode(int64_t rid);
    void schedule_link(int64_t pi);
    void on_transfer_done(int64_t rid);
    void wake_decode(DecodeNode& d);
    void start_deflection(int64_t rid, DecodeNode& d, int64_t chunk);
    void start_chunk_step(DecodeNode& d, int64_t B, int64_t pairs);
    void advance_deflection(DecodeNode& d);
    void plan_decode(DecodeNode& d);
    void on_decode_boundary(DecodeNode& d);
    void emit_tokens(DecodeNode& d, int64_t n, double t0, double dt);
    void retry_memory();
    // swap policy (kv_memory.cpp)
    int64_t steps_that_fit(const DecodeNode& d, int64_t n_max) const;
    void preempt_until_fits(DecodeNode& d);
    void try_swap_in(DecodeNode& d);
    void first_token(int64_t rid, double t);
    void finish(int64_t rid, double t);
    template <class Node>
    void util_update(Node& node, double dur, double util);
    int64_t shortest_queue() const;

    CoreConfig cfg_;
    Pricer pricer_;
    bool oracle_ = false;
    WorkloadPtr wl_;
    RequestsPtr R_;
    int64_t n_ = 0;
    EventQueue events_;
    std::vector<PrefillNode> pnodes_;
    std::vector<DecodeNode> dnodes_;
    std::vector<FairShareLink> links_;
    std::deque<int64_t> awaiting_memory_;
    int64_t n_swap_state_ = 0;  // requests with a swap state (Python: len(swap_state))
    RunStats stats_;
    RunCounters c_;
    DecisionMenu menu_;
    struct MenuScratch {  // build_menu's working rows, reused across decisions (no state: never snapshot)
        std::vector<MenuTerm> terms;
        std::vector<double> firsts, totals;
        std::vector<int64_t> sizes;
    } menu_scratch_;
    double now_ = 0.0;
    int64_t pending_rid_ = -1;
    std::vector<LoggedDecision> log_;
    int64_t stack_prune_ = STACK_PRUNE;
};

// The mutable state of a Simulator at one instant (Simulator::snapshot), a value: copying it copies the state.
struct SimSnapshot {
    int64_t n_prefill = 0, n_decode = 0, n_menu = 0;  // the shape it fits
    WorkloadPtr wl;
    std::shared_ptr<const Requests> R;
    int64_t n = 0;
    EventQueue events;
    std::vector<PrefillNode> pnodes;
    std::vector<DecodeNode> dnodes;
    std::vector<FairShareLink> links;
    std::deque<int64_t> awaiting_memory;
    int64_t n_swap_state = 0;
    RunStats stats;
    RunCounters c;
    DecisionMenu menu;
    double now = 0.0;
    int64_t pending_rid = -1;
    std::vector<LoggedDecision> log;
    std::vector<TraceRecord> trace;
    std::vector<TimelineRecord> timeline;
};

// Largest j >= 0 with S(j) = j t0 + dt j (j-1)/2 <= x (steps of a stretch finished within x s).
int64_t steps_within(double t0, double dt, double x);

}  // namespace kairos
