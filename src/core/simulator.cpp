#include "portable_math.hpp"
#include "simulator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace kairos {

namespace {

// Python's int(x) of a float (truncation), saturated far beyond any reachable step count instead of UB
int64_t trunc_int(double x) {
    if (!(x < 9.0e18)) return static_cast<int64_t>(9.0e18);
    if (!(x > -9.0e18)) return -static_cast<int64_t>(9.0e18);
    return static_cast<int64_t>(x);
}

double dbl(int64_t v) { return static_cast<double>(v); }

}  // namespace

int64_t steps_within(double t0, double dt, double x) {
    if (x <= 0) return 0;
    int64_t j;
    if (dt <= 0) {
        j = trunc_int(x / t0);
    } else {
        double a = dt / 2.0;
        double b = t0 - a;
        j = trunc_int((-b + std::sqrt(b * b + 4.0 * a * x)) / (2.0 * a));
    }
    // guard float error
    while (j > 0 && dbl(j) * t0 + dt * dbl(j) * dbl(j - 1) / 2.0 > x) --j;
    while (dbl(j + 1) * t0 + dt * dbl(j + 1) * dbl(j) / 2.0 <= x) ++j;
    return j;
}

Simulator::Simulator(CoreConfig cfg, const Pricer& pricer, bool oracle)
    : cfg_(std::move(cfg)), pricer_(pricer), oracle_(oracle) {
    if (cfg_.n_prefill < 1 || cfg_.n_decode < 1) throw std::invalid_argument("simulator: no prefill or decode node");
    if (cfg_.menu.empty() || cfg_.menu_desc.size() != cfg_.menu.size())
        throw std::invalid_argument("simulator: chunk menu empty or menu_desc of another length");
    if (cfg_.kv.block < 1) throw std::invalid_argument("simulator: kv block < 1 token");
    if (cfg_.kv_capacity < 1) throw std::invalid_argument("simulator: kv capacity < 1 token");
    if (cfg_.stream_slots != -1 && (cfg_.stream_slots < 1 || (cfg_.stream_slots & (cfg_.stream_slots - 1))))
        throw std::invalid_argument("simulator: stream_slots must be -1 or a power of two");
    if (cfg_.score_from < 0) throw std::invalid_argument("simulator: score_from < 0");
    if (cfg_.score_from > 0 && cfg_.stream_slots != -1)
        throw std::invalid_argument("simulator: score_from (a burn-in) needs exact metrics (stream_slots -1)");
    menu_.resize(cfg_.n_prefill, cfg_.n_decode, static_cast<int64_t>(cfg_.menu.size()));
}

void Simulator::reset(WorkloadPtr wl) {
    if (!wl || wl->size() < 1) throw std::invalid_argument("simulator: empty workload");
    if (wl->size() > MAX_RUN_REQUESTS) throw std::length_error("simulator: more than 2^31 - 1 requests");
    if (wl->ring() && cfg_.stream_slots < 1)
        throw std::invalid_argument("simulator: a chunked workload needs streaming metrics (stream_slots)");
    if (cfg_.score_from > 0 && cfg_.score_from >= wl->size())
        throw std::invalid_argument("simulator: score_from (the burn-in) leaves no request scored");
    wl_ring_.reset();  // reset_chunked sets it after this
    wl_ = std::move(wl);
    n_ = wl_->size();
    R_ = std::make_shared<Requests>(n_, cfg_.stream_slots);  // fresh arrays: views of the previous run stay valid
    events_ = EventQueue{};
    pnodes_.assign(static_cast<size_t>(cfg_.n_prefill), PrefillNode{});
    for (int64_t i = 0; i < cfg_.n_prefill; ++i) pnodes_[static_cast<size_t>(i)].idx = i;
    dnodes_.assign(static_cast<size_t>(cfg_.n_decode), DecodeNode{});
    for (int64_t i = 0; i < cfg_.n_decode; ++i) {
        dnodes_[static_cast<size_t>(i)].idx = i;
        dnodes_[static_cast<size_t>(i)].kv_capacity = cfg_.kv_capacity;
        dnodes_[static_cast<size_t>(i)].stack_prune = stack_prune_;
        // the batch's KV-block aggregates (swap policy, blocks up to kMaxResidueBlock: steps_that_fit, emit_tokens)
        dnodes_[static_cast<size_t>(i)].reset_blocks(cfg_.kv.swap && cfg_.kv.block <= kMaxResidueBlock ? cfg_.kv.block
                                                                                                      : 0);
    }
    links_.assign(static_cast<size_t>(cfg_.n_prefill), FairShareLink(cfg_.transfer_bandwidth));
    awaiting_memory_.clear();
    n_swap_state_ = 0;
    stats_ = RunStats{};
    if (cfg_.stream_slots > 0) stats_.stream(cfg_.sketch_alpha);
    stream_ = cfg_.stream_slots > 0 ? StreamSummary(cfg_.sketch_alpha) : StreamSummary{};
    rows_.clear();
    c_ = RunCounters{};
    now_ = 0.0;
    pending_rid_ = -1;
    pending_kind_ = DECISION_ARRIVAL;
    pull_node_ = -1;
    log_.clear();
    trace.clear();
    timeline.clear();
    info_ = InfoState{};  // the dispatcher's view and the noise stream start afresh (seed_noise seeds it)
    faults_.clear();
    faults_set_ = false;
    faults_queued_ = 0;
    held_.clear();
    reentry_q_.clear();
    fc_ = FaultCounters{};
    push(wl_->arrival[0], EV_ARRIVAL, 0, 0);
}

