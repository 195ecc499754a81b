// The discrete-event simulator of a disaggregated (P/D) cluster. Its results are pinned bit for bit by the
// golden data (tests/golden): every floating-point expression keeps its order of operations. Times in seconds,
// sizes in tokens, bytes in bytes.
//
// Events are ordered by (t, seq); seq increments on every push, stale events (an old version) are pushed and
// popped like the others, and the waiting area is accumulated on every pop. A decision is the only place the
// loop stops: next_decision() runs events until an arrival needs routing (then pending_rid() >= 0), and
// apply_*() routes it.
#pragma once
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "decision_menu.hpp"
#include "decode_node.hpp"
#include "event_queue.hpp"
#include "faults.hpp"
#include "information.hpp"
#include "kv_memory.hpp"
#include "link.hpp"
#include "prefill_node.hpp"
#include "pricer.hpp"
#include "pull.hpp"
#include "requests.hpp"
#include "run_stats.hpp"
#include "streaming_metrics.hpp"
#include "workload.hpp"

namespace kairos {

// event kinds
constexpr int8_t EV_ARRIVAL = 0;
constexpr int8_t EV_PREFILL_DONE = 1;
constexpr int8_t EV_SETUP_DONE = 2;
constexpr int8_t EV_XFER_DONE = 3;
constexpr int8_t EV_DECODE_BOUNDARY = 4;
constexpr int8_t EV_SWAP_IN_DONE = 5;
constexpr int8_t EV_TIMEOUT = 20;  // overload.cpp: a request's timeout (a: rid); far from the others' numbers

// advance(): a decision is pending, the run is over, or a chunked workload needs its next chunk
constexpr int ADVANCE_DONE = 0;
constexpr int ADVANCE_DECISION = 1;
constexpr int ADVANCE_NEEDS_WORKLOAD = 2;

// Most requests a run holds (request ids travel in the events' int32 field): 2^31 - 1.
constexpr int64_t MAX_RUN_REQUESTS = 2147483647;

constexpr double UTIL_WINDOW_S = 5.0;  // window of the utilization EWMA shown to policies (s)

// The scenario's constants, frozen (a typed class in Python, _core.CoreConfig, filled from ScenarioConfig and the
// latency model by kairos_gym/sim/simulator.py; the Simulator constructor checks them: std::invalid_argument).
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
    InfoConfig info;  // the information track (information.hpp): what the menu serves
    bool pull = false;  // deflection.decision_points: arrival+pull (pull.hpp); false: arrival only
    // overload control (overload.cpp; scenario section `overload`): off by default
    int64_t admit_max_waiting = -1;  // reject an arrival when this many admitted requests wait (-1: no bound)
    double admit_max_ttft_s = -1.0;  // reject when the best predicted prefill-path TTFT exceeds it (s; < 0: none)
    double timeout_s = -1.0;         // a request without a first token this long after arrival times out (s)
    // faults.reentry (reentry.cpp): true (`policy`): a failure's victims are offered to the policy one at a time
    // (DECISION_REENTRY); false (`prefill`): each takes the shortest up prefill queue by rule (or is held)
    bool reentry_policy = false;
    double ttft_slo_s = 1.0;         // s (the streaming summary's SLO attainment)
    // slo.burn_in_requests (warm start): requests with rid < score_from are simulated but not scored (RunCounters
    // score_*, ttft_missed, tbt_missed*, lost_scored; rollout.cpp objective() and score_bound()); 0: all scored
    int64_t score_from = 0;
    // streaming metrics (streaming_metrics.hpp; scenario section `metrics`): -1 exact mode, else the ring's
    // request slots (a power of two) and the sketches' relative accuracy
    int64_t stream_slots = -1;
    double sketch_alpha = 0.01;
};

// One node activity (Simulator.timeline in Python): a prefill step, a decode stretch or a chunk step.
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

// One applied decision (the decision log pickling replays): the request, its kind (LOG_* in pull.hpp: 0 prefill /
// 1 deflect at an arrival, 2 stay / 3 deflect at a pull, 4 prefill / 5 deflect at a re-entry), the node asked for
// (-1: the shortest prefill queue, or stay) and the chunk (0: LargestSafe; 0 for the prefill path).
struct LoggedDecision {
    int64_t rid, kind, node, chunk;
};

class Simulator {
public:
    // `pricer` prices every step (its tables compiled by Python's ChunkPricer); copied, with its memos.
    Simulator(CoreConfig cfg, const Pricer& pricer, bool oracle);

