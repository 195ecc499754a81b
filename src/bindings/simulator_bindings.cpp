// Bindings of the simulator (src/core/simulator.hpp): kairos_gym._core.Simulator and its typed config
// (CoreConfig). Per-request columns (request_columns.hpp) are zero-copy, read-only numpy views that keep their
// arrays alive (a reset allocates new arrays, so views of an earlier run stay valid). Driven by
// kairos_gym/sim/simulator.py; times in seconds, sizes in tokens.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>

#include "request_columns.hpp"
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

template <class T, class A>
std::vector<T> to_vector(const A& a) {
    return std::vector<T>(a.data(), a.data() + a.shape(0));
}

// A read-only view of a decision-menu buffer (fixed size for the simulator's life), kept alive by `owner`.
template <class T, class S>
nb::ndarray<nb::numpy, const T> menu_view(const std::vector<S>& v, std::initializer_list<size_t> shape,
                                         nb::handle owner) {
    static_assert(sizeof(T) == sizeof(S), "menu_view: element sizes differ");
    return nb::ndarray<nb::numpy, const T>(reinterpret_cast<const T*>(v.data()), shape, owner);
}

// Owner<&C::m>: the struct C a column member pointer belongs to (Workload or Requests).
template <class M>
struct Owner;
template <class C, class T>
struct Owner<T C::*> {
    using type = C;
};

// A per-request column (request_columns.hpp REQUEST_COLUMNS) as a read-only numpy view keeping its arrays alive.
nb::object request_column(const Simulator& s, const std::string& name) {
    const RequestsPtr& R = s.requests();
    if (!R) throw nb::value_error("simulator: not reset");
    for (const ColumnDef& c : REQUEST_COLUMNS) {
        if (name != c.name) continue;
        return std::visit(
            [&](auto member) -> nb::object {
                if constexpr (std::is_same_v<typename Owner<decltype(member)>::type, Workload>) {
                    const WorkloadPtr& W = s.workload();
                    return nb::cast(view_of(((*W).*member).v, W));
                } else {
                    return nb::cast(view_of(((*R).*member).v, R));
                }
            },
            c.ref);
    }
    throw nb::key_error(("no request column " + name).c_str());
}

// ---- the scenario's constants (simulator.hpp CoreConfig, kv_memory.hpp KvPolicy, information.hpp InfoConfig):
// typed classes with read/write fields of the C++ names, filled by kairos_gym/sim/simulator.py
void bind_config(nb::module_& m) {
    nb::class_<KvPolicy>(m, "KvPolicy", "KV memory policy of the decode nodes (kv_memory.hpp); sizes in tokens.")
        .def(nb::init<>())
        .def_rw("swap", &KvPolicy::swap, "memory_policy swap (else reserve).")
        .def_rw("block", &KvPolicy::block, "KV block size (tokens; cluster.kv_block_tokens).")
        .def_rw("fifo", &KvPolicy::fifo, "swap_order fifo (else lifo).");
    nb::class_<InfoConfig>(m, "InfoConfig", "The information track (information.hpp): what the menu serves.")
        .def(nb::init<>())
        .def_rw("realistic", &InfoConfig::realistic, "The realistic track (else exact).")
        .def_rw("staleness_s", &InfoConfig::staleness_s, "Refresh period of the dispatcher's copy (s).")
        .def_rw("model_error", &InfoConfig::model_error, "Mean absolute relative error of a served prediction.");
    nb::class_<CoreConfig>(m, "CoreConfig",
                           "The scenario's constants the simulator runs with (simulator.hpp): times in seconds, sizes "
                           "in tokens, bandwidths in bytes/s. kv and info are read/write references to the nested "
                           "KvPolicy and InfoConfig.")
        .def(nb::init<>())
        .def_rw("n_prefill", &CoreConfig::n_prefill)
        .def_rw("n_decode", &CoreConfig::n_decode)
        .def_rw("decode_max_batch", &CoreConfig::decode_max_batch)
        .def_rw("prefill_token_budget", &CoreConfig::prefill_token_budget)
        .def_rw("ttft_includes_transfer", &CoreConfig::ttft_includes_transfer)
        .def_rw("tbt_s", &CoreConfig::tbt_s)
        .def_rw("ls_budget_s", &CoreConfig::ls_budget_s)
        .def_rw("menu", &CoreConfig::menu)
        .def_rw("menu_desc", &CoreConfig::menu_desc)
        .def_rw("max_deflections_per_node", &CoreConfig::max_deflections_per_node)
        .def_rw("kv", &CoreConfig::kv)
        .def_rw("swap_bandwidth", &CoreConfig::swap_bandwidth)
        .def_rw("transfer_bandwidth", &CoreConfig::transfer_bandwidth)
        .def_rw("transfer_setup_s", &CoreConfig::transfer_setup_s)
        .def_rw("transfer_enabled", &CoreConfig::transfer_enabled)
        .def_rw("kv_capacity", &CoreConfig::kv_capacity)
        .def_rw("max_context", &CoreConfig::max_context)
        .def_rw("kv_bytes_per_token", &CoreConfig::kv_bytes_per_token)
        .def_rw("kv_bytes_per_token_per_gpu", &CoreConfig::kv_bytes_per_token_per_gpu)
        .def_rw("info", &CoreConfig::info)
        .def_rw("pull", &CoreConfig::pull)
        .def_rw("admit_max_waiting", &CoreConfig::admit_max_waiting)
        .def_rw("admit_max_ttft_s", &CoreConfig::admit_max_ttft_s)
        .def_rw("timeout_s", &CoreConfig::timeout_s)
        .def_rw("reentry_policy", &CoreConfig::reentry_policy)
        .def_rw("ttft_slo_s", &CoreConfig::ttft_slo_s)
        .def_rw("score_from", &CoreConfig::score_from, "slo.burn_in_requests: requests with rid < score_from are "
                "simulated but not scored.")
        .def_rw("stream_slots", &CoreConfig::stream_slots)
        .def_rw("sketch_alpha", &CoreConfig::sketch_alpha);
}