// ---------------------------------------------------------------- chunked workloads (workload.hpp)
void Simulator::reset_chunked(std::shared_ptr<Workload> first) {
    if (!first || !first->ring()) throw std::invalid_argument("simulator: reset_chunked needs a workload ring");
    reset(first);
    wl_ring_ = std::move(first);
}

void Simulator::append_workload(const std::vector<double>& arrival, const std::vector<int64_t>& prompt,
                                const std::vector<int64_t>& output, bool last) {
    if (!wl_ring_) throw std::invalid_argument("simulator: append_workload on a run without a chunked workload");
    const Requests& R = *R_;
    const int64_t arrived = c_.n_arrived;
    // a slot may be overwritten once its request has arrived and is not in flight (its R slot: another request
    // took it, or it is no longer live)
    append_chunk(*wl_ring_, arrival, prompt, output, last,
                 [&](int64_t old) { return old < arrived && (R.occupant[old] != old || !R.live[old]); });
    n_ = wl_ring_->n;
}

// ---------------------------------------------------------------- snapshot/restore (step 6)
SimSnapshot Simulator::snapshot() const {
    if (!R_) throw std::invalid_argument("simulator: snapshot before any reset");
    SimSnapshot s;
    s.n_prefill = cfg_.n_prefill;
    s.n_decode = cfg_.n_decode;
    s.n_menu = static_cast<int64_t>(cfg_.menu.size());
    s.wl = wl_ring_ ? std::make_shared<const Workload>(*wl_ring_) : wl_;  // a ring is copied: appends change it
    s.R = std::make_shared<const Requests>(*R_);
    s.n = n_;
    s.events = events_;
    s.pnodes = pnodes_;
    s.dnodes = dnodes_;
    s.links = links_;
    s.awaiting_memory = awaiting_memory_;
    s.n_swap_state = n_swap_state_;
    s.stats = stats_;
    s.c = c_;
    s.stream = stream_;
    s.rows = rows_;
    s.menu = menu_;
    s.now = now_;
    s.pending_rid = pending_rid_;
    s.pending_kind = pending_kind_;
    s.pull_node = pull_node_;
    s.log = log_;
    s.trace = trace;
    s.timeline = timeline;
    s.info = info_;
    s.faults = faults_;
    s.faults_set = faults_set_;
    s.faults_queued = faults_queued_;
    s.held = held_;
    s.reentry_q = reentry_q_;
    s.fc = fc_;
    return s;
}

namespace {
template <class T>
void copy_into(std::vector<T>& dst, const std::vector<T>& src) {  // same size: the storage stays
    if (dst.size() != src.size()) throw std::invalid_argument("simulator restore: menu buffers of another size");
    std::copy(src.begin(), src.end(), dst.begin());
}
}  // namespace

void Simulator::restore(const SimSnapshot& s) {
    if (!s.R || !s.wl) throw std::invalid_argument("simulator restore: an empty snapshot");
    if (s.n_prefill != cfg_.n_prefill || s.n_decode != cfg_.n_decode ||
        s.n_menu != static_cast<int64_t>(cfg_.menu.size()))
        throw std::invalid_argument("simulator restore: a snapshot of a simulator of another shape");
    const DecisionMenu& m = s.menu;
    copy_into(menu_.prefill_i, m.prefill_i);
    copy_into(menu_.prefill_f, m.prefill_f);
    copy_into(menu_.ttft_p, m.ttft_p);
    copy_into(menu_.decode_i, m.decode_i);
    copy_into(menu_.decode_f, m.decode_f);
    copy_into(menu_.decode_b, m.decode_b);
    copy_into(menu_.step_s, m.step_s);
    copy_into(menu_.ttft_d, m.ttft_d);
    copy_into(menu_.ls_ok, m.ls_ok);
    copy_into(menu_.ls_t, m.ls_t);
    copy_into(menu_.ls_first, m.ls_first);
    copy_into(menu_.up_p, m.up_p);
    copy_into(menu_.up_d, m.up_d);
    menu_.now = m.now;
    menu_.rid = m.rid;
    menu_.arrival = m.arrival;
    menu_.prompt = m.prompt;
    menu_.output = m.output;
    menu_.kind = m.kind;
    menu_.gen = m.gen;
    menu_.pull_node = m.pull_node;
    wl_ring_ = s.wl->ring() ? std::make_shared<Workload>(*s.wl) : nullptr;  // the snapshot's ring stays reusable
    wl_ = wl_ring_ ? WorkloadPtr(wl_ring_) : s.wl;
    if (rollout_mode_ && R_ && R_.use_count() == 1 && R_->slots() == s.R->slots()) {
        *R_ = *s.R;  // a scratch simulator's arrays (nobody holds views): copied in place, no allocation
    } else {
        R_ = std::make_shared<Requests>(*s.R);  // fresh arrays: views taken before stay valid
    }
    n_ = s.n;
    events_ = s.events;
    pnodes_ = s.pnodes;
    dnodes_ = s.dnodes;
    links_ = s.links;
    awaiting_memory_ = s.awaiting_memory;
    n_swap_state_ = s.n_swap_state;
    stats_ = s.stats;
    c_ = s.c;
    stream_ = s.stream;
    rows_ = s.rows;
    now_ = s.now;
    pending_rid_ = s.pending_rid;
    pending_kind_ = s.pending_kind;
    pull_node_ = s.pull_node;
    log_ = s.log;
    trace = s.trace;
    timeline = s.timeline;
    info_ = s.info;
    faults_ = s.faults;
    faults_set_ = s.faults_set;
    faults_queued_ = s.faults_queued;
    held_ = s.held;
    reentry_q_ = s.reentry_q;
    fc_ = s.fc;
}

