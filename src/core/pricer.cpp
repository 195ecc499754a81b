// Pricer: literal translations of kairos_gym/latency/pricing.py's ChunkPricer methods (see pricer.hpp).
// Each Python expression keeps its evaluation order and its int/float typing: `a + b + c` is (a + b) + c,
// `x += a + b` is x + (a + b), an int * float converts the int first, an int product of three is exact.
#include "portable_math.hpp"
#include "pricer.hpp"

#include <algorithm>
#include <cmath>

namespace kairos {

namespace {

// Python's float(a * b * c) for ints: the exact product, rounded once to the nearest double. |a*b*c| < 2^64
// here (a <= 2^24 decode requests, b, c <= 2^24 chunks), within 128 bits.
inline double exact_product(int64_t a, int64_t b, int64_t c) {
    // int64 when the product fits (the common case: one rounding int64 -> double, the same value and rounding as
    // the 128-bit path, whose conversion is a libgcc call), else exact 128-bit
    int64_t ab, abc;
    if (!__builtin_mul_overflow(a, b, &ab) && !__builtin_mul_overflow(ab, c, &abc)) return static_cast<double>(abc);
    return static_cast<double>(static_cast<__int128>(a) * b * c);
}

inline uint64_t pack(int64_t a, int64_t b) {  // a, b in [0, 2^24]: a unique key
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b);
}

std::string range_text(int64_t lo, int64_t hi, const char* unit) {
    return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (" + unit + ")";
}

// The checks run on every pricing call: the test is inlined, the throw is out of line (cold).
[[noreturn]] __attribute__((noinline, cold)) void count_error(const char* where, const char* field, int64_t v,
                                                             int64_t lo, const char* unit) {
    throw PricerInputError(where, field, static_cast<double>(v), true, range_text(lo, kMaxTableIndex, unit));
}

[[noreturn]] __attribute__((noinline, cold)) void pairs_error(const char* where, const char* field, double v) {
    throw PricerInputError(where, field, v, false, "a finite number in [0, 2^50] (decode pairs)");
}

inline void check_count(const char* where, const char* field, int64_t v, int64_t lo, const char* unit = "tokens") {
    if (__builtin_expect(v < lo || v > kMaxTableIndex, 0)) count_error(where, field, v, lo, unit);
}

inline void check_pairs(const char* where, const char* field, double v) {
    if (__builtin_expect(!(v >= 0.0 && v <= kMaxPairs), 0)) pairs_error(where, field, v);  // NaN fails too
}

}  // namespace

PricerInputError::PricerInputError(std::string where_, std::string field_, double value_, bool integral_,
                                   std::string allowed_)
    : std::invalid_argument(where_ + ": " + field_ + " is not valid; allowed: " + allowed_),
      where(std::move(where_)),
      field(std::move(field_)),
      value(value_),
      integral(integral_),
      allowed(std::move(allowed_)) {}

Pricer::Pricer(std::shared_ptr<const CostTables> tables, GrowFn grow) : grow_(std::move(grow)) {
    if (!tables) throw TableError("pricer: no cost tables");
    for (int64_t c : tables->menu) {
        check_count("pricer", "menu size", c, 1);
        auto it = std::lower_bound(slots_.begin(), slots_.end(), std::make_pair(c, size_t(0)));
        if (it == slots_.end() || it->first != c) {
            slots_.insert(it, {c, cum_.size()});
            cum_.push_back({c, {0.0}});
        }
    }
    load(std::move(tables));
}

void Pricer::load(std::shared_ptr<const CostTables> t) {
    if (t->n_tokens() < 1 || t->n_seqs() < 2 || t->gc.size() != 3 * t->g.size() || t->lc.size() != 3 * t->l.size()) {
        throw TableError("pricer: malformed cost tables (need g[T], gc[3T], l[S], lc[3S], T >= 1, S >= 2)");
    }
    t_ = std::move(t);
    g_ = t_->g.data();
    gc_ = t_->gc.data();
    l_ = t_->l.data();
    lc_ = t_->lc.data();
    nt_ = t_->n_tokens();
    ns_ = t_->n_seqs();
    kd_ = t_->kdec;
    ac_ = t_->attn;
    sc_ = t_->step;
}