// ---- faults (src/core/faults.hpp): the run's fault events, what they did, node availability
void bind_faults(nb::class_<Simulator>& cls) {
    cls.def("set_faults",
            [](Simulator& s, const std::vector<double>& t, const std::vector<int64_t>& kind,
               const std::vector<int64_t>& node, const std::vector<double>& factor) {
                if (kind.size() != t.size() || node.size() != t.size() || factor.size() != t.size())
                    throw nb::value_error("set_faults: the four lists differ in length");
                if (static_cast<int64_t>(t.size()) > MAX_FAULT_EVENTS)
                    throw nb::value_error("set_faults: more than MAX_FAULT_EVENTS events");
                std::vector<FaultEvent> f(t.size());
                for (size_t i = 0; i < t.size(); ++i) {
                    if (kind[i] < 0 || kind[i] >= F_KIND_COUNT) throw nb::value_error("set_faults: fault kind");
                    f[i] = FaultEvent{t[i], static_cast<int8_t>(kind[i]), node[i], factor[i]};
                }
                s.set_faults(std::move(f));
            },
            nb::arg("t"), nb::arg("kind"), nb::arg("node"), nb::arg("factor"),
            "Set the run's fault events (times s sorted, FaultKind codes, node indices, factors) right after reset.")
        .def_prop_ro_static("max_fault_events", [](nb::handle) { return MAX_FAULT_EVENTS; })
        .def("fault_counters",
             [](const Simulator& s) {
                 const FaultCounters& c = s.fault_counters();
                 nb::dict d;
                 d["events"] = c.n_events;
                 d["requeued"] = c.n_requeued;
                 d["transfers_lost"] = c.n_transfers_lost;
                 d["decode_reentries"] = c.n_decode_reentries;
                 d["rerouted"] = c.n_rerouted;
                 d["refused_down"] = c.n_refused_down;
                 d["held"] = c.n_held;
                 d["reentry_decisions"] = c.n_reentry_decisions;
                 d["reentry_deflected"] = c.n_reentry_deflected;
                 d["dropped_timed_out"] = c.n_dropped_timed_out;
                 d["held_now"] = static_cast<int64_t>(s.held().size());
                 return d;
             },
             "What the faults did so far (faults.hpp FaultCounters), plus held_now: requests held right now.")
        .def_prop_ro("reentry_queue_size",
                     [](const Simulator& s) { return static_cast<int64_t>(s.reentry_queue().size()); },
                     "Victims of a failure still waiting for their re-entry decision (faults.reentry: policy).")
        .def("node_up",
             [](const Simulator& s, bool decode, int64_t i) {
                 const int64_t n = decode ? s.config().n_decode : s.config().n_prefill;
                 if (i < 0 || i >= n) throw nb::index_error("node_up: node index");
                 return decode ? s.decode_up(i) : s.prefill_up(i);
             },
             nb::arg("decode"), nb::arg("node"), "Is prefill (decode=False) or decode node `node` up now?")
        .def("menu_up",
             [](nb::handle self) {
                 const DecisionMenu& m = nb::cast<const Simulator&>(self).menu();
                 return nb::make_tuple(menu_view<bool>(m.up_p, {static_cast<size_t>(m.P)}, self),
                                       menu_view<bool>(m.up_d, {static_cast<size_t>(m.D)}, self));
             },
             "Read-only views (up_p [P], up_d [D], bool) of the decision menu's availability rows.");
}

