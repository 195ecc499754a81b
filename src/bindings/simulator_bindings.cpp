// Bindings of the native simulator (src/core/simulator.hpp): kairos_gym._core.Simulator. Per-request columns
// are zero-copy, read-only numpy views that keep their arrays alive (a reset allocates new arrays, so views of
// an earlier run stay valid). Driven by kairos_gym/sim/native_engine.py; times in seconds, sizes in tokens.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <string>

#include "simulator.hpp"

namespace nb = nanobind;
using namespace kairos;

namespace {

template <class T>
using View = nb::ndarray<nb::numpy, const T, nb::ndim<1>>;

template <class T>
View<T> view_of(const std::vector<T>& v, std::shared_ptr<const void> keep) {
    auto* holder = new std::shared_ptr<const void>(std::move(keep));
    nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::shared_ptr<const void>*>(p); });
    size_t shape[1] = {v.size()};
    return View<T>(v.data(), 1, shape, owner);
}

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> copy_of(const std::vector<T>& v) {
    auto* buf = new T[v.size() ? v.size() : 1];
    if (!v.empty()) std::memcpy(buf, v.data(), v.size() * sizeof(T));
    nb::capsule owner(buf, [](void* p) noexcept { delete[] static_cast<T*>(p); });
    size_t shape[1] = {v.size()};
    return nb::ndarray<nb::numpy, T, nb::ndim<1>>(buf, 1, shape, owner);
}

using F64 = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I64 = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Table = nb::ndarray<const double, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu>;

template <class T, class A>
std::vector<T> to_vector(const A& a) {
    return std::vector<T>(a.data(), a.data() + a.shape(0));
}

std::vector<Cost3> to_table(const Table& t) {
    std::vector<Cost3> out(t.shape(0));
    for (size_t i = 0; i < t.shape(0); ++i) out[i] = Cost3{t(i, 0), t(i, 1), t(i, 2)};
    return out;
}

template <class T>
T get(const nb::dict& d, const char* key) {
    if (!d.contains(key)) throw nb::key_error(key);
    return nb::cast<T>(d[key]);
}

CoreConfig config_from(const nb::dict& c) {
    CoreConfig cfg;
    cfg.n_prefill = get<int64_t>(c, "n_prefill");
    cfg.n_decode = get<int64_t>(c, "n_decode");
    cfg.decode_max_batch = get<int64_t>(c, "decode_max_batch");
    cfg.prefill_token_budget = get<int64_t>(c, "prefill_token_budget");
    cfg.ttft_includes_transfer = get<bool>(c, "ttft_includes_transfer");
    cfg.tbt_s = get<double>(c, "tbt_s");
    cfg.ls_budget_s = get<double>(c, "ls_budget_s");
    cfg.menu = get<std::vector<int64_t>>(c, "menu");
    cfg.menu_desc = get<std::vector<int64_t>>(c, "menu_desc");
    cfg.max_deflections_per_node = get<int64_t>(c, "max_deflections_per_node");
    cfg.kv.swap = get<bool>(c, "swap");
    cfg.kv.block = get<int64_t>(c, "kv_block_tokens");
    cfg.swap_bandwidth = get<double>(c, "swap_bandwidth");
    cfg.transfer_bandwidth = get<double>(c, "transfer_bandwidth");
    cfg.transfer_setup_s = get<double>(c, "transfer_setup_s");
    cfg.transfer_enabled = get<bool>(c, "transfer_enabled");
    cfg.kv_capacity = get<int64_t>(c, "kv_capacity");
    cfg.max_context = get<int64_t>(c, "max_context");
    cfg.kv_bytes_per_token = get<int64_t>(c, "kv_bytes_per_token");
    cfg.kv_bytes_per_token_per_gpu = get<double>(c, "kv_bytes_per_token_per_gpu");
    return cfg;
}