void Pricer::grow(int64_t token_index, int64_t seq_index, const char* where) {
    if (token_index > kMaxTableIndex) {
        throw PricerInputError(where, "tokens of a step", static_cast<double>(token_index), true,
                               range_text(0, kMaxTableIndex, "tokens"));
    }
    if (seq_index > kMaxTableIndex) {
        throw PricerInputError(where, "sequences of a step", static_cast<double>(seq_index), true,
                               range_text(0, kMaxTableIndex, "sequences"));
    }
    if (!grow_) {
        throw TableError(std::string(where) + ": index past the cost tables (tokens " + std::to_string(token_index) +
                         " of " + std::to_string(nt_) + ", sequences " + std::to_string(seq_index) + " of " +
                         std::to_string(ns_) + ") and no grow callback");
    }
    std::shared_ptr<const CostTables> t = grow_(std::max(token_index, nt_ - 1), std::max(seq_index, ns_ - 1));
    if (!t || t->n_tokens() <= token_index || t->n_seqs() <= seq_index) {
        throw TableError(std::string(where) + ": the grow callback returned tables shorter than asked");
    }
    const AttentionConstants& a = t->attn;
    if (t->menu != t_->menu || t->kdec != kd_ || t->kdec_cost != t_->kdec_cost || a.apf_c != ac_.apf_c ||
        a.kv_m != ac_.kv_m || a.p != ac_.p || a.inv_p != ac_.inv_p || a.attn_pf_pair != ac_.attn_pf_pair ||
        a.peak_c_attn_pf != ac_.peak_c_attn_pf || !(t->step == sc_)) {
        throw TableError(std::string(where) + ": the grow callback returned tables of another model or menu");
    }
    load(std::move(t));
    ++grow_count_;
}

long Pricer::menu_slot(int64_t chunk) const {
    auto it = std::lower_bound(slots_.begin(), slots_.end(), std::make_pair(chunk, size_t(0)));
    return (it != slots_.end() && it->first == chunk) ? static_cast<long>(it->second) : -1;
}

double Pricer::base(int64_t n_tokens, int64_t n_seqs) {
    check_count("base", "n_tokens", n_tokens, 0);
    check_count("base", "n_seqs", n_seqs, 0, "sequences");
    ensure(n_tokens, n_seqs, "base");
    return g_[n_tokens] + l_[n_seqs];
}

Cost3 Pricer::base_cost(int64_t n_tokens, int64_t n_seqs) {
    check_count("base_cost", "n_tokens", n_tokens, 0);
    check_count("base_cost", "n_seqs", n_seqs, 0, "sequences");
    ensure(n_tokens, n_seqs, "base_cost");
    const double* g = gc_ + 3 * n_tokens;
    const double* ll = lc_ + 3 * n_seqs;
    return {g[0] + ll[0], g[1] + ll[1], g[2] + ll[2]};
}

double Pricer::attn_time(double pf_pairs, double kv_read) const {
    if (pf_pairs <= 0.0) return 0.0;  // StepLatencyModel._pf_attention_time
    if (!(pf_pairs <= kMaxPairs)) {
        throw PricerInputError("attn_time", "pf_pairs", pf_pairs, false, "a finite number <= 2^50 (prefill pairs)");
    }
    if (!(kv_read >= 0.0 && kv_read <= kMaxPairs)) {
        throw PricerInputError("attn_time", "kv_read", kv_read, false, "a finite number in [0, 2^50] (tokens)");
    }
    return attn_pnorm(pf_pairs, kv_read);
}