static_assert(LOG_PREFILL / 2 == DECISION_ARRIVAL && LOG_DEFLECT / 2 == DECISION_ARRIVAL &&
                  LOG_PULL_STAY / 2 == DECISION_PULL && LOG_PULL_DEFLECT / 2 == DECISION_PULL &&
                  LOG_REENTRY_PREFILL / 2 == DECISION_REENTRY && LOG_REENTRY_DEFLECT / 2 == DECISION_REENTRY,
              "replay: a logged kind / 2 is the decision kind it answered");

void Simulator::replay(const std::vector<LoggedDecision>& log) {
    for (const LoggedDecision& d : log) {
        // LOG_* kinds come in (prefill path, deflection) pairs, one pair per DECISION_* kind (pull.hpp)
        const bool known = d.kind >= LOG_PREFILL && d.kind <= LOG_REENTRY_DEFLECT;
        if (!known || !next_decision() || pending_rid_ != d.rid || pending_kind_ != d.kind / 2)
            throw std::runtime_error("replay diverged at request " + std::to_string(d.rid));
        if (d.kind % 2 == 0)
            apply_prefill(d.node);
        else
            apply_deflect(d.node, d.chunk);
    }
}

// ---------------------------------------------------------------- debug API (tests)
namespace {
void check_index(int64_t i, size_t n, const char* what) {
    if (i < 0 || static_cast<size_t>(i) >= n) throw std::out_of_range(what);
}
}  // namespace

void Simulator::debug_join(int64_t d, int64_t rid, int64_t ctx, int64_t rem, double gap) {
    check_index(d, dnodes_.size(), "debug_join: decode node index");
    check_index(rid, static_cast<size_t>(n_), "debug_join: request id");
    dnodes_[static_cast<size_t>(d)].join(*R_, rid, ctx, rem, gap);
}

void Simulator::debug_leave(int64_t d, int64_t rid) {
    check_index(d, dnodes_.size(), "debug_leave: decode node index");
    check_index(rid, static_cast<size_t>(n_), "debug_leave: request id");
    dnodes_[static_cast<size_t>(d)].leave(*R_, rid);
}

void Simulator::debug_record(int64_t d, double worst) {
    check_index(d, dnodes_.size(), "debug_record: decode node index");
    dnodes_[static_cast<size_t>(d)].record(*R_, worst);
}

std::pair<int64_t, int64_t> Simulator::debug_blocks(int64_t d, int64_t extra) const {
    check_index(d, dnodes_.size(), "debug_blocks: decode node index");
    if (extra < 0) throw std::out_of_range("debug_blocks: extra steps < 0");
    const DecodeNode& node = dnodes_[static_cast<size_t>(d)];
    return {node.blocks_tokens(*R_, cfg_.kv.block, extra), node.kv_block > 0 ? node.blocks_at(extra) * node.kv_block : -1};
}

double Simulator::debug_worst_gap(int64_t d, int64_t rid) const {
    check_index(d, dnodes_.size(), "debug_worst_gap: decode node index");
    check_index(rid, static_cast<size_t>(n_), "debug_worst_gap: request id");
    return dnodes_[static_cast<size_t>(d)].worst_gap(*R_, rid);
}

void Simulator::debug_set_stack_prune(int64_t n) {
    if (n < 1) throw std::out_of_range("debug_set_stack_prune: n < 1");
    stack_prune_ = n;
    for (DecodeNode& d : dnodes_) d.stack_prune = n;
}

double Simulator::debug_prefill_wait(int64_t p) {
    check_index(p, pnodes_.size(), "debug_prefill_wait: prefill node index");
    return prefill_wait(pnodes_[static_cast<size_t>(p)]);
}

// ---------------------------------------------------------------- the event loop
bool Simulator::next_decision() {
    const int s = advance();
    if (s == ADVANCE_NEEDS_WORKLOAD)
        throw std::logic_error("simulator: the next arrival is not loaded yet (a chunked workload): append the next "
                               "chunk and call advance()");
    return s == ADVANCE_DECISION;
}

