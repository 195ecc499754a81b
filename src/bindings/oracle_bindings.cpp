// Bindings of the C++ base policies and the rollout Oracle (src/core/base_policies.hpp, rollout.hpp):
// _core.BasePolicy, _core.RolloutOracle, _core.candidate_actions, _core.objective. Driven by agents/oracle.py,
// which builds the base-policy specs (dicts) from the Python policies' own constants. Actions are
// (kind 0 prefill / 1 deflect, node or -1, chunk or 0 = LargestSafe) tuples; objectives (n_ok, n_partial).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>

#include "base_policies.hpp"
#include "rollout.hpp"

namespace nb = nanobind;
using namespace kairos;

namespace {

using ActionT = std::tuple<int64_t, int64_t, int64_t>;

ActionT to_tuple(const Action& a) { return {a.kind, a.node, a.chunk}; }
Action from_tuple(const ActionT& t) { return Action{std::get<0>(t), std::get<1>(t), std::get<2>(t)}; }
std::tuple<int64_t, int64_t> obj_tuple(const Objective& o) { return {o.n_ok, o.n_partial}; }

template <class T>
T get_or(const nb::dict& d, const char* key, T fallback) {
    return d.contains(key) ? nb::cast<T>(d[key]) : fallback;
}

const char* const KEYS[] = {"kind", "chunk", "threshold", "unit_requests", "min_pending", "alpha",
                            "beta", "ttft_slo_s", "prefill_budget", "xfer_setup_s", "xfer_per_token_s", "menu_desc"};

BaseSpec spec_from(const nb::dict& d) {
    for (auto item : d) {
        std::string k = nb::cast<std::string>(item.first);
        bool known = false;
        for (const char* key : KEYS) known = known || k == key;
        if (!known) throw nb::value_error(("base policy spec: unknown key " + k).c_str());
    }
    if (!d.contains("kind")) throw nb::value_error("base policy spec: no kind");
    BaseSpec s;
    s.kind = nb::cast<int>(d["kind"]);
    s.chunk = get_or<int64_t>(d, "chunk", 0);
    s.threshold = get_or<double>(d, "threshold", 0.0);
    s.unit_requests = get_or<bool>(d, "unit_requests", false);
    s.min_pending = get_or<int64_t>(d, "min_pending", 1);
    s.alpha = get_or<double>(d, "alpha", 1.3);
    s.beta = get_or<double>(d, "beta", 1.0);
    s.ttft_slo_s = get_or<double>(d, "ttft_slo_s", 1.0);
    s.prefill_budget = get_or<int64_t>(d, "prefill_budget", 8192);
    s.xfer_setup_s = get_or<double>(d, "xfer_setup_s", 0.0);
    s.xfer_per_token_s = get_or<double>(d, "xfer_per_token_s", 0.0);
    s.menu_desc = get_or<std::vector<int64_t>>(d, "menu_desc", {});
    return s;
}

}  // namespace