    void reset(WorkloadPtr wl);
    // run events until a request needs a decision (true; pending_rid() names it) or the run is over (false);
    // std::logic_error when a chunked workload needs its next chunk (callers of chunked runs use advance())
    bool next_decision();
    // ---- chunked workloads (workload.hpp; streaming metrics, docs/reliability.md): reset to a workload ring
    // holding the first chunk (`first`, already appended), append the next chunk when advance() asks for it
    // (workload.hpp append_chunk: checked; std::length_error when the chunk would overwrite a request still in
    // flight), and advance(): next_decision's loop that stops with ADVANCE_NEEDS_WORKLOAD, before popping any
    // event, when the next event is the arrival of the last loaded request and more may follow (its successor's
    // arrival is pushed when it is handled: every event popped is at or before the last loaded arrival time,
    // and the event order is the whole workload's, bit for bit)
    void reset_chunked(std::shared_ptr<Workload> first);
    void append_workload(const std::vector<double>& arrival, const std::vector<int64_t>& prompt,
                         const std::vector<int64_t>& output, bool last);
    int advance();
    bool chunked() const { return static_cast<bool>(wl_ring_); }
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
    // ---- the information track (information.hpp, information.cpp): seed the run's noise stream (after reset,
    // before the first decision) and read its state (refreshes, stale refusals, this decision's factors)
    void seed_noise(uint64_t seed) { info_.rng.seed(seed); }
    const InfoState& information() const { return info_; }
    bool done() const { return pending_rid_ < 0 && events_.empty() && reentry_q_.empty(); }

    // state read by Python
    const CoreConfig& config() const { return cfg_; }
    const WorkloadPtr& workload() const { return wl_; }
    const RequestsPtr& requests() const { return R_; }
    const std::vector<PrefillNode>& pnodes() const { return pnodes_; }
    const std::vector<DecodeNode>& dnodes() const { return dnodes_; }
    const RunStats& stats() const { return stats_; }
    const RunCounters& counters() const { return c_; }
    const StreamSummary& stream() const { return stream_; }
    // streaming mode with stream_rows on: the requests retired since the last call (then forgotten)
    std::vector<RetiredRow> take_rows() {
        std::vector<RetiredRow> out;
        out.swap(rows_);
        return out;
    }
    size_t n_rows() const { return rows_.size(); }
    bool stream_rows = false;
    const Pricer& pricer() const { return pricer_; }
    // Rollout mode, for the rollout Oracle's scratch simulators (rollout.cpp), whose decisions only the native
    // base policies take: an exact-track menu carries only what they read (build_base_menu) and the utilization
    // proxy is not tracked. The physics, the requests' records and the score are those of a normal run (tested:
    // tests/core/test_rollout_mode.py); the menu's other fields and the nodes' utilization are not.
    void set_rollout_mode(bool on) { rollout_mode_ = on; }
    bool rollout_mode() const { return rollout_mode_; }
    // give the pricer memos of its own (Pricer::own_memos): before this simulator runs on another thread
    void own_pricer_memos() { pricer_.own_memos(); }
    void set_pricer_value_memos(bool on) { pricer_.set_value_memos(on); }  // Pricer::set_value_memos
    // Pricer::share_memos_from (VecStepper: N simulators of one scenario share their pricing memos)
    bool share_pricer_memos(const Simulator& o) { return pricer_.share_memos_from(o.pricer_); }
    int64_t pending_rid() const { return pending_rid_; }
    // the pending decision's kind (DECISION_ARRIVAL / DECISION_PULL / DECISION_REENTRY) and, at a pull, the freed decode node (else -1)
    int64_t pending_kind() const { return pending_kind_; }
    int64_t pull_node() const { return pull_node_; }
    double now() const { return now_; }
    int64_t n() const { return n_; }
    int64_t events_pushed() const { return events_.seq(); }
    const EventQueue& event_queue() const { return events_; }

    // ---- snapshot/restore: a copy of every piece of mutable state except the pricer (its
    // tables are immutable and its memos change no result) and the menu buffers' storage (Python holds views
    // of it: restore copies their contents in place). The workload is shared, the per-request arrays copied.
    SimSnapshot snapshot() const;
    // Return to `s` (reusable). std::invalid_argument when `s` was taken from a simulator of another shape
    // (node counts, menu size) or before any reset. Per-request arrays are fresh: re-read the columns.
    void restore(const SimSnapshot& s);
    // every decision applied since the reset, in order
    const std::vector<LoggedDecision>& decision_log() const { return log_; }
    // Replay `log` (another run's decision_log() of the same scenario and workload) from a fresh reset: for each
    // entry, run to the next decision, check it is the logged request and kind, and apply the logged answer (what
    // unpickling does). std::runtime_error naming the request where the replay diverges.
    void replay(const std::vector<LoggedDecision>& log);