int Simulator::advance() {
    if (pending_rid_ >= 0) return ADVANCE_DECISION;
    while (!events_.empty() || !reentry_q_.empty()) {
        if (!reentry_q_.empty() && raise_reentry()) return ADVANCE_DECISION;  // reentry.cpp: before any event
        // chunked workload: stop before the last loaded arrival while more may follow (its handler pushes the
        // next arrival, which must be loaded by then: the event order stays the whole workload's)
        if (wl_ring_ && !wl_->complete && events_.top().kind == EV_ARRIVAL && events_.top().a == n_ - 1)
            return ADVANCE_NEEDS_WORKLOAD;
        // faults never prolong a run: once every request is accounted for, the fault events left are dropped
        if (faults_queued_ > 0 && static_cast<size_t>(faults_queued_) == events_.size() && all_settled()) {
            events_ = EventQueue{};
            faults_queued_ = 0;
            break;
        }
        Event e = events_.pop();
        double t = e.t;
        if (t < now_) throw std::logic_error("simulator: clock went backwards");
        c_.advance_clock(t);
        now_ = t;
        if (trace_on) trace.push_back(TraceRecord{t, e.kind, e.a, e.b, c_.wait_area});
        switch (e.kind) {
            case EV_DECODE_BOUNDARY: {
                DecodeNode& d = dnodes_[static_cast<size_t>(e.a)];
                if (e.b == d.version) {
                    const bool chunk_step = d.mode == MODE_CHUNK;
                    on_decode_boundary(d);
                    // pull hook (pull.cpp): the node's deflected prefill just completed, its slot is free
                    if (cfg_.pull && chunk_step && !d.has_defl && raise_pull(d.idx)) return ADVANCE_DECISION;
                }
                break;
            }
            case EV_ARRIVAL:
                if (on_arrival(e.a)) return ADVANCE_DECISION;
                break;
            case EV_PREFILL_DONE: {
                PrefillNode& node = pnodes_[static_cast<size_t>(e.a)];
                if (e.b == node.version) on_prefill_done(node);  // an older version: a step a failure aborted
                break;
            }
            case EV_TIMEOUT:
                on_timeout(e.a);
                break;
            case EV_SWAP_IN_DONE: {
                // b = node + n_decode x attempt (attempt 0 without faults: b is the node)
                if (e.b / cfg_.n_decode != R_->attempt[e.a]) break;  // its decode node failed meanwhile
                DecodeNode& d = dnodes_[static_cast<size_t>(e.b % cfg_.n_decode)];
                d.swapping_in -= 1;
                d.pending.push_front(e.a);  // swapped-in requests go before new admissions
                wake_decode(d);
                break;
            }
            case EV_SETUP_DONE: {
                if (e.b != R_->attempt[e.a]) break;  // a transfer a failure cancelled
                if (is_timed_out(e.a)) {  // overload.cpp: the transfer never starts; the reservation goes
                    DecodeNode& d = dnodes_[static_cast<size_t>(R_->d_node[e.a])];
                    d.incoming -= 1;
                    release_reservation(e.a, d);
                    retire(e.a);
                    retry_memory();
                    break;
                }
                int64_t pi = R_->p_node[e.a];
                links_[static_cast<size_t>(pi)].add(e.a, dbl(R_->kv_moved[e.a]), t);
                schedule_link(pi);
                break;
            }
            case EV_XFER_DONE: {
                FairShareLink& link = links_[static_cast<size_t>(e.a)];
                if (e.b == link.version()) {
                    Completion nxt;
                    if (link.next_completion(nxt)) {
                        link.remove(nxt.tid, t);
                        on_transfer_done(nxt.tid);
                        schedule_link(e.a);
                    }
                }
                break;
            }
            case EV_FAULT:
                faults_queued_ -= 1;
                on_fault(faults_[static_cast<size_t>(e.a)]);
                break;
            default:
                throw std::logic_error("simulator: unknown event kind");
        }
    }
    return ADVANCE_DONE;
}

// ---------------------------------------------------------------- arrivals and decisions
bool Simulator::on_arrival(int64_t rid) {
    int64_t nxt = rid + 1;
    if (nxt < n_) push(wl_->arrival[nxt], EV_ARRIVAL, nxt, 0);
    c_.n_arrived += 1;
    occupy_slot(rid);  // streaming mode: the ring slot (streaming_metrics.cpp)
    int64_t p = wl_->prompt[rid], o = wl_->output[rid];
    if (p + o > cfg_.max_context || cfg_.kv.total(p + o) > cfg_.kv_capacity) {
        // explicit admission rule: a request that can never fit is rejected at arrival
        R_->path[rid] = PATH_REJECTED;
        c_.n_rejected += 1;
        c_.n_rejected_overlong += 1;
        if (rid >= cfg_.score_from) c_.lost_scored += 1;
        retire(rid);
        return false;
    }
    if (admission_refuses(rid)) {  // overload.cpp: admission control (off by default)
        R_->path[rid] = PATH_REJECTED;
        c_.n_rejected += 1;
        c_.n_rejected_admission += 1;
        if (rid >= cfg_.score_from) c_.lost_scored += 1;
        retire(rid);
        return false;
    }
    if (R_->ring()) R_->live[rid] = 1;
    c_.arrive();
    if (cfg_.timeout_s > 0) push(now_ + cfg_.timeout_s, EV_TIMEOUT, rid, 0);
    pending_rid_ = rid;
    build_menu(rid);
    return true;
}

int64_t Simulator::shortest_queue() const {
    int64_t pn = -1, fewest = 0;
    for (const PrefillNode& node : pnodes_)
        if (node.down == 0 && (pn < 0 || node.queued_tokens < fewest)) {
            pn = node.idx;
            fewest = node.queued_tokens;
        }
    return pn;
}

