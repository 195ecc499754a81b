// CostTables: the step-latency tables and constants the pricer reads (no Python headers).
//
// Python owns the physics: kairos_gym.latency.pricing.ChunkPricer.compile() builds every number here from the
// StepLatencyModel (the G table with numpy, whose pow differs from libm's in a few % of entries), and the core
// only reads them, never recomputes a table entry. The formulas evaluated in C++ are scalar ones: the
// prefill-attention term ((pf * apf_c)^p + (kv * kv_m)^p)^(1/p) and the scalar step time
// (StepLatencyModel.step_time_fast, from StepConstants): glibc pow, as CPython's float ** calls it, in the same
// order of operations, so they are bit for bit Python's.
//
// Units: seconds, FLOPs (per GPU), tokens. Tables are indexed by token or sequence counts:
//   g[T]        seconds of a step of T tokens without its LM head and attention (G(T))
//   gc[3*T + k] the same split as (seconds, FLOPs, compute seconds), k = 0, 1, 2
//   l[S]        seconds of the LM head for S sampling sequences (L(S))
//   lc[3*S + k] the same as (seconds, FLOPs, compute seconds)
// F(T, S) = g[T] + l[S] is everything of a step but attention.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace kairos {

// Largest table index the pricer accepts (tokens of a step, sampling sequences of a step): 2^24, Python's
// kairos_gym.latency.presets.MAX_TOKENS (a test pins the two equal). Checked before any table grows.
constexpr int64_t kMaxTableIndex = int64_t(1) << 24;
// StepLatencyModel's bounds on a step's aggregates (model.MAX_SEQS sequences).
constexpr double kMaxSeqs = 65536.0;
// Largest decode-pair aggregate accepted (sum of context + 1 over a batch): 2^50, model.MAX_PAIRS. Below 2^53,
// so an integral count converts to double exactly, as Python's int + float does.
constexpr double kMaxPairs = 1125899906842624.0;

// Constants of the prefill-attention term (StepLatencyModel._pf_attention_time / _pf_attention_cost).
struct AttentionConstants {
    double apf_c = 0.0;           // seconds per prefill pair at the attention compute rate
    double kv_m = 0.0;            // seconds per KV token read at the attention memory rate
    double p = 1.0;               // roofline overlap exponent (dense_overlap_p)
    double inv_p = 1.0;           // 1 / p, as Python computed it
    double attn_pf_pair = 0.0;    // FLOPs per prefill pair (per GPU)
    double peak_c_attn_pf = 1.0;  // achievable prefill-attention FLOP/s
};

// Constants of the scalar step-time formula (StepLatencyModel.step_time_fast), already divided by the
// achievable rates: seconds per FLOP, per byte, per token. Used by Pricer::model_time.
struct StepConstants {
    struct Gemm {
        double count;  // kernels of this shape per step
        double fc;     // seconds per token of compute (FLOPs per token / achievable FLOP/s)
        double w;      // seconds of weight reads
        double am;     // seconds per token of activation traffic
        bool operator==(const Gemm& o) const { return count == o.count && fc == o.fc && w == o.w && am == o.am; }
    };
    double fixed_s = 0.0;    // per-step CPU, launch and kernel overheads (seconds)
    double ew_ar_tok = 0.0;  // elementwise + all-reduce seconds per token
    std::vector<Gemm> gemms;
    double lm_fc = 0.0;      // LM head compute seconds per sampling sequence
    double lm_wm = 0.0;      // LM head weight-read seconds
    double adec_c = 0.0;     // decode-attention compute seconds per decode pair
    bool moe = false;        // MoE terms present
    double moe_p = 1.0, moe_inv_p = 1.0;  // MoE overlap exponent and its reciprocal
    double moe_fc = 0.0;     // expert + router compute seconds per token
    double moe_e = 0.0;      // routed experts
    double moe_miss = 0.0;   // 1 - experts_per_token / routed experts
    double moe_shared = 0.0; // shared experts
    double moe_wm = 0.0;     // weight-read seconds per expert
    double moe_am = 0.0;     // activation seconds per token
    bool operator==(const StepConstants& o) const {
        return fixed_s == o.fixed_s && ew_ar_tok == o.ew_ar_tok && gemms == o.gemms && lm_fc == o.lm_fc &&
               lm_wm == o.lm_wm && adec_c == o.adec_c && moe == o.moe && moe_p == o.moe_p &&
               moe_inv_p == o.moe_inv_p && moe_fc == o.moe_fc && moe_e == o.moe_e && moe_miss == o.moe_miss &&
               moe_shared == o.moe_shared && moe_wm == o.moe_wm && moe_am == o.moe_am;
    }
};

struct CostTables {
    std::vector<double> g;   // [n_tokens]
    std::vector<double> gc;  // [n_tokens * 3]
    std::vector<double> l;   // [n_seqs]
    std::vector<double> lc;  // [n_seqs * 3]
    double kdec = 0.0;                            // K: decode-attention seconds per decode pair
    std::array<double, 3> kdec_cost{0.0, 0.0, 0.0};  // K as (seconds, FLOPs, compute seconds) per pair
    AttentionConstants attn;
    StepConstants step;         // the scalar step-time formula's constants
    std::vector<int64_t> menu;  // the pricer's own chunk menu (tokens), in the caller's order

    // Entries of the token-indexed tables (valid indices 0 .. n_tokens() - 1).
    int64_t n_tokens() const { return static_cast<int64_t>(g.size()); }
    // Entries of the sequence-indexed tables (valid indices 0 .. n_seqs() - 1).
    int64_t n_seqs() const { return static_cast<int64_t>(l.size()); }
};

}  // namespace kairos