// (pf_pairs apf_c)^p + (kv_read kv_m)^p)^(1/p), memoised: pf_pairs > 0 and kv_read >= 0, finite.
double Pricer::attn_pnorm(double pf_pairs, double kv_read) const {
    if (const double* hit = value_memos_ ? pnorm_memo_.find(pf_pairs, kv_read) : nullptr) return *hit;
    const double p = ac_.p;
    const double v = pmath::pow(pmath::pow(pf_pairs * ac_.apf_c, p) + pmath::pow(kv_read * ac_.kv_m, p), ac_.inv_p);
    if (!value_memos_) return v;
    if (pnorm_memo_.size() >= kMemoLimit) pnorm_memo_.clear();
    pnorm_memo_.emplace(pf_pairs, kv_read, v);
    return v;
}

// step_time_fast's running sum through the terms of T and n_seqs (fixed, element-wise, GEMMs, LM head, MoE), in
// its order, memoised: finite T in [0, 2^24] and n_seqs in [0, 2^16] (model_time checks them).
double Pricer::dense_time(double n_tokens, double n_seqs) const {
    if (const double* hit = value_memos_ ? dense_memo_.find(n_tokens, n_seqs) : nullptr) return *hit;
    const double T = n_tokens;
    const double p = ac_.p;
    const double ip = ac_.inv_p;
    double t = sc_.fixed_s + T * sc_.ew_ar_tok;
    for (const StepConstants::Gemm& gm : sc_.gemms) {
        t += gm.count * pmath::pow(pmath::pow(T * gm.fc, p) + pmath::pow(gm.w + T * gm.am, p), ip);
    }
    t += pmath::pow(pmath::pow(n_seqs * sc_.lm_fc, p) + pmath::pow(sc_.lm_wm, p), ip);
    if (sc_.moe) {
        const double pm = sc_.moe_p;
        const double tc = T * sc_.moe_fc;
        const double experts = sc_.moe_e * (1.0 - pmath::pow(sc_.moe_miss, T)) + sc_.moe_shared;
        const double tm = experts * sc_.moe_wm + T * sc_.moe_am;
        t += pmath::pow(pmath::pow(tc, pm) + pmath::pow(tm, pm), sc_.moe_inv_p);
    }
    if (!value_memos_) return t;
    if (dense_memo_.size() >= kMemoLimit) dense_memo_.clear();
    dense_memo_.emplace(n_tokens, n_seqs, t);
    return t;
}

Cost3 Pricer::attn_cost(double pf_pairs, double kv_read) const {
    if (pf_pairs <= 0.0) return {0.0, 0.0, 0.0};
    const double t = attn_time(pf_pairs, kv_read);  // StepLatencyModel._pf_attention_cost
    const double fl = pf_pairs * ac_.attn_pf_pair;
    return {t, fl, fl / ac_.peak_c_attn_pf};
}

double Pricer::model_time(double n_tokens, double n_seqs, double dec_pairs, double pf_pairs, double kv_read) const {
    const char* where = "model_time";
    if (!(n_tokens >= 0.0 && n_tokens <= static_cast<double>(kMaxTableIndex))) {
        throw PricerInputError(where, "n_tokens", n_tokens, false, "a finite number in [0, 16777216] (tokens)");
    }
    if (!(n_seqs >= 0.0 && n_seqs <= kMaxSeqs)) {
        throw PricerInputError(where, "n_seqs", n_seqs, false, "a finite number in [0, 65536] (sequences)");
    }
    if (!(dec_pairs >= 0.0 && dec_pairs <= kMaxPairs)) {
        throw PricerInputError(where, "dec_pairs", dec_pairs, false, "a finite number in [0, 2^50] (decode pairs)");
    }
    if (!(pf_pairs >= 0.0 && pf_pairs <= kMaxPairs)) {
        throw PricerInputError(where, "pf_pairs", pf_pairs, false, "a finite number in [0, 2^50] (prefill pairs)");
    }
    if (!(kv_read >= 0.0 && kv_read <= kMaxPairs)) {
        throw PricerInputError(where, "kv_read_tokens", kv_read, false, "a finite number in [0, 2^50] (tokens)");
    }
    // StepLatencyModel.step_time_fast, line by line: the dense terms' running sum (memoised), then attention
    const double p = ac_.p;
    const double ip = ac_.inv_p;
    double t = dense_time(n_tokens, n_seqs);
    if (pf_pairs > 0.0) {
        t += attn_pnorm(pf_pairs, kv_read);
    }
    if (dec_pairs > 0.0) {
        t += pmath::pow(pmath::pow(dec_pairs * sc_.adec_c, p) + pmath::pow(dec_pairs * ac_.kv_m, p), ip);
    }
    return t;
}