void Simulator::apply_prefill(int64_t pn) {
    int64_t rid = pending_rid_;
    if (rid < 0) throw std::logic_error("simulator: apply with no pending decision");
    if (pn < -1 || pn >= cfg_.n_prefill) throw std::out_of_range("simulator: prefill node index");
    if (pending_kind_ == DECISION_PULL) return apply_pull_stay(pn);
    const bool reentry = pending_kind_ == DECISION_REENTRY;  // reentry.cpp: answered like an arrival
    pending_rid_ = -1;
    pending_kind_ = DECISION_ARRIVAL;
    c_.n_decisions += 1;
    if (!R_->ring()) log_.push_back({rid, reentry ? LOG_REENTRY_PREFILL : LOG_PREFILL, pn, 0});  // streaming: no log
    if (pn >= 0 && pnodes_[static_cast<size_t>(pn)].down) {  // a down node takes no work: refused, counted
        fc_.n_refused_down += 1;
        c_.n_invalid += 1;
        pn = -1;
    }
    if (pn < 0) pn = shortest_queue();
    if (pn < 0) return dispatch_prefill(rid);  // no prefill node up: held (faults.cpp)
    if (cfg_.info.realistic) note_prefill(pn, rid);  // the dispatcher's copy (information.cpp)
    enqueue_prefill(rid, pnodes_[static_cast<size_t>(pn)]);
}

bool Simulator::apply_deflect(int64_t d, int64_t chunk) {
    int64_t rid = pending_rid_;
    if (rid < 0) throw std::logic_error("simulator: apply with no pending decision");
    if (d < 0 || d >= cfg_.n_decode) throw std::out_of_range("simulator: decode node index");
    if (chunk != 0 && std::find(cfg_.menu.begin(), cfg_.menu.end(), chunk) == cfg_.menu.end())
        throw std::out_of_range("simulator: a chunk size off the menu");
    if (pending_kind_ == DECISION_PULL) return apply_pull_deflect(d, chunk);
    const bool reentry = pending_kind_ == DECISION_REENTRY;  // reentry.cpp: answered like an arrival
    pending_rid_ = -1;
    pending_kind_ = DECISION_ARRIVAL;
    c_.n_decisions += 1;
    if (!R_->ring()) log_.push_back({rid, reentry ? LOG_REENTRY_DEFLECT : LOG_DEFLECT, d, chunk});
    const bool ok = node_refuses(d, kv_need(rid)) == REFUSE_NONE;
    if (cfg_.info.realistic) note_deflect(d, rid, ok);  // before the physics: the copy is of the state before
    if (ok) {
        if (reentry) fc_.n_reentry_deflected += 1;
        start_deflection(rid, dnodes_[static_cast<size_t>(d)], chunk);
        return true;
    }
    c_.n_invalid += 1;
    if (dnodes_[static_cast<size_t>(d)].down) fc_.n_refused_down += 1;
    dispatch_prefill(rid);
    return false;
}

int64_t Simulator::kv_need(int64_t rid) const {
    // a re-entered request (faults) holds the KV of prompt + gen tokens; gen = 0 otherwise
    return cfg_.kv.need(wl_->prompt[rid] + R_->gen[rid], wl_->output[rid] - R_->gen[rid]);
}

// ---------------------------------------------------------------- prefill path
void Simulator::enqueue_prefill(int64_t rid, PrefillNode& node) {
    R_->path[rid] = PATH_PREFILL;
    R_->p_node[rid] = node.idx;
    node.enqueue(rid, pre_len(rid));
    if (node.busy_until < 0) start_prefill_step(node);
}

void Simulator::start_prefill_step(PrefillNode& node) {
    if (!node.compose_step(cfg_.prefill_token_budget)) {
        node.busy_until = -1.0;
        return;
    }
    for (const StepItem& s : node.step)
        if (s.prefix == 0 && std::isnan(R_->prefill_start[s.rid])) R_->prefill_start[s.rid] = now_;
    Cost3 b = pricer_.base_cost(node.step_tokens, static_cast<int64_t>(node.step.size()));
    Cost3 a = pricer_.attn_cost(node.step_pairs, node.step_kv);
    double dur = b.time_s + a.time_s;
    if (node.slow != 1.0) dur *= node.slow;  // a straggler (faults)
    node.busy_s += dur;
    node.compute_s += b.compute_s + a.compute_s;
    node.flops += b.flops + a.flops;
    util_update(node, dur, (b.compute_s + a.compute_s) / dur);
    node.step_start = now_;
    node.busy_until = now_ + dur;
    if (record_timeline) timeline.push_back(TimelineRecord{false, node.idx, now_, now_ + dur, -1});
    push(node.busy_until, EV_PREFILL_DONE, node.idx, node.version);
}

void Simulator::on_prefill_done(PrefillNode& node) {
    double dur = now_ - node.step_start;
    std::vector<StepItem> step;
    step.swap(node.step);  // prefill_complete never touches this node's step
    for (const StepItem& s : step) {
        R_->exec_s[s.rid] += dur;
        if (node.complete_chunk(s.rid, s.chunk) >= 0) prefill_complete(s.rid);
        else if (is_timed_out(s.rid)) {  // overload.cpp: timed out during the step
            node.remove(s.rid);
            retire(s.rid);
        }
    }
    node.has_step = false;
    node.busy_until = -1.0;
    step.clear();
    node.step.swap(step);  // keep the buffer
    start_prefill_step(node);
}

