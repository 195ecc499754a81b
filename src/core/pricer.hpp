// Pricer: prices the steps of a decode node that carry one deflected prefill chunk, and prefill-node steps,
// from the compiled CostTables. A literal translation of kairos_gym.latency.pricing.ChunkPricer: every
// floating-point operation in the same order, Python ints as int64 (products of three as exact 128-bit
// integers, then rounded once, as Python's int -> float), so the results are bit for bit Python's. No Python
// headers: table growth goes through a GrowFn the bindings wire to Python.
//
// Step model (pricing.py module doc): step(T, S, P, A, R) = F(T, S) + K * P + G(A, R), with F from the tables
// (g[T] + l[S]), K the decode seconds per decode pair, and G the prefill-attention term of a chunk.
// Units: seconds, tokens, FLOPs. "Decode pairs" = sum over the decode batch of (context + 1) tokens.
//
// Not thread-safe: the memos (attention, prefill-alone, menu terms, prefix sums) change on reads. Memos never
// change a value; they are cleared past kMemoLimit entries, as in Python. The attention and menu-term memos are
// shared by copies of a pricer (share_memos_from: by pricers with the same constants).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cost_tables.hpp"
#include "flat_memo.hpp"

namespace kairos {

// Bad input to a pricer method (a negative count, an index past kMaxTableIndex, a chunk size of 0, a
// non-finite aggregate...). The bindings turn it into kairos_gym.errors.ConfigError(where, field, value,
// allowed).
class PricerInputError : public std::invalid_argument {
   public:
    PricerInputError(std::string where, std::string field, double value, bool integral, std::string allowed);
    std::string where;
    std::string field;
    double value;   // the offending value
    bool integral;  // value is an integer count (report it as an int)
    std::string allowed;
};

// A table index past the tables with no grow callback, or a grow callback that returned unusable tables.
class TableError : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
};

struct Cost3 {
    double time_s;
    double flops;
    double compute_s;
};

// One menu size's prompt-only terms (pricing.MenuTerm): prompt = n_full * chunk + rest in n_chunks chunks.
struct MenuTerm {
    int64_t chunk;
    int64_t n_full;
    int64_t rest;
    int64_t n_chunks;
    double first_attn_s;  // attention of the first chunk
    double full_attn_s;   // attention of the n_full full chunks
    double rest_attn_s;   // attention of the remainder (0 when rest == 0)
};

struct Schedule {
    double first_s;  // seconds of the first step
    double total_s;  // seconds of all steps
    int64_t n_chunks;
};

class Pricer {
   public:
    // Returns tables covering token indices [0, n_tokens] and sequence indices [0, n_seqs] (the same menu and
    // constants). Called only when an index is past the current tables.
    using GrowFn = std::function<std::shared_ptr<const CostTables>(int64_t n_tokens, int64_t n_seqs)>;
    static constexpr size_t kMemoLimit = 200000;  // pricing.MEMO_LIMIT

    explicit Pricer(std::shared_ptr<const CostTables> tables, GrowFn grow = nullptr);

    // F(T, S): everything of a step but attention (seconds).
    double base(int64_t n_tokens, int64_t n_seqs);
    // F(T, S) as (seconds, FLOPs, compute seconds).
    Cost3 base_cost(int64_t n_tokens, int64_t n_seqs);
    // Prefill-attention seconds of aggregated chunks: pf_pairs prefill pairs, kv_read KV tokens read (memoised:
    // three portable pows a value, the largest cost of a rollout before the memo).
    double attn_time(double pf_pairs, double kv_read) const;
    // The same as (seconds, FLOPs, compute seconds); all 0 for pf_pairs <= 0.
    Cost3 attn_cost(double pf_pairs, double kv_read) const;
    // G: prefill-attention seconds of one chunk of `chunk` tokens after `prefix` cached tokens (memoised).
    double attn(int64_t chunk, int64_t prefix);
    // StepLatencyModel.step_time_fast: seconds of a step of n_tokens tokens, n_seqs sampling sequences,
    // dec_pairs decode pairs, pf_pairs prefill pairs reading kv_read KV tokens (bounds as in Python). The terms
    // of (n_tokens, n_seqs) alone are memoised as their partial sum, added up in Python's order.
    double model_time(double n_tokens, double n_seqs, double dec_pairs, double pf_pairs, double kv_read) const;
    // Seconds of one step: n_decode decode requests (dec_pairs decode pairs) plus one chunk (chunk may be 0).
    double step(int64_t n_decode, double dec_pairs, int64_t chunk, int64_t prefix);
    // The rest of a prompt (done tokens built) in chunks of `chunk`, contexts growing by one token a step.
    Schedule fixed_schedule(int64_t n_decode, double dec_pairs, int64_t prompt, int64_t chunk, int64_t done);
    // Seconds to prefill `prompt` tokens alone in steps of at most `budget` tokens (memoised).
    double prefill_alone(int64_t prompt, int64_t budget);
    // Per menu size, the decode-independent terms of a prompt (memoised per prompt for the own menu). Every
    // size with a full chunk in the prompt must be a size of the own menu (its prefix sums).
    std::vector<MenuTerm> menu_terms(int64_t prompt, const std::vector<int64_t>& menu);
    // The same terms without a copy: the memo's entry for the own menu, else computed into `scratch`. The
    // reference is valid until the next menu_terms / menu_terms_ref call (Simulator::build_menu's hot path).
    const std::vector<MenuTerm>& menu_terms_ref(int64_t prompt, const std::vector<int64_t>& menu,
                                                std::vector<MenuTerm>& scratch);
    // One decode node's menu row from a prompt's terms: firsts[i] the first step's seconds, totals[i]
    // wait_s + the schedule's seconds (both resized to terms.size()).
    void menu_rows(int64_t n_decode, double dec_pairs, const std::vector<MenuTerm>& terms, double wait_s,
                   std::vector<double>& firsts, std::vector<double>& totals);
    // Greedy LargestSafe: chunk by chunk the largest size of menu_desc (decreasing) whose step fits in
    // budget_s. Returns (feasible, total seconds); the chosen sizes go to `sizes` (cleared first).
    std::pair<bool, double> largest_safe(int64_t n_decode, double dec_pairs, int64_t prompt, double budget_s,
                                         const std::vector<int64_t>& menu_desc, int64_t done,
                                         std::vector<int64_t>& sizes);