// ---- snapshot/restore: _core.SimSnapshot, an opaque copy of a simulator's mutable state; the decision log and
// its replay (pickling)
void bind_snapshot(nb::module_& m, nb::class_<Simulator>& cls) {
    nb::class_<SimSnapshot>(m, "SimSnapshot",
                            "An opaque copy of a simulator's mutable state (Simulator.snapshot); the workload "
                            "is shared, everything else copied. Restore it with Simulator.restore (reusable).")
        .def_prop_ro("n_decisions", [](const SimSnapshot& s) { return s.c.n_decisions; })
        .def_prop_ro("now", [](const SimSnapshot& s) { return s.now; });
    cls.def("set_rollout_mode", &Simulator::set_rollout_mode, nb::arg("on"),
            "The rollout Oracle's scratch-simulator setting (simulator.hpp): exact-track menus carry only what the "
            "native base policies read and the utilization proxy is not tracked. Same physics and records; for "
            "tests and the Oracle, not for a run a Python policy decides.")
        .def_prop_ro("rollout_mode", &Simulator::rollout_mode);
    cls.def("snapshot", &Simulator::snapshot, "A copy of the mutable state (a _core.SimSnapshot).")
        .def("restore", &Simulator::restore, nb::arg("state"),
             "Return to a state from snapshot() (the snapshot stays reusable); per-request arrays are new: re-read "
             "the columns.")
        .def("decision_log",
             [](const Simulator& s) {
                 const auto& log = s.decision_log();
                 std::vector<int64_t> flat;
                 flat.reserve(4 * log.size());
                 for (const LoggedDecision& d : log) {
                     flat.push_back(d.rid);
                     flat.push_back(d.kind);
                     flat.push_back(d.node);
                     flat.push_back(d.chunk);
                 }
                 return copy_of(flat);
             },
             "Every decision applied since the reset as a flat int64 copy of (rid, kind, node asked for or -1, "
             "chunk or 0) quadruples; kinds: pull.hpp LOG_*.")
        .def("replay",
             [](Simulator& s, nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> log) {
                 if (log.shape(1) != 4) throw nb::value_error("replay: the log must have shape [n, 4]");
                 std::vector<LoggedDecision> decisions(log.shape(0));
                 const int64_t* v = log.data();
                 for (size_t i = 0; i < decisions.size(); ++i)
                     decisions[i] = LoggedDecision{v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]};
                 s.replay(decisions);
             },
             nb::arg("log"),
             "Apply a decision log (int64 [n, 4], as decision_log() gives it) to this freshly reset run, checking "
             "each decision is the one pending; RuntimeError naming the request where the replay diverged.");
}