CostTablesI tables_from(const nb::dict& t) {
    CostTablesI tab;
    tab.gc = to_table(get<Table>(t, "gc"));
    tab.lc = to_table(get<Table>(t, "lc"));
    auto k = get<std::vector<double>>(t, "kcost");
    if (k.size() != 3) throw nb::value_error("tables: kcost needs 3 values");
    tab.kcost = Cost3{k[0], k[1], k[2]};
    tab.apf_c = get<double>(t, "apf_c");
    tab.kv_m = get<double>(t, "kv_m");
    tab.p = get<double>(t, "p");
    tab.inv_p = get<double>(t, "inv_p");
    tab.attn_pf_pair = get<double>(t, "attn_pf_pair");
    tab.peak_c_attn_pf = get<double>(t, "peak_c_attn_pf");
    return tab;
}

nb::object request_column(const Simulator& s, const std::string& name) {
    const RequestsPtr& R = s.requests();
    if (!R) throw nb::value_error("simulator: not reset");
    std::shared_ptr<const void> keep = R;
    const Requests& r = *R;
    if (name == "path") return nb::cast(view_of(r.path, keep));
    if (name == "first_token") return nb::cast(view_of(r.first_token, keep));
    if (name == "finish") return nb::cast(view_of(r.finish, keep));
    if (name == "prefill_start") return nb::cast(view_of(r.prefill_start, keep));
    if (name == "prefill_end") return nb::cast(view_of(r.prefill_end, keep));
    if (name == "exec_s") return nb::cast(view_of(r.exec_s, keep));
    if (name == "xfer_start") return nb::cast(view_of(r.xfer_start, keep));
    if (name == "xfer_end") return nb::cast(view_of(r.xfer_end, keep));
    if (name == "p_node") return nb::cast(view_of(r.p_node, keep));
    if (name == "d_node") return nb::cast(view_of(r.d_node, keep));
    if (name == "max_gap") return nb::cast(view_of(r.max_gap, keep));
    if (name == "kv_moved") return nb::cast(view_of(r.kv_moved, keep));
    if (name == "last_tok") return nb::cast(view_of(r.last_tok, keep));
    if (name == "ctx_base") return nb::cast(view_of(r.ctx_base, keep));
    if (name == "end_step") return nb::cast(view_of(r.end_step, keep));
    if (name == "gap_own") return nb::cast(view_of(r.gap_own, keep));
    if (name == "from_rec") return nb::cast(view_of(r.from_rec, keep));
    const WorkloadPtr& W = s.workload();
    std::shared_ptr<const void> wkeep = W;
    if (name == "arrival") return nb::cast(view_of(W->arrival, wkeep));
    if (name == "prompt") return nb::cast(view_of(W->prompt, wkeep));
    if (name == "output") return nb::cast(view_of(W->output, wkeep));
    throw nb::key_error(("no request column " + name).c_str());
}

}  // namespace