    // ---- faults (faults.hpp, faults.cpp; docs/reliability.md "Faults"): set the run's fault events (right after
    // reset, before the first next_decision; once per reset: std::logic_error otherwise; node indices and factors
    // checked: std::invalid_argument), read what they did, and whether a node is up now
    void set_faults(std::vector<FaultEvent> faults);
    const std::vector<FaultEvent>& faults() const { return faults_; }
    const FaultCounters& fault_counters() const { return fc_; }
    const std::deque<int64_t>& held() const { return held_; }  // waiting for a prefill node to come up
    // victims of a failure waiting for their re-entry decision (faults.reentry: policy; served before any event)
    const std::deque<int64_t>& reentry_queue() const { return reentry_q_; }
    bool prefill_up(int64_t p) const { return pnodes_[static_cast<size_t>(p)].down == 0; }
    bool decode_up(int64_t d) const { return dnodes_[static_cast<size_t>(d)].down == 0; }

    // ---- debug API (tests; Simulator.debug_* in Python): the decode-node batch bookkeeping
    // (join/leave/record/worst gap of decode node d), the worst-step stack's prune threshold (kept across
    // resets), a raw event push and a prefill node's predicted wait. Indices are checked (std::out_of_range).
    void debug_join(int64_t d, int64_t rid, int64_t ctx, int64_t rem, double gap);
    void debug_leave(int64_t d, int64_t rid);
    void debug_record(int64_t d, double worst);
    double debug_worst_gap(int64_t d, int64_t rid) const;
    // (blocks_tokens by a pass over the batch, the same from the node's aggregates or -1 where it keeps none) for
    // `extra` more steps of decode node d (swap policy's KV blocks, tokens)
    std::pair<int64_t, int64_t> debug_blocks(int64_t d, int64_t extra) const;
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
    void build_exact_menu(int64_t rid);
    void build_base_menu(int64_t rid);  // rollout mode: the fields the base policies read
    void menu_request_terms(int64_t rid, double& own, double& xfer);  // decision_menu.cpp: both tracks' menus
    void menu_request(int64_t rid);  // the request's fields of a menu
    int64_t batch_context_now(const DecodeNode& d, double& wait_boundary) const;  // decision_menu.cpp
    double prefill_wait(const PrefillNode& node) { return prefill_wait_at(node, now_); }
    double prefill_wait_at(const PrefillNode& node, double now);  // decision_menu.cpp: the wait as of `now`
    // the information track (information.cpp): the served menu of the realistic track, the dispatcher's refresh
    // and its own decisions (pn: the prefill node a request was sent to; d: a deflection's node, ok: accepted)
    void build_served_menu(int64_t rid);
    void refresh_view();
    void refresh_decode_copy(size_t i);  // one decode node's copy from the truth (refresh_view; a pull's freed node)
    void note_pull(int64_t d, int64_t rid, int64_t pn, bool ok);  // a pull answered (pull.cpp), in the copy
    void note_prefill(int64_t pn, int64_t rid);
    void note_deflect(int64_t d, int64_t rid, bool ok);
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
    // pull decisions (pull.cpp): nominate a candidate when decode node d's deflection slot freed (true: a pull
    // decision is pending), its remaining predicted TTFT on its queue, and the two answers to a pull
    bool raise_pull(int64_t d);
    void apply_pull_stay(int64_t pn);
    bool apply_pull_deflect(int64_t d, int64_t chunk);
    // swap policy (kv_memory.cpp)
    int64_t steps_that_fit(const DecodeNode& d, int64_t n_max) const;
    void preempt_until_fits(DecodeNode& d);
    void try_swap_in(DecodeNode& d);
    // overload control (overload.cpp)
    bool admission_refuses(int64_t rid);  // true: reject this arrival (counted)
    double predicted_prefill_ttft(int64_t rid);  // the best ttft_p of build_menu, without writing the menu
    void on_timeout(int64_t rid);
    bool is_timed_out(int64_t rid) const { return !std::isnan(R_->timed_out[rid]); }
    void release_reservation(int64_t rid, DecodeNode& d);  // a timed-out request's KV reservation on d
    // streaming metrics (streaming_metrics.cpp): fold a settled request into stream_ and free its ring slot;
    // take the slot of an arriving request (std::length_error when its previous occupant is still in flight)
    void retire(int64_t rid);
    void occupy_slot(int64_t rid);
    void first_token(int64_t rid, double t);
    void finish(int64_t rid, double t);
    template <class Node>
    void util_update(Node& node, double dur, double util);
    int64_t shortest_queue() const;  // the up prefill node with the fewest queued tokens (-1: none is up)
    // faults (faults.cpp)
    void on_fault(const FaultEvent& f);
    void fail_prefill(PrefillNode& node);
    void fail_decode(DecodeNode& d);
    void recover_prefill(PrefillNode& node);
    void recover_decode(DecodeNode& d);
    void set_slow_decode(DecodeNode& d, double factor);
    void reenter(int64_t rid, int64_t gen, double gap);  // back to the prefill path, its earlier attempt forgotten
    void dispatch_prefill(int64_t rid);  // the shortest up prefill queue, or held until one is up
    int64_t emitted_waiting(int64_t rid) const;  // tokens out of a request outside a batch (pending, transfer)
    // re-entry decisions (reentry.cpp): a re-entered victim's way back (a decision, or the shortest up queue), the
    // next re-entry decision, and a victim that had already timed out (removed now, never re-entered: true)
    void send_back(int64_t rid);
    bool raise_reentry();
    bool drop_if_timed_out(int64_t rid);
    // every request completed, rejected or timed out, and no timed-out request's KV left on a link (a cut one)
    bool all_settled() const;
    int64_t pre_len(int64_t rid) const { return wl_->prompt[rid] + R_->gen[rid]; }  // tokens its prefill builds
    void account_stretch(DecodeNode& d, double end);  // a stretch's accounting and tokens (on_decode_boundary)