// ---- debug API (tests; Simulator.debug_* in Python): see simulator.hpp
void bind_debug(nb::class_<Simulator>& cls) {
    cls.def("debug_join", &Simulator::debug_join, nb::arg("node"), nb::arg("rid"), nb::arg("ctx"), nb::arg("rem"),
            nb::arg("gap"))
        .def("debug_leave", &Simulator::debug_leave, nb::arg("node"), nb::arg("rid"))
        .def("debug_record", &Simulator::debug_record, nb::arg("node"), nb::arg("worst"))
        .def("debug_worst_gap", &Simulator::debug_worst_gap, nb::arg("node"), nb::arg("rid"))
        .def("debug_blocks", &Simulator::debug_blocks, nb::arg("node"), nb::arg("extra"),
             "(KV-block tokens of the node's batch after `extra` more steps by a pass over the batch, the same from "
             "the node's aggregates or -1 where it keeps none): swap policy")
        .def("debug_set_stack_prune", &Simulator::debug_set_stack_prune, nb::arg("n"))
        .def("debug_push", &Simulator::debug_push, nb::arg("t"), nb::arg("kind"), nb::arg("a"), nb::arg("b"))
        .def("debug_prefill_wait", &Simulator::debug_prefill_wait, nb::arg("node"));
}

}  // namespace

namespace {
// ---- streaming metrics (streaming_metrics.hpp): the folded summary and the retired rows of a streaming run
nb::dict sketch_dict(const LogSketch& s, const std::vector<double>& qs) {
    nb::dict d;
    d["n"] = s.total();
    nb::list ps;
    for (double q : qs) ps.append(s.percentile(q));
    d["p"] = ps;
    return d;
}

void bind_streaming(nb::class_<Simulator>& cls) {
    cls.def("stream_summary",
            [](const Simulator& s) {
                const StreamSummary& S = s.stream();
                nb::dict d;
                std::vector<double> q4 = {50, 90, 95, 99}, q3 = {50, 95, 99}, q2 = {50, 95}, q1 = {95};
                d["ttft"] = sketch_dict(S.ttft, q4);
                d["e2e"] = sketch_dict(S.e2e, q2);
                d["tbt"] = sketch_dict(s.stats().sketch(), q3);
                d["ttft_prefill"] = sketch_dict(S.ttft_prefill, q1);
                d["queue"] = sketch_dict(S.queue, q1);
                d["exec"] = sketch_dict(S.exec, q1);
                d["transfer"] = sketch_dict(S.transfer, q1);
                d["ttft_sum"] = S.ttft_sum.value();
                d["tpot_sum"] = S.tpot_sum.value();
                d["queue_sum"] = S.queue_sum.value();
                d["exec_sum"] = S.exec_sum.value();
                d["transfer_sum"] = S.transfer_sum.value();
                d["decode_wait_sum"] = S.decode_wait_sum.value();
                d["n_done"] = S.n_done;
                d["n_tpot"] = S.n_tpot;
                d["n_prefill_done"] = S.n_prefill_done;
                d["n_ok"] = S.n_ok;
                d["n_tbt_ok"] = S.n_tbt_ok;
                d["output_tokens"] = S.output_tokens;
                d["n_routed"] = S.n_routed;
                d["n_deflect"] = S.n_deflect;
                d["kv_moved"] = S.kv_moved;
                d["n_retired"] = S.n_retired;
                d["makespan"] = S.makespan;
                nb::dict h;
                for (const auto& kv : S.chunk_hist) h[nb::cast(kv.first)] = kv.second;
                d["chunk_hist"] = h;
                d["sketch_buckets"] = S.ttft.n_buckets();
                return d;
            },
            "Streaming mode: the run's folded summary (sums, counts, sketch percentiles; streaming_metrics.hpp).")
        .def_rw("stream_rows", &Simulator::stream_rows,
                "Streaming mode: buffer every retired request's row for take_rows (a streamed --requests-csv).")
        .def_prop_ro("n_rows", &Simulator::n_rows)
        .def("take_rows",
             [](Simulator& s) {
                 std::vector<RetiredRow> rows = s.take_rows();
                 nb::list out;
                 for (const RetiredRow& r : rows) {
                     nb::list ch;
                     for (int64_t c : r.chunks) ch.append(c);
                     out.append(nb::make_tuple(r.rid, r.arrival, r.prompt, r.output, r.path, r.p_node, r.d_node,
                                               r.first_token, r.finish, r.prefill_start, r.exec_s, r.xfer_start,
                                               r.xfer_end, r.max_gap, r.kv_moved, r.timed_out, ch));
                 }
                 return out;
             },
             "The rows retired since the last call as tuples (rid, arrival, prompt, output, path, p_node, d_node, "
             "first_token, finish, prefill_start, exec_s, xfer_start, xfer_end, max_gap, kv_moved, timed_out, "
             "chunks); they are then forgotten.")
        .def_prop_ro("request_slots", [](const Simulator& s) { return s.requests() ? s.requests()->slots() : 0; },
                     "Per-request slots the core holds (n in exact mode, the ring's size in streaming mode).")
        .def_prop_ro("gap_records", [](const Simulator& s) {
            const RunStats& st = s.stats();
            return static_cast<int64_t>(st.s_n.size() + st.gap_v.size());
        }, "Token-gap records held (0 in streaming mode: the gaps go into a sketch).");
}

}  // namespace