void bind_oracle(nb::module_& m) {
    m.attr("BASE_NO_DEFLECT") = BASE_NO_DEFLECT;
    m.attr("BASE_KAIROS_EXACT") = BASE_KAIROS_EXACT;
    m.attr("BASE_ALWAYS_DEFLECT") = BASE_ALWAYS_DEFLECT;
    m.attr("BASE_SQ") = BASE_SQ;
    m.attr("BASE_SL") = BASE_SL;
    m.attr("BASE_PENDING_SWITCH") = BASE_PENDING_SWITCH;
    nb::class_<BaseDecider>(m, "BasePolicy", "A base policy decided inside the core (src/core/base_policies.hpp).")
        .def("__init__",
             [](BaseDecider* self, const Simulator& like, const nb::dict& spec) {
                 new (self) BaseDecider(spec_from(spec), like.pricer());
             },
             nb::arg("like"), nb::arg("spec"),
             "like: a _core.Simulator of the scenario (its pricer is copied); spec: dict (kind, chunk, threshold, "
             "unit_requests, min_pending, and Kairos's alpha, beta, ttft_slo_s, prefill_budget, xfer_setup_s, xfer_per_token_s, "
             "menu_desc).")
        .def("decide", [](BaseDecider& b, const Simulator& s) {
                 if (s.pending_rid() < 0) throw nb::value_error("BasePolicy.decide: no pending decision");
                 return to_tuple(b.decide(s.menu()));
             }, nb::arg("sim"), "The action for sim's pending decision (kind, node, chunk).")
        .def("run", [](BaseDecider& b, Simulator& s) { return run_base(s, b); }, nb::arg("sim"),
             "Run sim to the end under this policy; returns the decisions taken.");
    nb::class_<RolloutOracle>(m, "RolloutOracle", "The clairvoyant rollout Oracle (src/core/rollout.hpp).")
        .def("__init__",
             [](RolloutOracle* self, const Simulator& like, const nb::list& bases, double ttft, double tbt,
                bool fixed_chunks, int64_t threads, bool exhaustive, bool reference) {
                 std::vector<BaseSpec> specs;
                 for (nb::handle h : bases) specs.push_back(spec_from(nb::cast<nb::dict>(h)));
                 new (self) RolloutOracle(like, std::move(specs), ttft, tbt, fixed_chunks, threads, exhaustive,
                                          reference);
             },
             nb::arg("like"), nb::arg("bases"), nb::arg("ttft_slo_s"), nb::arg("tbt_slo_s"), nb::arg("fixed_chunks"),
             nb::arg("threads") = 1, nb::arg("exhaustive") = false, nb::arg("reference") = false,
             "like: a _core.Simulator of the scenario (config and pricer copied into each scratch simulator); "
             "bases: base-policy spec dicts in tie-break order; SLOs in seconds (the simulator's); fixed_chunks: "
             "also try every menu size; threads: the rollouts of one decision run on this many threads (the same "
             "result for any); exhaustive: every rollout to the end (else the bounded search: the same decisions); "
             "reference (with exhaustive): the Oracle before its exact constant-factor savings, a cost baseline "
             "(rollout.hpp).")
        .def("decide",
             [](RolloutOracle& o, const Simulator& s) {
                 Action a;
                 {  // rollout threads may grow a pricer's tables, which calls Python: they need the GIL free
                     nb::gil_scoped_release free;
                     a = o.decide(s);
                 }
                 return to_tuple(a);
             },
             nb::arg("sim"),
             "The action for sim's pending decision (sim is not changed).")
        .def("rollout",
             [](RolloutOracle& o, const Simulator& s, const ActionT& a, size_t b) {
                 return obj_tuple(o.rollout(s, from_tuple(a), b));
             },
             nb::arg("sim"), nb::arg("action"), nb::arg("base"),
             "(n_ok, n_partial) of `action` then base `base` to the end, from sim's pending decision.")
        .def("run",
             [](RolloutOracle& o, Simulator& s) {
                 Objective r;
                 {
                     nb::gil_scoped_release free;
                     r = o.run(s);
                 }
                 return obj_tuple(r);
             },
             nb::arg("sim"),
             "Decide and apply every decision of sim to its end; (n_ok, n_partial) of the finished run.")
        .def_prop_ro("stats",
                     [](const RolloutOracle& o) {
                         const OracleStats& s = o.stats();
                         nb::dict d;
                         d["n_decisions"] = s.n_decisions;
                         d["n_searched"] = s.n_searched;
                         d["n_rollouts"] = s.n_rollouts;
                         d["n_candidates"] = s.n_candidates;
                         d["n_pruned"] = s.n_pruned;
                         d["n_reused"] = s.n_reused;
                         d["n_rollout_decisions"] = s.n_rollout_decisions;
                         d["n_stopped_decisions"] = s.n_stopped_decisions;
                         d["n_stopped_remaining"] = s.n_stopped_remaining;
                         return d;
                     })
        .def("reset_stats", &RolloutOracle::reset_stats)
        .def("last_candidates", [](const RolloutOracle& o) {
                 std::vector<ActionT> out;
                 for (const Action& a : o.last_candidates()) out.push_back(to_tuple(a));
                 return out;
             })
        .def("last_scores", [](const RolloutOracle& o) {
                 std::vector<std::tuple<int64_t, int64_t>> out;
                 for (const Objective& x : o.last_scores()) out.push_back(obj_tuple(x));
                 return out;
             }, "Per candidate and base (row-major) of the last searched decision: (n_ok, n_partial).")
        .def_prop_ro("n_bases", &RolloutOracle::n_bases)
        .def_prop_ro("n_threads", &RolloutOracle::n_threads)
        .def_prop_ro("exhaustive", &RolloutOracle::exhaustive)
        .def_prop_ro("reference", &RolloutOracle::reference);
    m.attr("MAX_ROLLOUT_THREADS") = MAX_ROLLOUT_THREADS;
    m.def("candidate_actions",
          [](const Simulator& s, bool fixed_chunks) {
              if (s.pending_rid() < 0) throw nb::value_error("candidate_actions: no pending decision");
              std::vector<ActionT> out;
              for (const Action& a : candidate_actions(s, fixed_chunks)) out.push_back(to_tuple(a));
              return out;
          },
          nb::arg("sim"), nb::arg("fixed_chunks"), "The Oracle's deduplicated candidates at sim's pending decision.");
    m.def("objective",
          [](const Simulator& s, double ttft, double tbt) { return obj_tuple(objective(s, ttft, tbt)); },
          nb::arg("sim"), nb::arg("ttft_slo_s"), nb::arg("tbt_slo_s"), "(n_ok, n_partial) of sim's run so far.");
    m.def("score_so_far", [](const Simulator& s) { return obj_tuple(score_so_far(s)); }, nb::arg("sim"),
          "(n_ok, n_partial) of sim's run so far from its run counters (the simulator's SLOs).");
    m.def("score_bound", [](const Simulator& s) { return obj_tuple(score_bound(s)); }, nb::arg("sim"),
          "An upper bound (n_ok, n_partial) on sim's final objective: requests not yet known to miss counted as met.");
}