void Simulator::prefill_complete(int64_t rid) {
    R_->prefill_end[rid] = now_;
    if (is_timed_out(rid)) {  // overload.cpp: timed out during its last prefill step: its KV is dropped
        retire(rid);
        return;
    }
    if (wl_->output[rid] <= 1) {
        // the only token comes out of the prefill step: no decode phase, no KV transfer
        first_token(rid, now_);
        finish(rid, now_);
        return;
    }
    if (!cfg_.ttft_includes_transfer) first_token(rid, now_);
    route_to_decode(rid);
}

void Simulator::schedule_link(int64_t pi) {
    FairShareLink& link = links_[static_cast<size_t>(pi)];
    Completion nxt;
    if (link.next_completion(nxt)) push(std::max(nxt.t, now_), EV_XFER_DONE, pi, link.version());
}

void Simulator::on_transfer_done(int64_t rid) {
    R_->xfer_end[rid] = now_;
    DecodeNode& d = dnodes_[static_cast<size_t>(R_->d_node[rid])];
    d.incoming -= 1;
    if (is_timed_out(rid)) {  // overload.cpp: timed out in transfer: the KV arrives and is dropped
        release_reservation(rid, d);
        retire(rid);
        retry_memory();
        return;
    }
    d.pending.push_back(rid);
    wake_decode(d);
}

// ---------------------------------------------------------------- decode nodes
void Simulator::wake_decode(DecodeNode& d) {
    if (d.mode == MODE_IDLE) {
        plan_decode(d);
    } else if (d.mode == MODE_STRETCH) {
        double elapsed = now_ - d.start;
        int64_t j = steps_within(d.t0, d.dt, elapsed);
        // the step in progress completes; a boundary exactly now counts as completed
        int64_t new_n = (dbl(j) * d.t0 + d.dt * dbl(j) * dbl(j - 1) / 2.0 >= elapsed) ? j : j + 1;
        new_n = std::max<int64_t>(new_n, 1);
        if (new_n < d.n) {
            d.n = new_n;
            d.version += 1;
            double end = d.start + dbl(new_n) * d.t0 + d.dt * dbl(new_n) * dbl(new_n - 1) / 2.0;
            push(std::max(end, now_), EV_DECODE_BOUNDARY, d.idx, d.version);
        }
    }
    // mode 2 (chunk step): the boundary event already exists
}

void Simulator::start_deflection(int64_t rid, DecodeNode& d, int64_t chunk) {
    R_->path[rid] = PATH_DEFLECT;
    R_->d_node[rid] = d.idx;
    R_->has_chunks[rid] = 1;
    R_->chunks[rid].clear();
    d.kv_reserved += kv_need(rid);
    d.has_defl = true;
    d.defl = Deflection{rid, pre_len(rid), 0, chunk};
    R_->prefill_start[rid] = NaN;
    wake_decode(d);
}

// the next chunk step of the deflection in flight (plan_decode with a deflection in flight)
void Simulator::start_chunk_step(DecodeNode& d, int64_t B, int64_t pairs) {
    const double now = now_;
    const int64_t rid = d.defl.rid, prompt = d.defl.prompt, done = d.defl.done, chunk = d.defl.chunk;
    const std::array<double, 3>& k = pricer_.decode_pair_cost();
    const double kt = k[0], kf = k[1], kc = k[2];
    int64_t c;
    if (chunk == 0) {  // LargestSafe: the largest size whose step fits in beta x TBT
        const double budget = cfg_.ls_budget_s;
        c = cfg_.menu_desc.back();
        for (int64_t size : cfg_.menu_desc) {
            int64_t cc = std::min(size, prompt - done);
            if (pricer_.step(B, dbl(pairs), cc, done) <= budget) {
                c = size;
                break;
            }
        }
    } else {
        c = chunk;
    }
    if (c > prompt - done) c = prompt - done;
    if (done == 0 && std::isnan(R_->prefill_start[rid])) R_->prefill_start[rid] = now;
    Cost3 b = pricer_.base_cost(B + c, B + 1);
    double at = pricer_.attn(c, done);
    double dur = b.time_s + kt * dbl(pairs) + at;
    if (d.slow != 1.0) dur *= d.slow;  // a straggler (faults)
    double comp = b.compute_s + kc * dbl(pairs) + at;  // attention compute time ~ its time (compute-bound)
    if (comp > dur) comp = dur;
    d.mode = MODE_CHUNK;
    d.chunk = c;
    d.start = now;
    d.t0 = dur;
    d.dt = 0.0;
    d.n = 1;
    d.busy_s += dur;
    d.compute_s += comp;
    d.flops += b.flops + kf * dbl(pairs);
    util_update(d, dur, comp / dur);
    d.version += 1;
    if (record_timeline) timeline.push_back(TimelineRecord{true, d.idx, now, now + dur, c});
    push(now + dur, EV_DECODE_BOUNDARY, d.idx, d.version);
}