void bind_simulator(nb::module_& m) {
    bind_config(m);
    nb::list names;
    for (const ColumnDef& c : REQUEST_COLUMNS) names.append(c.name);
    m.attr("REQUEST_COLUMNS") = nb::tuple(names);

    nb::class_<Simulator> cls(m, "Simulator", "The discrete-event simulator (see kairos_gym/sim/simulator.py).");
    bind_snapshot(m, cls);
    bind_debug(cls);
    bind_streaming(cls);
    bind_faults(cls);
    cls.def("__init__",
             [](Simulator* self, const CoreConfig& config, const Pricer& pricer, bool oracle) {
                 new (self) Simulator(config, pricer, oracle);
                 self->own_pricer_memos();  // one pricer may build many simulators (pricing.shared_pricer)
             },
             nb::arg("config"), nb::arg("pricer"), nb::arg("oracle"),
             "config: the scenario's constants (a CoreConfig); pricer: a _core.Pricer over the "
             "scenario's compiled cost tables (copied: tables shared, memos copied, so simulators of one pricer share no "
             "mutable state); oracle: show output lengths.")
        .def("reset",
             [](Simulator& s, const F64& arrival, const I64& prompt, const I64& output) {
                 s.reset(make_workload(to_vector<double>(arrival), to_vector<int64_t>(prompt),
                                       to_vector<int64_t>(output)));
             },
             nb::arg("arrival"), nb::arg("prompt"), nb::arg("output"),
             "Start a run of this workload (float64 arrival s, int64 prompt and output tokens).")
        .def("next_decision", &Simulator::next_decision,
             "Run events to the next decision (True; pending_rid names the request) or to the end (False).")
        // chunked workloads (src/core/workload.hpp; kairos_gym/workload/chunked.py)
        .def("reset_chunked",
             [](Simulator& s, const F64& arrival, const I64& prompt, const I64& output, int64_t slots, bool last) {
                 std::shared_ptr<Workload> w = make_workload_ring(slots);
                 append_chunk(*w, to_vector<double>(arrival), to_vector<int64_t>(prompt), to_vector<int64_t>(output),
                              last, [](int64_t) { return true; });
                 s.reset_chunked(std::move(w));
             },
             nb::arg("arrival"), nb::arg("prompt"), nb::arg("output"), nb::arg("slots"), nb::arg("last"),
             "Start a run of a chunked workload: a ring of `slots` requests (a power of two) holding this first "
             "chunk (float64 arrival s, int64 tokens); `last`: no chunk follows.")
        .def("append_workload",
             [](Simulator& s, const F64& arrival, const I64& prompt, const I64& output, bool last) {
                 s.append_workload(to_vector<double>(arrival), to_vector<int64_t>(prompt), to_vector<int64_t>(output),
                                   last);
             },
             nb::arg("arrival"), nb::arg("prompt"), nb::arg("output"), nb::arg("last"),
             "Append the next chunk of a chunked workload (checked: ValueError for a whole run, a chunk after the "
             "last, times decreasing across chunks; IndexError when it would overwrite a request in flight).")
        .def("advance", &Simulator::advance,
             "Run events to the next decision (1), to the end (0), or, with a chunked workload, to the point where "
             "the next chunk is needed (2: append_workload, then advance again).")
        .def_prop_ro("chunked", &Simulator::chunked, "True for a run of a chunked workload.")
        .def_prop_ro("workload_complete", [](const Simulator& s) { return s.workload()->complete; },
                     "False while a chunked workload may get more chunks.")
        .def("apply_prefill", &Simulator::apply_prefill, nb::arg("node"),
             "Route the pending request to prefill node `node` (-1: the shortest queue).")
        .def("apply_deflect", &Simulator::apply_deflect, nb::arg("node"), nb::arg("chunk"),
             "Deflect the pending request; a refusal falls back to the shortest queue and returns False.")
        .def("node_refuses", &Simulator::node_refuses, nb::arg("node"), nb::arg("need"),
             "0 when decode node `node` accepts a deflection reserving `need` KV tokens, else 1 (deflection in "
             "flight), 2 (batch full) or 3 (memory).")
        .def("kv_need", &Simulator::kv_need, nb::arg("rid"))
        .def("seed_noise", &Simulator::seed_noise, nb::arg("seed"),
             "Seed the realistic information track's noise stream (after reset, before the first decision).")
        .def_prop_ro("n_refreshes", [](const Simulator& s) { return s.information().n_refreshes; },
                     "Refreshes of the dispatcher's view this run (realistic information track; 0 on exact).")
        .def_prop_ro("n_stale_refusals", [](const Simulator& s) { return s.information().n_stale_refusals; },
                     "Deflections the served view offered (can_deflect) that the node refused at apply time.")
        .def_prop_ro("info_refreshed_at", [](const Simulator& s) {
                         const DispatcherView& v = s.information().view;
                         return v.valid ? v.refreshed_at : std::numeric_limits<double>::quiet_NaN();
                     }, "Time of the dispatcher view's last refresh (s; NaN before the first, and on exact).")
        .def("noise_factors", [](const Simulator& s) { return s.information().factors; },
             "The pending decision's error factors 1 + e: prefill nodes, then decode nodes (empty on exact).")
        .def("column", &request_column, nb::arg("name"),
             "A per-request column (one of REQUEST_COLUMNS) as a read-only numpy view.")
        .def_prop_ro("pending_rid", &Simulator::pending_rid)
        .def_prop_ro("pending_kind", &Simulator::pending_kind, "0: an arrival decision, 1: a pull decision, 2: a re-entry decision (pull.hpp).")
        .def_prop_ro("pull_node", &Simulator::pull_node, "At a pull: the decode node whose slot freed, else -1.")
        .def_prop_ro("n_pull_decisions", [](const Simulator& s) { return s.counters().n_pull_decisions; })
        .def_prop_ro("n_pulled", [](const Simulator& s) { return s.counters().n_pulled; })
        .def_prop_ro("now", &Simulator::now)
        .def_prop_ro("n", &Simulator::n)
        .def_prop_ro("done", &Simulator::done)
        .def_prop_ro("events_pushed", &Simulator::events_pushed)
        .def_prop_ro("waiting", [](const Simulator& s) { return s.counters().waiting; })
        .def_prop_ro("wait_area", [](const Simulator& s) { return s.counters().wait_area; })
        .def_prop_ro("tbt_violations", [](const Simulator& s) { return s.counters().tbt_violations; })
        .def_prop_ro("tokens_out", [](const Simulator& s) { return s.counters().tokens_out; })
        .def_prop_ro("n_decisions", [](const Simulator& s) { return s.counters().n_decisions; })
        .def_prop_ro("n_invalid", [](const Simulator& s) { return s.counters().n_invalid; })
        .def_prop_ro("n_finished", [](const Simulator& s) { return s.counters().n_finished; })
        .def_prop_ro("n_rejected", [](const Simulator& s) { return s.counters().n_rejected; })
        .def_prop_ro("n_rejected_overlong", [](const Simulator& s) { return s.counters().n_rejected_overlong; })
        .def_prop_ro("n_rejected_admission", [](const Simulator& s) { return s.counters().n_rejected_admission; })
        .def_prop_ro("n_timed_out", [](const Simulator& s) { return s.counters().n_timed_out; })
        .def_prop_ro("n_arrived", [](const Simulator& s) { return s.counters().n_arrived; })
        .def_prop_ro("n_preemptions", [](const Simulator& s) { return s.counters().n_preemptions; })
        .def_prop_ro("swap_bytes", [](const Simulator& s) { return s.counters().swap_bytes; })
        .def_prop_ro("grow_count", [](const Simulator& s) { return s.pricer().grow_count(); },
                     "Times the simulator's pricer grew its tables (0 when table_sizes bounded the run).")
        .def("menu_buffers",
             [](nb::handle self) {
                 const DecisionMenu& m = nb::cast<const Simulator&>(self).menu();
                 size_t P = static_cast<size_t>(m.P), D = static_cast<size_t>(m.D), K = static_cast<size_t>(m.K);
                 return nb::make_tuple(
                     menu_view<int64_t>(m.prefill_i, {P, 2}, self), menu_view<double>(m.prefill_f, {P, 2}, self),
                     menu_view<double>(m.ttft_p, {P}, self), menu_view<int64_t>(m.decode_i, {D, 5}, self),
                     menu_view<double>(m.decode_f, {D, 4}, self), menu_view<bool>(m.decode_b, {D, 2}, self),
                     menu_view<double>(m.step_s, {D, K}, self), menu_view<double>(m.ttft_d, {D, K}, self),
                     menu_view<bool>(m.ls_ok, {D}, self), menu_view<double>(m.ls_t, {D}, self),
                     menu_view<int64_t>(m.ls_first, {D}, self));
             },
             "Read-only views of the decision-menu buffers, rewritten at every decision: prefill_i [P, 2], "
             "prefill_f [P, 2], ttft_p [P], decode_i [D, 5], decode_f [D, 4], decode_b [D, 2] (bool), step_s "
             "[D, K], ttft_d [D, K], ls_ok [D] (bool), ls_t [D], ls_first [D] (see decision_menu.hpp).")
        .def("menu_request",
             [](const Simulator& s) {
                 const DecisionMenu& m = s.menu();
                 return nb::make_tuple(m.now, m.rid, m.arrival, m.prompt, m.output, m.kind, m.pull_node, m.gen);
             },
             "(now, rid, arrival, prompt, output or -1, kind 0 arrival / 1 pull / 2 re-entry, pull node or -1, "
             "tokens already emitted) of the last decision's menu.")
        .def_rw("trace_on", &Simulator::trace_on)
        .def("trace",
             [](const Simulator& s) {
                 nb::list out;
                 for (const TraceRecord& r : s.trace) out.append(nb::make_tuple(r.t, r.kind, r.a, r.b, r.wait_area));
                 return out;
             },
             "Every popped event as (t, kind, a, b, wait_area after it) when trace_on.")
        .def("chunks",
             [](const Simulator& s) {
                 const Requests& r = *s.requests();
                 nb::list out;
                 for (size_t i = 0; i < r.chunks.size(); ++i) {
                     if (!r.has_chunks.v[i]) {
                         out.append(nb::none());
                         continue;
                     }
                     nb::list l;
                     for (int64_t c : r.chunks.v[i]) l.append(c);
                     out.append(l);
                 }
                 return out;
             },
             "Per request: None, or the chunk sizes (tokens) of its deflected prefill in order (a new list).")
        .def("stats",
             [](const Simulator& s) {
                 const RunStats& st = s.stats();
                 return nb::make_tuple(copy_of(st.s_t0), copy_of(st.s_dt), copy_of(st.s_n), copy_of(st.s_w),
                                       copy_of(st.gap_v), copy_of(st.gap_w));
             },
             "Token-gap records (s_t0, s_dt, s_n, s_w, gap_v, gap_w) as numpy copies.")
        .def("prefill_state",
             [](const Simulator& s, int64_t i) {
                 if (i < 0 || i >= static_cast<int64_t>(s.pnodes().size())) throw nb::index_error("prefill node");
                 const PrefillNode& p = s.pnodes()[static_cast<size_t>(i)];
                 nb::list queue, step;
                 for (const PrefillItem& q : p.queue) queue.append(nb::make_tuple(q.rid, q.rem, q.done));
                 for (const StepItem& t : p.step) step.append(nb::make_tuple(t.rid, t.chunk, t.prefix));
                 nb::object step_t = p.has_step ? nb::object(nb::tuple(step)) : nb::none();
                 nb::object fields[] = {
                     nb::cast(p.idx), nb::tuple(queue), nb::cast(p.queued_tokens), nb::cast(p.q_pairs),
                     nb::cast(p.q_kv), nb::cast(p.busy_until), step_t, nb::cast(p.step_tokens),
                     nb::cast(p.step_pairs), nb::cast(p.step_kv), nb::cast(p.step_start), nb::cast(p.busy_s),
                     nb::cast(p.compute_s), nb::cast(p.flops), nb::cast(p.util_ewma), nb::cast(p.util_t)};
                 nb::list out;
                 for (nb::object& o : fields) out.append(o);
                 return nb::tuple(out);
             },
             nb::arg("node"), "Prefill node `node`'s state, in the field order of kairos_gym.sim.simulator.PrefillNodeState.")
        .def("decode_state",
             [](const Simulator& s, int64_t i) {
                 if (i < 0 || i >= static_cast<int64_t>(s.dnodes().size())) throw nb::index_error("decode node");
                 const DecodeNode& d = s.dnodes()[static_cast<size_t>(i)];
                 const Requests& R = *s.requests();
                 nb::list batch, heap, fresh, pending, swapped, smax_idx, smax_val;
                 for (int64_t r = d.batch_head; r >= 0; r = R.batch_next[r]) batch.append(r);
                 for (const auto& e : d.heap) heap.append(nb::make_tuple(e.first, e.second));
                 for (int64_t r : d.fresh) fresh.append(r);
                 for (int64_t r : d.pending) pending.append(r);
                 for (int64_t r : d.swapped) swapped.append(r);
                 for (int64_t k : d.smax_idx) smax_idx.append(k);
                 for (double v : d.smax_val) smax_val.append(v);
                 nb::object defl = d.has_defl
                                       ? nb::object(nb::make_tuple(d.defl.rid, d.defl.prompt, d.defl.done, d.defl.chunk))
                                       : nb::none();
                 nb::object fields[] = {
                     nb::cast(d.idx), nb::cast(d.kv_capacity), nb::cast(d.kv_reserved), nb::tuple(batch),
                     nb::cast(d.steps), nb::tuple(heap), nb::tuple(fresh), nb::cast(d.sum_ctx), nb::cast(d.n_rec),
                     nb::tuple(smax_idx), nb::tuple(smax_val), nb::tuple(pending), nb::cast(d.incoming),
                     nb::tuple(swapped), nb::cast(d.swapping_in), defl, nb::cast(d.mode), nb::cast(d.start),
                     nb::cast(d.t0), nb::cast(d.dt), nb::cast(d.n), nb::cast(d.chunk), nb::cast(d.version),
                     nb::cast(d.busy_s), nb::cast(d.compute_s), nb::cast(d.flops), nb::cast(d.util_ewma),
                     nb::cast(d.util_t)};
                 nb::list out;
                 for (nb::object& o : fields) out.append(o);
                 return nb::tuple(out);
             },
             nb::arg("node"), "Decode node `node`'s state, in the field order of kairos_gym.sim.simulator.DecodeNodeState.")
        .def("timeline",
             [](const Simulator& s, size_t start) {
                 nb::list out;
                 const auto& tl = s.timeline;
                 for (size_t i = start; i < tl.size(); ++i) {
                     const TimelineRecord& r = tl[i];
                     std::string label = r.chunk < 0 ? "prefill" : r.chunk == 0 ? "decode" : "chunk" + std::to_string(r.chunk);
                     out.append(nb::make_tuple(r.decode ? "D" : "P", r.node, r.start, r.end, label));
                 }
                 return out;
             },
             nb::arg("start") = 0,
             "Node activity records from index `start` on as (\"P\"|\"D\", node, start s, end s, label) when "
             "record_timeline is on.")
        .def_rw("record_timeline", &Simulator::record_timeline)
        .def("events",
             [](const Simulator& s) {
                 nb::list out;
                 for (const Event& e : s.event_queue().items())
                     out.append(nb::make_tuple(e.t, e.seq, static_cast<int>(e.kind), e.a, e.b));
                 return out;
             },
             "The pending events as (t, seq, kind, a, b) in heap order (a heapq list of those tuples, element "
             "for element).");
}