void Pricer::own_memos() {
    attn_memo_ = std::make_shared<FlatMemo>(*attn_memo_);
    terms_memo_ = std::make_shared<std::unordered_map<int64_t, std::vector<MenuTerm>>>(*terms_memo_);
}

bool Pricer::share_memos_from(const Pricer& o) {
    const AttentionConstants& a = ac_;
    const AttentionConstants& b = o.ac_;
    // the attention memo's values are a function of (chunk, prefix) and these constants only
    if (!(a.apf_c == b.apf_c && a.kv_m == b.kv_m && a.p == b.p && a.inv_p == b.inv_p)) return false;
    attn_memo_ = o.attn_memo_;
    // the menu terms are a function of the prompt, the own menu and the attention memo's function
    if (t_->menu == o.t_->menu) terms_memo_ = o.terms_memo_;
    return true;
}

double Pricer::attn(int64_t chunk, int64_t prefix) {
    check_count("attn", "chunk", chunk, 0);
    check_count("attn", "prefix", prefix, 0);
    const uint64_t key = pack(chunk, prefix);
    if (const double* hit = attn_memo_->find(key)) return *hit;
    // self.model._pf_attention_time(chunk * (prefix + (chunk + 1) / 2.0), float(prefix + chunk))
    const double pf = static_cast<double>(chunk) *
                      (static_cast<double>(prefix) + static_cast<double>(chunk + 1) / 2.0);
    const double v = attn_time(pf, static_cast<double>(prefix + chunk));
    if (attn_memo_->size() >= kMemoLimit) attn_memo_->clear();
    attn_memo_->emplace(key, v);
    return v;
}

double Pricer::step(int64_t n_decode, double dec_pairs, int64_t chunk, int64_t prefix) {
    check_count("step", "n_decode", n_decode, 0, "decode requests");
    check_pairs("step", "dec_pairs", dec_pairs);
    check_count("step", "chunk", chunk, 0);
    check_count("step", "prefix", prefix, 0);
    if (chunk <= 0) {
        if (n_decode == 0) return 0.0;
        return base(n_decode, n_decode) + kd_ * dec_pairs;
    }
    return base(n_decode + chunk, n_decode + 1) + kd_ * dec_pairs + attn(chunk, prefix);
}

double Pricer::cum_attn(size_t slot, int64_t n) {
    std::vector<double>& cum = cum_[slot].sums;
    const int64_t chunk = cum_[slot].chunk;
    while (static_cast<int64_t>(cum.size()) <= n) {
        const int64_t i = static_cast<int64_t>(cum.size()) - 1;
        const double next = cum.back() + attn(chunk, i * chunk);
        cum.push_back(next);
    }
    return cum[static_cast<size_t>(n)];
}

