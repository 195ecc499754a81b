// The realistic information track (see information.hpp): the noise stream, the dispatcher's copy of the nodes
// and the served menu. With staleness_s = 0 and model_error = 0 the served menu is bit for bit build_menu's
// (every decision refreshes, every factor is 1.0): tests/sim/test_information_track.py holds it so.
// Times in seconds, sizes in tokens.
#include <algorithm>
#include <cmath>
#include <limits>

#include "portable_math.hpp"
#include "simulator.hpp"

namespace kairos {

namespace {
double dbl(int64_t v) { return static_cast<double>(v); }

uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr double PI = 3.14159265358979323846;
}  // namespace

// ---------------------------------------------------------------- the noise stream
void NoiseRng::seed(uint64_t x) {
    for (uint64_t& w : s) w = splitmix64(x);
}

uint64_t NoiseRng::next() {  // xoshiro256** 1.0
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double NoiseRng::uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

double NoiseRng::normal() {
    const double u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * pmath::log(u1)) * pmath::cos(2.0 * PI * u2);
}

// ---------------------------------------------------------------- the dispatcher's copy
void Simulator::refresh_view() {
    DispatcherView& v = info_.view;
    const double now = now_;
    auto decayed = [now](double ewma, double t) {  // as build_menu
        return now <= t ? ewma : ewma * pmath::exp(-(now - t) / UTIL_WINDOW_S);
    };
    v.p = pnodes_;
    v.p_util.resize(pnodes_.size());
    for (size_t i = 0; i < pnodes_.size(); ++i) v.p_util[i] = decayed(pnodes_[i].util_ewma, pnodes_[i].util_t);
    v.d.resize(dnodes_.size());
    for (size_t i = 0; i < dnodes_.size(); ++i) refresh_decode_copy(i);
    v.refreshed_at = now;
    v.valid = true;
    info_.n_refreshes += 1;
}

// One decode node's copy, as of now (refresh_view; and a pull's freed node, whose "slot free" signal carries its
// state: the dispatcher learns it with the signal).
void Simulator::refresh_decode_copy(size_t i) {
    const double now = now_;
    auto decayed = [now](double ewma, double t) {  // as build_menu
        return now <= t ? ewma : ewma * pmath::exp(-(now - t) / UTIL_WINDOW_S);
    };
    const DecodeNode& d = dnodes_[i];
    DecodeCopy& c = info_.view.d[i];
    // progress now, mid-stretch included (as build_menu)
    c.B = d.batch_size;
    c.sctx = batch_context_now(d, c.wait_boundary);
    c.pending = static_cast<int64_t>(d.pending.size()) + d.incoming;
    c.slots = d.batch_size + static_cast<int64_t>(d.pending.size()) + d.incoming +
              static_cast<int64_t>(d.swapped.size()) + d.swapping_in;
    c.kv_reserved = d.kv_reserved;
    c.kv_capacity = d.kv_capacity;
    c.remaining = d.has_defl ? d.defl.prompt - d.defl.done : 0;
    c.in_flight = d.has_defl;
    c.refused = false;
    c.util = decayed(d.util_ewma, d.util_t);
}

void Simulator::note_prefill(int64_t pn, int64_t rid) {
    if (!info_.view.valid) return;  // no decision served yet (a replay starts at a decision: never here)
    info_.view.p[static_cast<size_t>(pn)].enqueue(rid, pre_len(rid));
}

void Simulator::note_deflect(int64_t d, int64_t rid, bool ok) {
    if (!info_.view.valid) return;
    DecodeCopy& c = info_.view.d[static_cast<size_t>(d)];
    if (ok) {
        c.in_flight = true;
        c.remaining = pre_len(rid);
        return;
    }
    if (menu_.decode_b[static_cast<size_t>(2 * d + 1)]) info_.n_stale_refusals += 1;  // offered, then refused
    c.refused = true;
    // the refused request takes the shortest (true) prefill queue (apply_deflect); the dispatcher routed it
    const int64_t sq = shortest_queue();  // -1: no prefill node up (faults), the request is held
    if (sq >= 0) info_.view.p[static_cast<size_t>(sq)].enqueue(rid, pre_len(rid));
}

// A pull answered (pull.cpp): a pulled request leaves its prefill queue in the copy and marks the freed node busy;
// a refused pull leaves the request where it is and marks the node refusing (as a refused deflection).
void Simulator::note_pull(int64_t d, int64_t rid, int64_t pn, bool ok) {
    if (!info_.view.valid) return;
    DecodeCopy& c = info_.view.d[static_cast<size_t>(d)];
    if (!ok) {
        if (menu_.decode_b[static_cast<size_t>(2 * d + 1)]) info_.n_stale_refusals += 1;
        c.refused = true;
        return;
    }
    c.in_flight = true;
    c.remaining = wl_->prompt[rid];
    info_.view.p[static_cast<size_t>(pn)].remove_unstarted(rid, pre_len(rid));  // absent: nothing to undo
}

// ---------------------------------------------------------------- the served menu (build_menu's twin)
void Simulator::build_served_menu(int64_t rid) {
    InfoState& I = info_;
    const InfoConfig& ic = cfg_.info;
    if (!I.view.valid || now_ - I.view.refreshed_at >= ic.staleness_s) refresh_view();
    const DispatcherView& v = I.view;
    DecisionMenu& m = menu_;
    const int64_t P = m.P, D = m.D;
    I.factors.assign(static_cast<size_t>(P + D), 1.0);
    if (ic.model_error > 0.0) {
        const double sigma = ic.model_error * std::sqrt(PI / 2.0);
        for (double& f : I.factors) f = std::max(MIN_ERROR_FACTOR, 1.0 + sigma * I.rng.normal());
    }
    const int64_t prompt = pre_len(rid);  // the tokens its prefill builds (the prompt but for a re-entry)
    double own = 0.0, xfer = 0.0;
    menu_request_terms(rid, own, xfer);
    for (int64_t i = 0; i < P; ++i) {
        const PrefillNode& node = v.p[static_cast<size_t>(i)];
        const double f = I.factors[static_cast<size_t>(i)];
        double w = prefill_wait_at(node, v.refreshed_at);  // the wait as of the refresh (plus added prompts)
        m.prefill_i[2 * i] = node.queued_tokens;
        m.prefill_i[2 * i + 1] = static_cast<int64_t>(node.queue.size());
        m.prefill_f[2 * i] = w * f;
        m.prefill_f[2 * i + 1] = v.p_util[static_cast<size_t>(i)];
        m.ttft_p[i] = (w + own + xfer) * f;
    }
    const double tbt = cfg_.tbt_s;
    const double budget = cfg_.ls_budget_s;
    std::vector<MenuTerm> terms = pricer_.menu_terms(prompt, cfg_.menu);
    const int64_t need = kv_need(rid);
    std::vector<double> firsts, totals;
    std::vector<int64_t> sizes;
    for (int64_t di = 0; di < D; ++di) {
        const DecodeCopy& c = v.d[static_cast<size_t>(di)];
        const double f = I.factors[static_cast<size_t>(P + di)];
        const int64_t B = c.B;
        const double pairs = dbl(c.sctx + B);
        pricer_.menu_rows(B, pairs, terms, c.wait_boundary, firsts, totals);
        // the noisy model's schedule: each step's predicted time, times f, within the budget
        std::pair<bool, double> ls = pricer_.largest_safe(B, pairs, prompt, budget / f, cfg_.menu_desc, 0, sizes);
        for (int64_t k = 0; k < m.K; ++k) {
            m.step_s[static_cast<size_t>(di * m.K + k)] = firsts[static_cast<size_t>(k)] * f;
            m.ttft_d[static_cast<size_t>(di * m.K + k)] = totals[static_cast<size_t>(k)] * f;
        }
        m.ls_ok[di] = ls.first ? 1 : 0;
        m.ls_t[di] = ls.first ? (c.wait_boundary + ls.second) * f : std::numeric_limits<double>::infinity();
        m.ls_first[di] = (ls.first && !sizes.empty()) ? sizes[0] : 0;
        int64_t* di_row = &m.decode_i[static_cast<size_t>(5 * di)];
        di_row[0] = B;
        di_row[1] = c.sctx;
        di_row[2] = c.pending;
        di_row[3] = c.kv_capacity - c.kv_reserved;
        di_row[4] = c.remaining;
        double* df = &m.decode_f[static_cast<size_t>(4 * di)];
        df[0] = 1.0 - dbl(c.kv_reserved) / dbl(c.kv_capacity);
        df[1] = pricer_.step(B, pairs, 0, 0) * f;
        df[2] = tbt;
        df[3] = c.util;
        m.decode_b[static_cast<size_t>(2 * di)] = c.in_flight ? 1 : 0;
        // the admission test of node_refuses, on the copy
        const bool can = cfg_.max_deflections_per_node >= 1 && !c.in_flight && !c.refused &&
                         c.slots < cfg_.decode_max_batch && c.kv_reserved + need <= c.kv_capacity;
        m.decode_b[static_cast<size_t>(2 * di + 1)] = can ? 1 : 0;
    }
}

}  // namespace kairos