    double sec_per_decode_pair() const { return t_->kdec; }
    const std::array<double, 3>& decode_pair_cost() const { return t_->kdec_cost; }
    const std::vector<int64_t>& menu() const { return t_->menu; }
    const std::shared_ptr<const CostTables>& tables() const { return t_; }
    int64_t grow_count() const { return grow_count_; }  // times the tables were replaced by larger ones
    size_t cache_size() const { return attn_memo_->size(); }  // attention entries memoised
    // Use `o`'s attention memo (and its menu-term memo when the own menus are equal) from now on, if the two
    // price attention with the same constants (else nothing changes; returns whether it shared). A memo holds
    // what the pricer would compute, so sharing one changes no result, only how often a value is computed:
    // VecStepper shares its envs' memos, which see the same prompt lengths N times faster. Not thread-safe.
    bool share_memos_from(const Pricer& o);
    // Whether attn_time and model_time use their value memos (pnorm_memo_, dense_memo_; on by default). Off: every
    // value computed afresh, as before the memos (the rollout Oracle's reference search: a cost baseline).
    void set_value_memos(bool on) { value_memos_ = on; }
    bool value_memos() const { return value_memos_; }
    // Memos of its own (copies of the shared ones' entries): a pricer used on another thread must not share
    // memos with any other pricer (they change on reads). Values never change, so prices stay bit for bit.
    void own_memos();

   private:
    void ensure(int64_t token_index, int64_t seq_index, const char* where) {
        if (token_index >= nt_ || seq_index >= ns_) grow(token_index, seq_index, where);
    }
    void grow(int64_t token_index, int64_t seq_index, const char* where);
    void load(std::shared_ptr<const CostTables> tables);
    double cum_attn(size_t menu_slot, int64_t n);
    long menu_slot(int64_t chunk) const;  // index into cum_ of an own-menu size, or -1

    std::shared_ptr<const CostTables> t_;
    const double* g_ = nullptr;
    const double* gc_ = nullptr;
    const double* l_ = nullptr;
    const double* lc_ = nullptr;
    int64_t nt_ = 0;
    int64_t ns_ = 0;
    double kd_ = 0.0;
    AttentionConstants ac_;
    StepConstants sc_;
    GrowFn grow_;
    int64_t grow_count_ = 0;
    std::vector<std::pair<int64_t, size_t>> slots_;  // (own menu size, slot), sorted by size
    struct CumSums {
        int64_t chunk;              // an own-menu size (tokens)
        std::vector<double> sums;   // sums[i] = sum of attn(chunk, j * chunk) for j < i, in order; sums[0] = 0
    };
    std::vector<CumSums> cum_;  // per slot
    // attention and menu-term memos, shared by copies of this pricer and by share_memos_from (values never change)
    std::shared_ptr<FlatMemo> attn_memo_ = std::make_shared<FlatMemo>();  // flat_memo.hpp
    FlatMemo alone_memo_;
    // attn_time's values by (pf_pairs, kv_read), and model_time's partial sum of the terms of (n_tokens, n_seqs):
    // pure functions of their keys and the constants (which grow() keeps), so a stored value is the computed one.
    // Per pricer (a copy gets its own): they change on const reads, so no two threads may share them.
    bool value_memos_ = true;
    mutable PairMemo pnorm_memo_;
    mutable PairMemo dense_memo_;
    double dense_time(double n_tokens, double n_seqs) const;
    double attn_pnorm(double pf_pairs, double kv_read) const;
    std::shared_ptr<std::unordered_map<int64_t, std::vector<MenuTerm>>> terms_memo_ =
        std::make_shared<std::unordered_map<int64_t, std::vector<MenuTerm>>>();
};

}  // namespace kairos
