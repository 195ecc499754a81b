// Rollouts and the rollout Oracle (rollout.hpp). Times in seconds, sizes in tokens.
//
// Candidates at a decision (candidate_actions): the prefill path (the shortest queue: the action of no-deflect,
// and of Kairos, whose own join-shortest-queue picks the same node: the lowest index with the fewest queued
// tokens), then for each decode node that can take a deflection (the menu's can_deflect: none in flight, room in
// batch and KV memory) LargestSafe and each menu size. Deduplicated, because identical by construction: the
// fixed sizes >= the prompt (each runs the whole prompt as one chunk: only the smallest is kept), and every fixed
// size when the prompt is <= the smallest menu size (LargestSafe then also runs it as one chunk: only LargestSafe
// is kept). Refused deflections (can_deflect false) are not candidates: the simulator would fall back to the
// prefill path, a duplicate. RolloutOracle::decide then adds each base policy's own action at this state when
// it is not a candidate already (canonical_action: the same dedupe), so the improvement property holds whatever
// the options (e.g. a fixed-chunk base with fixed_chunks false).
#include "rollout.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <thread>

namespace kairos {

Objective objective(const Simulator& sim, double ttft_slo_s, double tbt_slo_s) {
    const Requests& R = *sim.requests();
    const Workload& W = *sim.workload();
    Objective o{0, 0};
    const int64_t n = sim.n();
    for (int64_t i = sim.config().score_from; i < n; ++i) {  // a burn-in's requests are not scored
        const double fin = R.finish[static_cast<size_t>(i)];
        if (std::isnan(fin)) continue;
        const bool ttft_ok = R.first_token[static_cast<size_t>(i)] - W.arrival[static_cast<size_t>(i)] <= ttft_slo_s;
        const bool tbt_ok = R.max_gap[static_cast<size_t>(i)] <= tbt_slo_s;
        o.n_ok += (ttft_ok && tbt_ok) ? 1 : 0;
        o.n_partial += (ttft_ok ? 1 : 0) + (tbt_ok ? 1 : 0);
    }
    return o;
}

Objective score_so_far(const Simulator& sim) {
    const RunCounters& c = sim.counters();
    return Objective{c.score_ok, c.score_partial};
}

Objective score_bound(const Simulator& sim) {
    const RunCounters& c = sim.counters();
    const int64_t n = sim.n() - sim.config().score_from, lost = c.lost_scored;  // never finish: both SLOs missed
    return Objective{n - c.known_misses(), 2 * n - c.ttft_missed - c.tbt_missed - 2 * lost};
}

std::vector<Action> candidate_actions(const Simulator& sim, bool fixed_chunks) {
    const DecisionMenu& m = sim.menu();
    const int64_t L = m.prompt + m.gen;  // the prefill's tokens (a re-entry after a failure: + gen)
    std::vector<Action> out{Action{0, -1, 0}};
    const std::vector<int64_t>& menu = sim.config().menu;  // increasing
    const int64_t smallest = *std::min_element(menu.begin(), menu.end());
    std::vector<int64_t> sizes(menu);
    std::sort(sizes.begin(), sizes.end());
    for (int64_t d = 0; d < m.D; ++d) {
        if (m.decode_b[static_cast<size_t>(2 * d + 1)] == 0) continue;
        out.push_back(Action{1, d, 0});
        if (!fixed_chunks || L <= smallest) continue;
        for (int64_t c : sizes) {
            out.push_back(Action{1, d, c});
            if (c >= L) break;  // larger sizes: the same single chunk
        }
    }
    return out;
}

Action canonical_action(const Simulator& sim, const Action& a) {
    const DecisionMenu& m = sim.menu();
    const Action jsq{0, -1, 0};
    if (a.kind == 0) {
        if (a.node < 0) return jsq;
        int64_t p = 0;  // the simulator's shortest queue: the lowest index with the fewest queued tokens
        for (int64_t i = 1; i < m.P; ++i)
            if (m.prefill_i[static_cast<size_t>(2 * i)] < m.prefill_i[static_cast<size_t>(2 * p)]) p = i;
        return a.node == p ? jsq : a;
    }
    if (a.node < 0 || a.node >= m.D || m.decode_b[static_cast<size_t>(2 * a.node + 1)] == 0) return jsq;  // refused
    if (a.chunk == 0) return a;
    std::vector<int64_t> sizes(sim.config().menu);
    std::sort(sizes.begin(), sizes.end());
    const int64_t L = m.prompt + m.gen;  // the prefill's tokens
    if (L <= sizes.front()) return Action{1, a.node, 0};
    for (int64_t c : sizes)
        if (c >= L) return a.chunk >= L ? Action{1, a.node, c} : a;
    return a;
}

RolloutOracle::RolloutOracle(const Simulator& like, std::vector<BaseSpec> bases, double ttft_slo_s,
                             double tbt_slo_s, bool fixed_chunks, int64_t threads, bool exhaustive,
                             bool reference)
    : fixed_chunks_(fixed_chunks), exhaustive_(exhaustive), reference_(reference) {
    if (bases.empty()) throw std::invalid_argument("rollout oracle: no base policy");
    if (reference && !exhaustive) throw std::invalid_argument("rollout oracle: the reference search is exhaustive");
    if (!(ttft_slo_s == like.config().ttft_slo_s && tbt_slo_s == like.config().tbt_s))
        throw std::invalid_argument("rollout oracle: the SLOs must be the simulator's (CoreConfig ttft_slo_s, tbt_s)");
    if (threads < 1 || threads > MAX_ROLLOUT_THREADS)
        throw std::invalid_argument("rollout oracle: threads must be 1 to " + std::to_string(MAX_ROLLOUT_THREADS));
    for (const BaseSpec& s : bases) {
        bases_.emplace_back(s, like.pricer());
        if (reference) bases_.back().set_pricer_value_memos(false);
    }
    for (int64_t t = 0; t < threads; ++t) {
        auto w = std::make_unique<RolloutWorker>(RolloutWorker{Simulator(like.config(), like.pricer(), false), {}});
        w->sim.set_rollout_mode(!reference);  // only base policies decide in a rollout (simulator.hpp)
        w->sim.set_pricer_value_memos(!reference);
        for (const BaseSpec& s : bases) {
            w->bases.emplace_back(s, like.pricer());
            if (reference) w->bases.back().set_pricer_value_memos(false);
        }
        if (threads > 1) {  // pricer copies share their memos, which change on reads: one set per thread
            w->sim.own_pricer_memos();
            for (BaseDecider& d : w->bases) d.own_pricer_memos();
        }
        workers_.push_back(std::move(w));
    }
}

Objective RolloutOracle::rollout_on(RolloutWorker& w, const SimSnapshot& snap, const Action& first, size_t b,
                                     int64_t& decisions) const {
    w.sim.restore(snap);
    apply_action(w.sim, first);
    decisions += run_base(w.sim, w.bases[b]);
    return score_so_far(w.sim);
}

bool RolloutOracle::bounded_rollout(RolloutWorker& w, const SimSnapshot& snap, const Action& first, size_t b,
                                    size_t k, SharedIncumbent& shared, Objective& out, int64_t& decisions,
                                    int64_t& stopped_decisions, int64_t& stopped_remaining) const {
    w.sim.restore(snap);
    apply_action(w.sim, first);
    BaseDecider& base = w.bases[b];
    const int64_t remaining = w.sim.n() - w.sim.counters().n_arrived, start = decisions;
    // a copy of the shared incumbent, refreshed when another rollout improved it (its version moved): a copy
    // older than the shared one is never better, so it stops a rollout only where the shared one would too
    Incumbent inc;
    uint64_t seen = ~uint64_t{0};
    for (;;) {
        const uint64_t v = shared.version.load(std::memory_order_acquire);
        if (v != seen) {
            std::lock_guard<std::mutex> lock(shared.mu);
            inc = shared.inc;
            seen = shared.version.load(std::memory_order_relaxed);
        }
        if (!inc.beatable_by(score_bound(w.sim), k)) {
            stopped_decisions += decisions - start;
            stopped_remaining += remaining;
            return false;
        }
        if (!w.sim.next_decision()) break;
        apply_action(w.sim, base.decide(w.sim.menu()));
        ++decisions;
    }
    out = score_so_far(w.sim);
    shared.offer(out, k);
    return true;
}

bool RolloutOracle::carry_holds(const Simulator& sim) const {
    if (carry_sim_ != &sim || carry_rid_ < 0 || sim.workload() != carry_wl_) return false;
    const std::vector<LoggedDecision>& log = sim.decision_log();
    if (log.size() != carry_log_.size() + 1) return false;
    for (size_t i = 0; i < carry_log_.size(); ++i) {
        const LoggedDecision &a = log[i], &c = carry_log_[i];
        if (a.rid != c.rid || a.kind != c.kind || a.node != c.node || a.chunk != c.chunk) return false;
    }
    const LoggedDecision& last = log.back();  // kinds 0/1 (arrival) and 4/5 (re-entry): prefill / deflect
    return last.rid == carry_rid_ && (last.kind & 1) == carry_action_.kind && (last.kind == 0 || last.kind == 1 ||
           last.kind == 4 || last.kind == 5) && last.node == carry_action_.node && last.chunk == carry_action_.chunk;
}

void RolloutOracle::remember(const Simulator& sim, const Action& chosen) {
    carry_sim_ = &sim;
    carry_wl_ = sim.workload();
    carry_log_ = sim.decision_log();
    carry_rid_ = sim.pending_rid();
    carry_action_ = chosen;
}

Objective RolloutOracle::rollout(const Simulator& sim, const Action& first, size_t b) {
    if (sim.pending_rid() < 0) throw std::logic_error("rollout: no pending decision");
    if (b >= bases_.size()) throw std::out_of_range("rollout: base index");
    stats_.n_rollouts += 1;
    return rollout_on(*workers_[0], sim.snapshot(), first, b, stats_.n_rollout_decisions);
}

Action RolloutOracle::decide(const Simulator& sim) {
    if (sim.pending_rid() < 0) throw std::logic_error("rollout oracle: no pending decision");
    const size_t B = bases_.size();
    // the values carried from the last decision, when this is the state its action led to (else unknown)
    if (exhaustive_ || !carry_holds(sim)) carry_.assign(B, Objective{});
    std::vector<Action> cands = candidate_actions(sim, fixed_chunks_);
    std::vector<size_t> own(B);  // each base's own action's candidate index
    for (size_t b = 0; b < B; ++b) {  // every base's own action is a candidate (the improvement property)
        Action a = canonical_action(sim, bases_[b].decide(sim.menu()));
        auto it = std::find(cands.begin(), cands.end(), a);
        if (it == cands.end()) it = cands.insert(cands.end(), a);
        own[b] = static_cast<size_t>(it - cands.begin());
    }
    stats_.n_decisions += 1;
    Action chosen = cands[0];
    if (cands.size() == 1) {
        // one candidate: every base's own action is it, so "follow b from the next state" keeps its value
        remember(sim, chosen);
        return chosen;
    }
    stats_.n_searched += 1;
    stats_.n_candidates += static_cast<int64_t>(cands.size());
    const SimSnapshot snap = sim.snapshot();
    const size_t n = cands.size() * B;
    last_scores_.assign(n, Objective{});
    std::vector<uint8_t> known(n, 0);  // the slot's value is exact (reused, or its rollout ran to the end)
    SharedIncumbent inc;
    for (size_t b = 0; b < B; ++b)
        if (carry_[b].n_ok >= 0) {  // follow b from here: the last decision's chosen rollout under b
            const size_t k = own[b] * B + b;
            last_scores_[k] = carry_[b];
            known[k] = 1;
            inc.offer(carry_[b], k);
            stats_.n_reused += 1;
        }
    // the other slots: each thread takes the next (candidate, base) slot and writes only its own score; with the
    // bound (not exhaustive) a rollout stops once it cannot be chosen (rollout.hpp score_bound), whatever the
    // order the threads reach the slots in
    std::atomic<size_t> next{0};
    std::atomic<int64_t> started{0}, pruned{0}, steps{0}, stopped_steps{0}, stopped_left{0};
    const size_t T = std::min(workers_.size(), n);
    std::vector<std::exception_ptr> errors(T);
    auto work = [&](size_t t) {
        try {
            int64_t my_steps = 0, my_stopped = 0, my_left = 0;
            for (size_t k = next.fetch_add(1); k < n; k = next.fetch_add(1)) {
                if (known[k]) continue;
                started.fetch_add(1);
                if (exhaustive_) {
                    last_scores_[k] = rollout_on(*workers_[t], snap, cands[k / B], k % B, my_steps);
                    known[k] = 1;
                    continue;
                }
                Objective v;
                if (bounded_rollout(*workers_[t], snap, cands[k / B], k % B, k, inc, v, my_steps, my_stopped, my_left)) {
                    last_scores_[k] = v;
                    known[k] = 1;
                } else {
                    pruned.fetch_add(1);
                }
            }
            steps.fetch_add(my_steps);
            stopped_steps.fetch_add(my_stopped);
            stopped_left.fetch_add(my_left);
        } catch (...) {
            errors[t] = std::current_exception();
            next.store(n);  // the other threads stop at their next slot
        }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < T; ++t) pool.emplace_back(work, t);
    work(0);
    for (std::thread& th : pool) th.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    stats_.n_rollouts += started.load();
    stats_.n_pruned += pruned.load();
    stats_.n_rollout_decisions += steps.load();
    stats_.n_stopped_decisions += stopped_steps.load();
    stats_.n_stopped_remaining += stopped_left.load();
    // the choice, in candidate-then-base order among the exact values: the first best slot. A stopped rollout's
    // value is <= its bound, which was worse than a value found (or equal to it, with a lower index): it is never
    // the first best, so the choice is the exhaustive search's, for any number of threads.
    size_t best = n;
    for (size_t k = 0; k < n; ++k)
        if (known[k] && (best == n || last_scores_[k].better_than(last_scores_[best]))) best = k;
    chosen = cands[best / B];
    // carry to the next decision: the chosen candidate's value under each base, where known
    for (size_t b = 0; b < B; ++b) {
        const size_t k = (best / B) * B + b;
        carry_[b] = known[k] ? last_scores_[k] : Objective{};
    }
    remember(sim, chosen);
    last_cands_ = std::move(cands);
    return chosen;
}

Objective RolloutOracle::run(Simulator& sim) {
    if (sim.pending_rid() >= 0) apply_action(sim, decide(sim));
    while (sim.next_decision()) apply_action(sim, decide(sim));
    return score_so_far(sim);
}

}  // namespace kairos