void Simulator::advance_deflection(DecodeNode& d) {
    const int64_t rid = d.defl.rid, prompt = d.defl.prompt;
    const int64_t c = d.chunk;
    R_->exec_s[rid] += d.t0;
    R_->chunks[rid].push_back(c);
    int64_t done = d.defl.done + c;
    if (done < prompt) {
        if (is_timed_out(rid)) {  // overload.cpp: timed out during this chunk step: the deflection ends here
            d.has_defl = false;
            d.defl = Deflection{};
            release_reservation(rid, d);
            retire(rid);
            retry_memory();
            return;
        }
        d.defl.done = done;
        return;
    }
    d.has_defl = false;
    d.defl = Deflection{};
    R_->prefill_end[rid] = now_;
    first_token(rid, now_);
    if (wl_->output[rid] <= 1) {
        finish(rid, now_);
        d.kv_reserved -= kv_need(rid);
        retry_memory();
        return;
    }
    if (R_->gen[rid] > 0) {  // a re-entry with gen tokens out (reentry.cpp): admitted like the prefill path's
        d.pending.push_front(rid);  // (plan_decode, next): its next token's gap spans the outage; KV in place
        return;
    }
    // joins the batch with its KV in place: no transfer
    d.join(*R_, rid, prompt, wl_->output[rid] - std::max<int64_t>(R_->gen[rid], 1), R_->carry_gap[rid]);
}

void Simulator::plan_decode(DecodeNode& d) {
    double now = now_;
    if (!d.swapped.empty()) try_swap_in(d);
    int64_t room = cfg_.decode_max_batch - d.batch_size - (d.has_defl ? 1 : 0);
    if (!d.pending.empty() && room > 0) {
        int64_t k = std::min<int64_t>(static_cast<int64_t>(d.pending.size()), room);
        int64_t drop1 = cfg_.ttft_includes_transfer ? 0 : 1;
        d.fresh.clear();
        for (int64_t i = 0; i < k; ++i) {
            int64_t r = d.pending.front();
            d.pending.pop_front();
            if (n_swap_state_ && R_->swapped[r]) {  // back from host memory: its own context and gaps
                R_->swapped[r] = 0;
                n_swap_state_ -= 1;
                d.join(*R_, r, R_->swap_ctx[r], R_->swap_rem[r], R_->swap_gap[r]);
            } else if (R_->gen[r] > 0) {  // re-entered after a failure (faults): gen tokens out already
                d.join(*R_, r, wl_->prompt[r] + R_->gen[r], wl_->output[r] - R_->gen[r], R_->carry_gap[r]);
            } else {
                d.join(*R_, r, wl_->prompt[r], wl_->output[r] - drop1, 0.0);
            }
            d.fresh.push_back(r);
        }
    }
    if (cfg_.kv.swap && d.batch_size) {
        preempt_until_fits(d);
        if (!d.batch_size && !d.swapped.empty()) try_swap_in(d);  // memory just freed: nothing else may wake it
    }
    int64_t B = d.batch_size;
    double kt = pricer_.decode_pair_cost()[0];
    int64_t pairs = d.sum_ctx + B;
    if (d.has_defl) {
        start_chunk_step(d, B, pairs);
        return;
    }
    if (B == 0) {
        d.mode = MODE_IDLE;
        return;
    }
    int64_t n = d.heap.front().first - d.steps;  // steps to the first finish
    if (cfg_.kv.swap) n = std::min(n, steps_that_fit(d, n));
    Cost3 bc = pricer_.base_cost(B, B);
    double t0 = bc.time_s + kt * dbl(pairs);
    double dt = kt * dbl(B);
    if (d.slow != 1.0) {  // a straggler (faults)
        t0 *= d.slow;
        dt *= d.slow;
    }
    d.mode = MODE_STRETCH;
    d.start = now;
    d.t0 = t0;
    d.dt = dt;
    d.n = n;
    d.chunk = 0;
    d.version += 1;
    double end = now + dbl(n) * t0 + dt * dbl(n) * dbl(n - 1) / 2.0;
    push(end, EV_DECODE_BOUNDARY, d.idx, d.version);
}

void Simulator::on_decode_boundary(DecodeNode& d) {
    int64_t n = d.n;
    double t0 = d.t0, dt = d.dt;
    int64_t B = d.batch_size;
    if (d.mode == MODE_STRETCH) {
        account_stretch(d, now_);
    } else if (d.mode == MODE_CHUNK) {  // a chunk step of the deflection in flight
        if (B) emit_tokens(d, n, t0, dt);
        advance_deflection(d);
    }
    d.mode = MODE_IDLE;
    plan_decode(d);
}

void Simulator::account_stretch(DecodeNode& d, double end) {
    int64_t n = d.n;
    double t0 = d.t0, dt = d.dt;
    int64_t B = d.batch_size;
    {
        double span = dbl(n) * t0 + dt * dbl(n) * dbl(n - 1) / 2.0;
        Cost3 base = pricer_.base_cost(B, B);
        double bf = base.flops, bc = base.compute_s;
        double kf = pricer_.decode_pair_cost()[1], kc = pricer_.decode_pair_cost()[2];
        int64_t pairs0 = d.sum_ctx + B;
        // sums over steps j of (c0 + j * B * kc): closed form (both products exact ints, as in Python)
        double sum_pairs = dbl(n * pairs0) + dbl(B * n * (n - 1)) / 2.0;
        double comp = dbl(n) * bc + kc * sum_pairs;
        d.busy_s += span;
        d.compute_s += comp;
        d.flops += dbl(n) * bf + kf * sum_pairs;
        util_update(d, span, span > 0 ? comp / span : 0.0);
        if (record_timeline) timeline.push_back(TimelineRecord{true, d.idx, d.start, end, 0});
        if (B) emit_tokens(d, n, t0, dt);
    }
}

