// Rollouts and the clairvoyant rollout Oracle. A rollout copies the simulator's state (a
// SimSnapshot restored into a scratch simulator: the live one is never touched), applies one action, runs to the
// end of the workload under a base policy (base_policies.hpp) and scores the finished run. The Oracle tries every
// candidate action under every base policy from the same state (common random numbers: the workload is fixed and
// nothing in the exact track is random) and takes the action whose best rollout is best.
//
// Objective (the leaderboard's score, kairos_gym/sim/metrics.py summarize): n_ok = requests finished with
// first_token - arrival <= TTFT SLO and max_gap <= TBT SLO (slo_attainment = n_ok / n). Ties on n_ok are broken by
// n_partial = requests meeting the TTFT SLO + requests meeting the TBT SLO (finished ones), then by candidate
// order (the prefill path first, then decode nodes in index order, LargestSafe before fixed chunks in increasing
// size), then by base order. Times in seconds, sizes in tokens.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base_policies.hpp"
#include "simulator.hpp"

namespace kairos {

struct Objective {
    int64_t n_ok = -1;       // requests within both SLOs (-1: not scored)
    int64_t n_partial = -1;  // requests within the TTFT SLO plus requests within the TBT SLO
    bool better_than(const Objective& o) const {
        return n_ok != o.n_ok ? n_ok > o.n_ok : n_partial > o.n_partial;
    }
};

// The objective of the simulator's run so far (a finished run: the final objective), exactly as summarize counts.
// O(n): a scan of the per-request records (score_so_far is the same figure from the run counters, O(1)).
Objective objective(const Simulator& sim, double ttft_slo_s, double tbt_slo_s);

// The same figure from the run counters (RunCounters score_*: the simulator's SLOs, CoreConfig ttft_slo_s and
// tbt_s), O(1); equal to objective() with those SLOs at every instant (tested).
Objective score_so_far(const Simulator& sim);

// An upper bound on the run's final objective, from what is known now (O(1)): every request not yet known to
// miss is counted as met. A request is known to miss its TTFT SLO once its first token came late (a first token
// is set once), its TBT SLO once it finished with a worst gap above it, both once rejected or timed out. Each of
// these is final, so the bound never increases along a run, and once the run is over it equals the objective.
// The final objective is <= the bound lexicographically (n_ok first, then n_partial).
Objective score_bound(const Simulator& sim);

// The Oracle's candidate actions at the simulator's pending decision, deduplicated (rollout.cpp says which).
// `fixed_chunks` false: LargestSafe only.
std::vector<Action> candidate_actions(const Simulator& sim, bool fixed_chunks);

// The candidate identical by construction to `a` at sim's pending decision: a refused deflection -> the prefill
// path; the prefill path to the shortest queue -> node -1; a fixed chunk >= the prompt -> the smallest menu size
// >= the prompt; any fixed chunk when the prompt is <= the smallest size -> LargestSafe.
Action canonical_action(const Simulator& sim, const Action& a);

struct OracleStats {
    int64_t n_decisions = 0;  // decisions taken
    int64_t n_searched = 0;   // decisions with more than one candidate (rolled out)
    int64_t n_rollouts = 0;   // rollouts started (a reused value is not one)
    int64_t n_candidates = 0; // candidates over all searched decisions
    int64_t n_pruned = 0;     // rollouts stopped by the bound (they could not be chosen)
    int64_t n_reused = 0;     // (candidate, base) values known from the previous decision: no rollout
    int64_t n_rollout_decisions = 0;  // decisions simulated inside rollouts (the cost: ~ simulated requests)
    int64_t n_stopped_decisions = 0;  // of them, those of rollouts the bound stopped
    int64_t n_stopped_remaining = 0;  // arrivals still to come when those rollouts started (~ their full length)
};

// One thread's tools: a scratch simulator and the base deciders (each holds its own pricer and memos, so no two
// threads share anything they write).
struct RolloutWorker {
    Simulator sim;
    std::vector<BaseDecider> bases;
};

// Most threads one Oracle runs its rollouts on.
constexpr int64_t MAX_ROLLOUT_THREADS = 64;

class RolloutOracle {
public:
    // `like`: a simulator of the shape the Oracle will decide for (its config and pricer are copied into each
    // scratch simulator). `bases` in tie-break order (at least one). `threads` (1 to MAX_ROLLOUT_THREADS): the
    // k x b rollouts of one decision run on this many threads, each writing its own score slot; the choice is
    // made after all of them, in candidate-then-base order, so the result is the same for any thread count.
    // `exhaustive`: every rollout runs to the end (every candidate's value under every base is exact, as the
    // distillation labels need); false: the bounded search (rollout.cpp), whose decisions are the same.
    // `ttft_slo_s` and `tbt_slo_s` must be `like`'s (CoreConfig ttft_slo_s, tbt_s: the run counters' score).
    // `reference`: the Oracle as it ran before its exact constant-factor savings, a cost baseline that gives the
    // same run: exhaustive, its scratch simulators not in rollout mode, its pricers without value memos
    // (Pricer::set_value_memos). Needs `exhaustive`.
    RolloutOracle(const Simulator& like, std::vector<BaseSpec> bases, double ttft_slo_s, double tbt_slo_s,
                  bool fixed_chunks, int64_t threads = 1, bool exhaustive = false, bool reference = false);
    RolloutOracle(const RolloutOracle&) = delete;  // owns its workers' simulators
    RolloutOracle& operator=(const RolloutOracle&) = delete;
    // The action for `sim`'s pending decision (sim is not changed). Fills last_scores() per candidate x base.
    Action decide(const Simulator& sim);
    // Roll `first` out from `sim`'s pending decision under base `b` (sim is not changed).
    Objective rollout(const Simulator& sim, const Action& first, size_t b);
    // Decide and apply every decision of `sim` to its end; returns the final objective.
    Objective run(Simulator& sim);
    const OracleStats& stats() const { return stats_; }
    void reset_stats() { stats_ = OracleStats{}; }
    // the last searched decision: candidates and, per candidate, the objective under each base (row-major;
    // {-1, -1}: a rollout the bound stopped, worse than the chosen one or tied with it and later in order)
    const std::vector<Action>& last_candidates() const { return last_cands_; }
    const std::vector<Objective>& last_scores() const { return last_scores_; }
    size_t n_bases() const { return bases_.size(); }
    int64_t n_threads() const { return static_cast<int64_t>(workers_.size()); }
    bool exhaustive() const { return exhaustive_; }
    bool reference() const { return reference_; }

private:
    // The best (candidate, base) slot found so far in one decision: its value and index (tie-break: lower index).
    struct Incumbent {
        Objective value;  // n_ok -1: none yet
        size_t slot = 0;
        // can slot `k`, whose final value is <= `bound`, still be chosen over the incumbent?
        bool beatable_by(const Objective& bound, size_t k) const {
            if (value.n_ok < 0 || bound.better_than(value)) return true;
            return !value.better_than(bound) && k < slot;  // equal: the lower index wins the tie
        }
        bool offer(const Objective& v, size_t k) {  // true: the incumbent changed
            if (value.n_ok < 0 || v.better_than(value) || (!value.better_than(v) && k < slot)) {
                value = v;
                slot = k;
                return true;
            }
            return false;
        }
    };
    // The incumbent the threads of one decision share: `version` moves (under `mu`) each time it improves, so a
    // rollout rereads it (under the lock) only after a change, not at every decision.
    struct SharedIncumbent {
        Incumbent inc;
        std::mutex mu;
        std::atomic<uint64_t> version{0};
        void offer(const Objective& v, size_t k) {
            std::lock_guard<std::mutex> lock(mu);
            if (inc.offer(v, k)) version.fetch_add(1, std::memory_order_release);
        }
    };
    Objective rollout_on(RolloutWorker& w, const SimSnapshot& snap, const Action& first, size_t b,
                         int64_t& decisions) const;
    // rollout_on with the bound: stops (returns false) once slot k can no longer beat the shared incumbent
    bool bounded_rollout(RolloutWorker& w, const SimSnapshot& snap, const Action& first, size_t b, size_t k,
                         SharedIncumbent& shared, Objective& out, int64_t& decisions, int64_t& stopped_decisions,
                         int64_t& stopped_remaining) const;
    // are the carried values (carry_) those of sim's state: is it the state the last decision's action led to?
    bool carry_holds(const Simulator& sim) const;
    // the state carry_holds checks at the next decision: `chosen` is about to be applied to sim's pending decision
    void remember(const Simulator& sim, const Action& chosen);
    std::vector<BaseDecider> bases_;  // the main thread's: each base's own action at a decision
    std::vector<std::unique_ptr<RolloutWorker>> workers_;
    bool fixed_chunks_;
    bool exhaustive_;
    bool reference_;
    OracleStats stats_;
    // Reuse: the value of "follow base b from the state the last decision's action leads to" per base (n_ok -1:
    // unknown), which is the last decision's (chosen candidate, b) rollout, known when it ran to the end. Valid
    // at the next decision when it is taken on that state: the same simulator and workload, the decision log
    // what it was plus the chosen action (the state is a function of the workload and the log).
    std::vector<Objective> carry_;
    const Simulator* carry_sim_ = nullptr;
    WorkloadPtr carry_wl_;
    std::vector<LoggedDecision> carry_log_;
    int64_t carry_rid_ = -1;
    Action carry_action_;
    std::vector<Action> last_cands_;
    std::vector<Objective> last_scores_;
};

}  // namespace kairos