    CoreConfig cfg_;
    Pricer pricer_;
    bool oracle_ = false;
    bool rollout_mode_ = false;  // set_rollout_mode: kept by reset and restore (a setting, not state)
    WorkloadPtr wl_;
    std::shared_ptr<Workload> wl_ring_;  // chunked mode: the workload ring wl_ points to (else null)
    RequestsPtr R_;
    int64_t n_ = 0;
    EventQueue events_;
    std::vector<PrefillNode> pnodes_;
    std::vector<DecodeNode> dnodes_;
    std::vector<FairShareLink> links_;
    std::deque<int64_t> awaiting_memory_;
    int64_t n_swap_state_ = 0;  // requests with a swap state (Requests::swapped set)
    RunStats stats_;
    RunCounters c_;
    StreamSummary stream_;
    std::vector<RetiredRow> rows_;
    DecisionMenu menu_;
    struct MenuScratch {  // build_menu's working rows, reused across decisions (no state: never snapshot)
        std::vector<MenuTerm> terms;
        std::vector<double> firsts, totals;
        std::vector<int64_t> sizes;
    } menu_scratch_;
    double now_ = 0.0;
    int64_t pending_rid_ = -1;
    int64_t pending_kind_ = DECISION_ARRIVAL;
    int64_t pull_node_ = -1;
    std::vector<LoggedDecision> log_;
    int64_t stack_prune_ = STACK_PRUNE;
    InfoState info_;
    std::vector<FaultEvent> faults_;
    bool faults_set_ = false;
    int64_t faults_queued_ = 0;  // EV_FAULT events in the queue
    std::deque<int64_t> held_;
    std::deque<int64_t> reentry_q_;
    FaultCounters fc_;
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
    StreamSummary stream;
    std::vector<RetiredRow> rows;
    DecisionMenu menu;
    double now = 0.0;
    int64_t pending_rid = -1;
    int64_t pending_kind = DECISION_ARRIVAL;
    int64_t pull_node = -1;
    std::vector<LoggedDecision> log;
    std::vector<TraceRecord> trace;
    std::vector<TimelineRecord> timeline;
    InfoState info;
    std::vector<FaultEvent> faults;
    bool faults_set = false;
    int64_t faults_queued = 0;
    std::deque<int64_t> held;
    std::deque<int64_t> reentry_q;
    FaultCounters fc;
};

// Largest j >= 0 with S(j) = j t0 + dt j (j-1)/2 <= x (steps of a stretch finished within x s).
int64_t steps_within(double t0, double dt, double x);

}  // namespace kairos
