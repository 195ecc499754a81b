// ObservationLayout.values (env/observation.py) and ActionLayout.mask (env/actions.py), expression by expression.
#include "portable_math.hpp"
#include "observation.hpp"

#include <cmath>

#include "pull.hpp"

namespace kairos {

namespace {
double dbl(int64_t v) { return static_cast<double>(v); }
}  // namespace

int64_t obs_size(int64_t P, int64_t D, int64_t K, bool oracle, bool pull, bool faults) {
    return 2 + (oracle ? 2 : 1) + (pull ? 1 : 0) + 5 * P + 12 * D + 2 * D * K + (faults ? P + D + 1 : 0);
}

void encode_observation(const DecisionMenu& m, const ObsParams& p, float* out) {
    float* v = out;
    auto put = [&v](double x) { *v++ = static_cast<float>(x); };
    const double ttft = p.ttft, tbt = p.tbt, budget = p.budget, ld = p.log_den;
    put(p.ttft_slo / (p.ttft_slo + p.ttft_slo_scale));
    put(p.tbt_slo / (p.tbt_slo + p.tbt_slo_scale));
    put(pmath::log1p(dbl(m.prompt)) * ld);
    if (p.oracle) put(m.output >= 0 ? pmath::log1p(dbl(m.output)) * ld : 0.0);
    if (p.pull) put(m.kind == DECISION_PULL ? 1.0 : 0.0);
    for (int64_t i = 0; i < m.P; ++i) {
        double qt = dbl(m.prefill_i[static_cast<size_t>(2 * i)]);
        double qr = dbl(m.prefill_i[static_cast<size_t>(2 * i + 1)]);
        double w = m.prefill_f[static_cast<size_t>(2 * i)];
        double t = m.ttft_p[static_cast<size_t>(i)];
        put(qt / (qt + p.queue_tokens_scale));
        put(qr / (qr + p.queue_requests_scale));
        put(w / (w + ttft));
        put(m.prefill_f[static_cast<size_t>(2 * i + 1)]);
        put(std::isinf(t) ? 1.0 : t / (t + ttft));  // inf: another node than a pull candidate's (ratio -> 1)
    }
    for (int64_t j = 0; j < m.D; ++j) {
        const int64_t* di = &m.decode_i[static_cast<size_t>(5 * j)];
        const double* df = &m.decode_f[static_cast<size_t>(4 * j)];
        const uint8_t* db = &m.decode_b[static_cast<size_t>(2 * j)];
        double b = dbl(di[0]), c = dbl(di[1]), pa = dbl(di[2]), rem = dbl(di[4]);
        double r = df[1] / budget;
        put(b / (b + p.batch_scale));
        put(c / (c + p.context_scale));
        put(pa / (pa + p.pending_scale));
        put(df[0]);
        put(db[0] ? 1.0 : 0.0);
        put(rem / (rem + p.remaining_scale));
        put(df[3]);
        put((1.0 - r) / (1.0 + r));
        put(db[1] ? 1.0 : 0.0);
        if (m.ls_ok[static_cast<size_t>(j)]) {
            double lt = m.ls_t[static_cast<size_t>(j)];
            put(1.0);
            put(lt / (lt + ttft));
            put(dbl(m.ls_first[static_cast<size_t>(j)]) * p.inv_max_chunk);
        } else {
            put(0.0);
            put(1.0);
            put(0.0);
        }
    }
    const size_t dk = static_cast<size_t>(m.D * m.K);
    for (size_t i = 0; i < dk; ++i) {
        double x = m.step_s[i];
        put(x / (x + tbt));
    }
    for (size_t i = 0; i < dk; ++i) {
        double x = m.ttft_d[i];
        put(x / (x + ttft));
    }
    if (p.faults) {  // availability (faults.hpp)
        for (int64_t i = 0; i < m.P; ++i) put(m.up_p[static_cast<size_t>(i)] ? 1.0 : 0.0);
        for (int64_t j = 0; j < m.D; ++j) put(m.up_d[static_cast<size_t>(j)] ? 1.0 : 0.0);
        put(m.kind == DECISION_REENTRY ? 1.0 : 0.0);  // a re-entry decision (reentry.cpp)
    }
}

void action_mask(const DecisionMenu& m, int64_t W, int8_t* out) {
    out[0] = 1;
    for (int64_t j = 0; j < m.D; ++j) {
        int8_t ok = m.decode_b[static_cast<size_t>(2 * j + 1)] ? 1 : 0;
        for (int64_t k = 0; k < W; ++k) out[1 + j * W + k] = ok;
    }
}

}  // namespace kairos