void bind_simulator(nb::module_& m) {
    nb::exception<NotImplementedSlice>(m, "NotImplementedSlice", PyExc_NotImplementedError);

    nb::class_<Simulator>(m, "Simulator", "The native discrete-event simulator (see kairos_gym/sim/native_engine.py).")
        .def("__init__",
             [](Simulator* self, const nb::dict& config, const nb::dict& tables) {
                 new (self) Simulator(config_from(config), tables_from(tables));
             },
             nb::arg("config"), nb::arg("tables"))
        .def("reset",
             [](Simulator& s, const F64& arrival, const I64& prompt, const I64& output) {
                 s.reset(make_workload(to_vector<double>(arrival), to_vector<int64_t>(prompt),
                                       to_vector<int64_t>(output)));
             },
             nb::arg("arrival"), nb::arg("prompt"), nb::arg("output"),
             "Start a run of this workload (float64 arrival s, int64 prompt and output tokens).")
        .def("next_decision", &Simulator::next_decision,
             "Run events to the next decision (True; pending_rid names the request) or to the end (False).")
        .def("apply_prefill", &Simulator::apply_prefill, nb::arg("node"),
             "Route the pending request to prefill node `node` (-1: the shortest queue).")
        .def("apply_deflect", &Simulator::apply_deflect, nb::arg("node"), nb::arg("chunk"),
             "Deflect the pending request; a refusal falls back to the shortest queue and returns False.")
        .def("node_refuses", &Simulator::node_refuses, nb::arg("node"), nb::arg("need"),
             "0 when decode node `node` accepts a deflection reserving `need` KV tokens, else 1 (deflection in "
             "flight), 2 (batch full) or 3 (memory).")
        .def("kv_need", &Simulator::kv_need, nb::arg("rid"))
        .def("column", &request_column, nb::arg("name"), "A per-request column as a read-only numpy view.")
        .def_prop_ro("pending_rid", &Simulator::pending_rid)
        .def_prop_ro("now", &Simulator::now)
        .def_prop_ro("n", &Simulator::n)
        .def_prop_ro("done", &Simulator::done)
        .def_prop_ro("events_pushed", &Simulator::events_pushed)
        .def_ro("waiting", &Simulator::waiting)
        .def_ro("wait_area", &Simulator::wait_area)
        .def_ro("tbt_violations", &Simulator::tbt_violations)
        .def_ro("tokens_out", &Simulator::tokens_out)
        .def_ro("n_decisions", &Simulator::n_decisions)
        .def_ro("n_invalid", &Simulator::n_invalid)
        .def_ro("n_finished", &Simulator::n_finished)
        .def_ro("n_rejected", &Simulator::n_rejected)
        .def_ro("n_preemptions", &Simulator::n_preemptions)
        .def_ro("swap_bytes", &Simulator::swap_bytes)
        .def_rw("trace_on", &Simulator::trace_on)
        .def("trace",
             [](const Simulator& s) {
                 nb::list out;
                 for (const TraceRecord& r : s.trace) out.append(nb::make_tuple(r.t, r.kind, r.a, r.b, r.wait_area));
                 return out;
             },
             "Every popped event as (t, kind, a, b, wait_area after it) when trace_on.")
        .def("stats",
             [](const Simulator& s) {
                 const RunStatsI& st = s.stats();
                 return nb::make_tuple(copy_of(st.s_t0), copy_of(st.s_dt), copy_of(st.s_n), copy_of(st.s_w),
                                       copy_of(st.gap_v), copy_of(st.gap_w));
             },
             "Token-gap records (s_t0, s_dt, s_n, s_w, gap_v, gap_w) as numpy copies.")
        .def("prefill_state",
             [](const Simulator& s, int64_t i) {
                 if (i < 0 || i >= static_cast<int64_t>(s.pnodes().size())) throw nb::index_error("prefill node");
                 const PrefillNode& p = s.pnodes()[static_cast<size_t>(i)];
                 return nb::make_tuple(p.queued_tokens, static_cast<int64_t>(p.queue.size()), p.busy_until,
                                       p.has_step, p.step_tokens, p.q_pairs, p.q_kv, p.step_pairs, p.step_kv,
                                       p.util_ewma, p.util_t, p.busy_s, p.compute_s, p.flops);
             },
             nb::arg("node"),
             "(queued_tokens, queued_requests, busy_until, has_step, step_tokens, q_pairs, q_kv, step_pairs, "
             "step_kv, util_ewma, util_t, busy_s, compute_s, flops) of prefill node `node`.")
        .def("decode_state",
             [](const Simulator& s, int64_t i) {
                 if (i < 0 || i >= static_cast<int64_t>(s.dnodes().size())) throw nb::index_error("decode node");
                 const DecodeNode& d = s.dnodes()[static_cast<size_t>(i)];
                 nb::list l;
                 for (nb::object o :
                      {nb::cast(d.batch_size), nb::cast(d.sum_ctx), nb::cast(d.mode), nb::cast(d.start),
                       nb::cast(d.t0), nb::cast(d.dt), nb::cast(d.n), nb::cast(static_cast<int64_t>(d.pending.size())),
                       nb::cast(d.incoming), nb::cast(d.kv_reserved), nb::cast(d.kv_capacity), nb::cast(d.has_defl),
                       nb::cast(d.defl.prompt - d.defl.done), nb::cast(d.util_ewma), nb::cast(d.util_t),
                       nb::cast(d.busy_s), nb::cast(d.compute_s), nb::cast(d.flops)})
                     l.append(o);
                 return nb::tuple(l);
             },
             nb::arg("node"),
             "(batch_size, sum_ctx, mode, start, t0, dt, n, pending, incoming, kv_reserved, kv_capacity, "
             "has_defl, defl_remaining, util_ewma, util_t, busy_s, compute_s, flops) of decode node `node`.");
}