void Simulator::emit_tokens(DecodeNode& d, int64_t n, double t0, double dt) {
    double slo = cfg_.tbt_s;
    Requests& R = *R_;
    int64_t n_fresh = static_cast<int64_t>(d.fresh.size());
    int64_t B = d.batch_size;
    double last = t0 + dt * dbl(n - 1);
    if (n_fresh) {
        double t1 = d.start + t0;
        int64_t nxt = d.n_rec + 1;  // from the next record on; this stretch's steps 1.. are added here
        std::vector<int64_t> fresh;
        fresh.swap(d.fresh);
        for (int64_t r : fresh) {
            R.from_rec[r] = nxt;
            if (n > 1 && last > R.gap_own[r]) R.gap_own[r] = last;
            if (std::isnan(R.first_token[r])) {  // TTFT includes transfer: the decode node makes the first token
                first_token(r, t1);
                continue;
            }
            // the gap since its last token: from the prefill node's first token, or from a swap-out
            double ref = !std::isnan(R.last_tok[r]) ? R.last_tok[r] : R.first_token[r];
            R.last_tok[r] = NaN;
            double g = t1 - ref;
            if (g > R.gap_own[r]) R.gap_own[r] = g;
            record_gap(stats_, c_, g, 1, slo);
        }
        fresh.clear();
        d.fresh.swap(fresh);  // keep the buffer (empty)
    }
    // step 0 gives a gap of t0 to every request that already had a token
    int64_t w0 = B - n_fresh;
    if (w0 > 0) record_gap(stats_, c_, t0, w0, slo);
    record_stretch_steps(stats_, c_, t0, dt, n, B, slo);  // steps 1..n-1 (nothing when n <= 1)
    // durations grow along a stretch, so its last step is its longest
    d.record(R, last);
    if (cfg_.kv.swap)
        d.kv_reserved += d.kv_block > 0 ? (d.blocks_at(n) - d.blocks_at(0)) * d.kv_block
                                         : d.blocks_tokens(R, cfg_.kv.block, n) - d.blocks_tokens(R, cfg_.kv.block, 0);
    d.steps += n;
    d.sum_ctx += B * n;
    if (!d.heap.empty() && d.heap.front().first <= d.steps) {  // the stretch ran to its first finish
        int64_t steps = d.steps;
        double now = now_;
        while (!d.heap.empty() && d.heap.front().first <= steps) {
            int64_t r = d.heap_pop().second;
            int64_t c = R.ctx_base[r] + steps;
            R.max_gap[r] = d.worst_gap(R, r);
            d.leave(R, r);
            finish(r, now);
            d.kv_reserved -= cfg_.kv.release(c, wl_->prompt[r], wl_->output[r]);
        }
        retry_memory();
    }
}

// ---------------------------------------------------------------- request milestones
void Simulator::first_token(int64_t rid, double t) {
    if (is_timed_out(rid)) throw std::logic_error("simulator: a first token of a timed-out request");
    if (std::isnan(R_->first_token[rid])) {
        R_->first_token[rid] = t;
        c_.first_token(now_, t);  // the area was integrated up to now; the request stopped waiting at t
        if (rid >= cfg_.score_from && !(t - wl_->arrival[rid] <= cfg_.ttft_slo_s))
            c_.ttft_missed += 1;  // objective()'s test, negated
    }
}

void Simulator::finish(int64_t rid, double t) {
    R_->finish[rid] = t;
    c_.n_finished += 1;
    if (rid < cfg_.score_from) {  // burn-in (slo.burn_in_requests): simulated, not scored
        retire(rid);
        return;
    }
    // the score's terms, as rollout.cpp objective() counts them from the final records (final now: max_gap is
    // set before finish, the first token once)
    const bool ttft_ok = R_->first_token[rid] - wl_->arrival[rid] <= cfg_.ttft_slo_s;
    const bool tbt_ok = R_->max_gap[rid] <= cfg_.tbt_s;
    c_.score_ok += (ttft_ok && tbt_ok) ? 1 : 0;
    c_.score_partial += (ttft_ok ? 1 : 0) + (tbt_ok ? 1 : 0);
    if (!tbt_ok) {
        c_.tbt_missed += 1;
        if (ttft_ok) c_.tbt_missed_only += 1;
    }
    retire(rid);
}

template <class Node>
void Simulator::util_update(Node& node, double dur, double util) {
    if (rollout_mode_) return;  // nothing in a rollout reads the utilization proxy (set_rollout_mode)
    double now = now_;
    double gap = now - node.util_t;
    double ewma = node.util_ewma * pmath::exp(-(gap > 0.0 ? gap : 0.0) / UTIL_WINDOW_S);  // idle time counts as 0
    double w = 1.0 - pmath::exp(-dur / UTIL_WINDOW_S);
    node.util_ewma = ewma * (1.0 - w) + util * w;
    node.util_t = now + dur;
}

}  // namespace kairos