Schedule Pricer::fixed_schedule(int64_t n_decode, double dec_pairs, int64_t prompt, int64_t chunk, int64_t done) {
    const char* where = "fixed_schedule";
    check_count(where, "n_decode", n_decode, 0, "decode requests");
    check_pairs(where, "dec_pairs", dec_pairs);
    check_count(where, "prompt", prompt, 0);
    check_count(where, "chunk", chunk, 1);
    check_count(where, "done", done, 0);
    const int64_t rest = prompt - done;
    if (rest <= 0) return {0.0, 0.0, 0};
    const long slot = menu_slot(chunk);
    if (slot >= 0 && done % chunk == 0) {
        const int64_t n_full = rest / chunk;
        const int64_t r = rest % chunk;
        const int64_t n = n_full + (r ? 1 : 0);
        const int64_t i0 = done / chunk;
        const int64_t c1 = rest >= chunk ? chunk : rest;
        const double kd = kd_;
        const double first = base(n_decode + c1, n_decode + 1) + kd * dec_pairs + attn(c1, done);
        double total = kd * (static_cast<double>(n) * dec_pairs + exact_product(n_decode, n, n - 1) / 2.0);
        if (n_full) {
            total += static_cast<double>(n_full) * base(n_decode + chunk, n_decode + 1);
            total += cum_attn(static_cast<size_t>(slot), i0 + n_full) - cum_attn(static_cast<size_t>(slot), i0);
        }
        if (r) {
            total += base(n_decode + r, n_decode + 1) + attn(r, done + n_full * chunk);
        }
        return {first, total, n};
    }
    double total = 0.0;
    double first = 0.0;
    int64_t k = done;
    int64_t i = 0;
    const double kd = kd_;
    while (k < prompt) {
        const int64_t c = prompt - k >= chunk ? chunk : prompt - k;
        const double s = base(n_decode + c, n_decode + 1) + kd * (dec_pairs + static_cast<double>(i * n_decode)) +
                         attn(c, k);
        if (i == 0) first = s;
        total += s;
        k += c;
        i += 1;
    }
    return {first, total, i};
}

double Pricer::prefill_alone(int64_t prompt, int64_t budget) {
    check_count("prefill_alone", "prompt", prompt, 0);
    check_count("prefill_alone", "budget", budget, 1);
    const uint64_t key = pack(prompt, budget);
    if (const double* hit = alone_memo_.find(key)) return *hit;
    double t = 0.0;
    int64_t done = 0;
    while (done < prompt) {
        const int64_t c = prompt - done > budget ? budget : prompt - done;
        t += base(c, 1) + attn(c, done);
        done += c;
    }
    if (alone_memo_.size() >= kMemoLimit) alone_memo_.clear();
    alone_memo_.emplace(key, t);
    return t;
}

std::vector<MenuTerm> Pricer::menu_terms(int64_t prompt, const std::vector<int64_t>& menu) {
    std::vector<MenuTerm> scratch;
    return menu_terms_ref(prompt, menu, scratch);
}

const std::vector<MenuTerm>& Pricer::menu_terms_ref(int64_t prompt, const std::vector<int64_t>& menu,
                                                    std::vector<MenuTerm>& scratch) {
    check_count("menu_terms", "prompt", prompt, 0);
    for (int64_t c : menu) check_count("menu_terms", "menu size", c, 1);
    const bool own_menu = menu == t_->menu;
    if (own_menu) {
        auto it = terms_memo_->find(prompt);
        if (it != terms_memo_->end()) return it->second;
    }
    std::vector<MenuTerm>& out = scratch;
    out.clear();
    out.reserve(menu.size());
    for (int64_t c : menu) {
        const int64_t n_full = prompt / c;
        const int64_t r = prompt % c;
        const int64_t n = n_full + (r ? 1 : 0);
        if (n_full) {
            const long slot = menu_slot(c);
            if (slot < 0) {
                throw PricerInputError("menu_terms", "menu size", static_cast<double>(c), true,
                                       "a size of the pricer's own chunk menu (its attention prefix sums)");
            }
            const std::vector<double>& cum = cum_[static_cast<size_t>(slot)].sums;
            const double full = static_cast<int64_t>(cum.size()) > n_full ? cum[static_cast<size_t>(n_full)]
                                                                          : cum_attn(static_cast<size_t>(slot), n_full);
            const double first = attn(c, 0);
            const double rest = r ? attn(r, n_full * c) : 0.0;
            out.push_back({c, n_full, r, n, first, full, rest});
        } else {
            out.push_back({c, 0, r, 1, attn(r, 0), 0.0, 0.0});
        }
    }
    if (own_menu) {
        if (terms_memo_->size() >= kMemoLimit) terms_memo_->clear();
        return terms_memo_->emplace(prompt, out).first->second;
    }
    return out;
}

void Pricer::menu_rows(int64_t n_decode, double dec_pairs, const std::vector<MenuTerm>& terms, double wait_s,
                       std::vector<double>& firsts, std::vector<double>& totals) {
    const char* where = "menu_rows";
    check_count(where, "n_decode", n_decode, 0, "decode requests");
    check_pairs(where, "dec_pairs", dec_pairs);
    int64_t top = n_decode;
    for (const MenuTerm& m : terms) {
        check_count(where, "term chunk", m.chunk, 1);
        check_count(where, "term n_full", m.n_full, 0, "chunks");
        check_count(where, "term rest", m.rest, 0);
        check_count(where, "term n_chunks", m.n_chunks, 0, "chunks");
        top = std::max(top, n_decode + (m.n_full ? m.chunk : m.rest));
    }
    ensure(top, n_decode + 1, where);
    const double* g = g_;
    const double kd = kd_;
    const double l1 = l_[n_decode + 1];
    const double dp = kd * dec_pairs;
    firsts.resize(terms.size());
    totals.resize(terms.size());
    for (size_t i = 0; i < terms.size(); ++i) {
        const MenuTerm& m = terms[i];
        const int64_t n = m.n_chunks;
        double total;
        if (m.n_full) {
            const double bc = g[n_decode + m.chunk] + l1;
            firsts[i] = bc + dp + m.first_attn_s;
            total = static_cast<double>(m.n_full) * bc + m.full_attn_s;
            if (m.rest) total += g[n_decode + m.rest] + l1 + m.rest_attn_s;
        } else {
            total = g[n_decode + m.rest] + l1 + m.first_attn_s;
            firsts[i] = total + dp;
        }
        totals[i] = wait_s + (total + kd * (static_cast<double>(n) * dec_pairs +
                                            exact_product(n_decode, n, n - 1) / 2.0));
    }
}

std::pair<bool, double> Pricer::largest_safe(int64_t n_decode, double dec_pairs, int64_t prompt, double budget_s,
                                             const std::vector<int64_t>& menu_desc, int64_t done,
                                             std::vector<int64_t>& sizes) {
    const char* where = "largest_safe";
    check_count(where, "n_decode", n_decode, 0, "decode requests");
    check_pairs(where, "dec_pairs", dec_pairs);
    check_count(where, "prompt", prompt, 0);
    check_count(where, "done", done, 0);
    int64_t top = 0;
    for (int64_t c : menu_desc) {
        check_count(where, "menu size", c, 1);
        top = std::max(top, c);
    }
    ensure(n_decode + top, n_decode + 1, where);
    sizes.clear();
    const double kd = kd_;
    const double* g = g_;
    const double l1 = l_[n_decode + 1];
    double total = 0.0;
    int64_t k = done;
    int64_t i = 0;
    size_t j = 0;
    const size_t n_menu = menu_desc.size();
    while (k < prompt) {
        const int64_t rest = prompt - k;
        const double pairs = dec_pairs + static_cast<double>(i * n_decode);
        int64_t c;
        double s;
        while (true) {
            if (j >= n_menu) return {false, total};
            c = menu_desc[j];
            if (c > rest) c = rest;
            const double a = attn(c, k);
            s = g[n_decode + c] + l1 + kd * pairs + a;
            if (s <= budget_s) break;
            if (c < menu_desc[j]) {  // the remainder itself does not fit: a smaller size might
                j += 1;
                continue;
            }
            j += 1;
        }
        sizes.push_back(c);
        total += s;
        k += c;
        i += 1;
    }
    return {true, total};
}

}  // namespace kairos
