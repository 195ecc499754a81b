// Python face of the engine's self-contained components (src/core event_queue, link, run_stats, and the decode
// stretch's steps_within), for the differential tests against their Python counterparts and for the benchmark
// (kairos_gym/perf/components.py).
// Arrays in and out are 1-D numpy arrays of the exact dtype (no implicit conversion: a wrong dtype is a
// TypeError, never a silent cast).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "event_queue.hpp"
#include "link.hpp"
#include "run_stats.hpp"
#include "simulator.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

template <class T>
using In1 = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using Out1 = nb::ndarray<nb::numpy, T, nb::ndim<1>>;

// A numpy array that owns the vector's buffer.
template <class T>
Out1<T> to_numpy(std::vector<T>&& v) {
    auto* p = new std::vector<T>(std::move(v));
    nb::capsule owner(p, [](void* q) noexcept { delete static_cast<std::vector<T>*>(q); });
    return Out1<T>(p->data(), {p->size()}, owner);
}

template <class T>
Out1<T> copy_numpy(const std::vector<T>& v) {
    return to_numpy(std::vector<T>(v));
}

nb::tuple event_tuple(const kairos::Event& e) {
    return nb::make_tuple(e.t, e.seq, static_cast<int>(e.kind), e.a, e.b);
}

void check_len(std::size_t n, std::size_t m, const char* what) {
    if (n != m) throw nb::value_error(what);
}

// The RunStats records and the run counters of one run, as the engine will hold them.
struct RunRecorder {
    kairos::RunStats stats;
    kairos::RunCounters counters;
};

void bind_event_queue(nb::module_& m) {
    nb::class_<kairos::EventQueue>(m, "EventQueue",
                                   "The engine's event heap (src/core/event_queue.hpp): events (t seconds, seq, kind, "
                                   "a, b) popped in (t, seq) order, in heapq's layout.")
        .def(nb::init<>())
        .def("push", &kairos::EventQueue::push, "t"_a, "kind"_a, "a"_a, "b"_a,
             "Push an event at t seconds with the next seq (ValueError for a NaN t).")
        .def("pop", [](kairos::EventQueue& q) { return event_tuple(q.pop()); },
             "Remove and return the earliest event as (t, seq, kind, a, b) (IndexError when empty).")
        .def("top", [](const kairos::EventQueue& q) { return event_tuple(q.top()); },
             "The earliest event, not removed (IndexError when empty).")
        .def("__len__", &kairos::EventQueue::size)
        .def_prop_ro("seq", &kairos::EventQueue::seq, "The seq of the last push (0 before the first).")
        .def("items", [](const kairos::EventQueue& q) {
                nb::list out;
                for (const kairos::Event& e : q.items()) out.append(event_tuple(e));
                return out;
            }, "The heap array as a list of (t, seq, kind, a, b), in heapq's layout.");

    m.def("replay_event_queue",
          [](kairos::EventQueue& q, In1<int8_t> ops, In1<double> t, In1<int8_t> kind, In1<int32_t> a, In1<int64_t> b) {
              const std::size_t n = ops.shape(0);
              check_len(t.shape(0), n, "replay_event_queue: t, kind, a and b must have the length of ops");
              check_len(kind.shape(0), n, "replay_event_queue: t, kind, a and b must have the length of ops");
              check_len(a.shape(0), n, "replay_event_queue: t, kind, a and b must have the length of ops");
              check_len(b.shape(0), n, "replay_event_queue: t, kind, a and b must have the length of ops");
              std::vector<kairos::Event> popped(n);
              const std::size_t k = kairos::replay_event_queue(q, n, ops.data(), t.data(), kind.data(), a.data(),
                                                              b.data(), popped.data());
              std::vector<double> pt(k);
              std::vector<int64_t> ps(k), pb(k);
              std::vector<int8_t> pk(k);
              std::vector<int32_t> pa(k);
              for (std::size_t i = 0; i < k; ++i) {
                  pt[i] = popped[i].t;
                  ps[i] = popped[i].seq;
                  pk[i] = popped[i].kind;
                  pa[i] = popped[i].a;
                  pb[i] = popped[i].b;
              }
              return nb::make_tuple(to_numpy(std::move(pt)), to_numpy(std::move(ps)), to_numpy(std::move(pk)),
                                    to_numpy(std::move(pa)), to_numpy(std::move(pb)));
          },
          "queue"_a, "ops"_a.noconvert(), "t"_a.noconvert(), "kind"_a.noconvert(), "a"_a.noconvert(),
          "b"_a.noconvert(),
          "Apply ops (int8: 0 push (t, kind, a, b) of that row, 1 pop) to the queue in one C++ loop; returns the "
          "popped events as arrays (t float64, seq int64, kind int8, a int32, b int64).");
}

nb::object completion(const kairos::FairShareLink& link) {
    kairos::Completion c;
    if (!link.next_completion(c)) return nb::none();
    return nb::make_tuple(c.t, c.tid);
}

void bind_link(nb::module_& m) {
    nb::class_<kairos::FairShareLink>(m, "FairShareLink",
                                      "The fair-share P->D link (src/core/link.hpp): bytes and bytes/s, seconds, "
                                      "transfer ids as ints.")
        .def(nb::init<double>(), "bandwidth_bytes_per_s"_a,
             "A link of this bandwidth (bytes/s, finite and > 0: ValueError otherwise).")
        .def("__len__", &kairos::FairShareLink::size)
        .def_prop_ro("bandwidth", &kairos::FairShareLink::bandwidth)
        .def_prop_ro("version", &kairos::FairShareLink::version, "Bumped by every add and remove.")
        .def("advance", &kairos::FairShareLink::advance, "now"_a, "Move the link's progress forward to now (s).")
        .def("add", &kairos::FairShareLink::add, "tid"_a, "nbytes"_a, "now"_a,
             "Start moving nbytes for transfer tid at now (s).")
        .def("remove", [](kairos::FairShareLink& l, int64_t tid, double now) {
                try {
                    l.remove(tid, now);
                } catch (const kairos::UnknownTransfer& e) {
                    throw nb::key_error(e.what());
                }
            }, "tid"_a, "now"_a, "Finish transfer tid at now (s); KeyError (after advancing) if it is not on the link.")
        .def("next_completion", &completion,
             "(time s, tid) of the transfer that completes first if nothing changes, else None.")
        .def("state", [](const kairos::FairShareLink& l) {
                nb::dict rem;
                for (std::size_t i = 0; i < l.size(); ++i) rem[nb::int_(l.tids()[i])] = nb::float_(l.remaining()[i]);
                return nb::make_tuple(l.last(), rem, l.version());
            }, "(last s, {tid: remaining bytes} in insertion order, version), like the Python class.")
        .def("set_state", [](kairos::FairShareLink& l, nb::tuple st) {
                if (st.size() != 3) throw nb::value_error("set_state: a (last, remaining, version) tuple");
                const double last = nb::cast<double>(st[0]);
                const nb::dict rem = nb::cast<nb::dict>(st[1]);
                const int64_t version = nb::cast<int64_t>(st[2]);
                std::vector<int64_t> tids;
                std::vector<double> vals;
                for (auto [k, v] : rem) {
                    tids.push_back(nb::cast<int64_t>(k));
                    vals.push_back(nb::cast<double>(v));
                }
                l.set_state(last, std::move(tids), std::move(vals), version);
            }, "state"_a, "Restore a state from state().");

    m.def("replay_link",
          [](kairos::FairShareLink& link, In1<int8_t> ops, In1<int64_t> tid, In1<double> nbytes, In1<double> now) {
              const std::size_t n = ops.shape(0);
              check_len(tid.shape(0), n, "replay_link: tid, nbytes and now must have the length of ops");
              check_len(nbytes.shape(0), n, "replay_link: tid, nbytes and now must have the length of ops");
              check_len(now.shape(0), n, "replay_link: tid, nbytes and now must have the length of ops");
              std::vector<double> out_t(n);
              std::vector<int64_t> out_tid(n);
              try {
                  kairos::replay_link(link, n, ops.data(), tid.data(), nbytes.data(), now.data(), out_t.data(),
                                      out_tid.data());
              } catch (const kairos::UnknownTransfer& e) {
                  throw nb::key_error(e.what());
              }
              return nb::make_tuple(to_numpy(std::move(out_t)), to_numpy(std::move(out_tid)));
          },
          "link"_a, "ops"_a.noconvert(), "tid"_a.noconvert(), "nbytes"_a.noconvert(), "now"_a.noconvert(),
          "Apply ops (int8: 0 advance(now), 1 add(tid, nbytes, now), 2 remove(tid, now), 3 next_completion) to the "
          "link in one C++ loop; returns (t float64, tid int64) per op: the completion of each op 3 (NaN, -1 "
          "when the link is empty), NaN, -1 for the others.");
}

void bind_run_stats(nb::module_& m) {
    nb::class_<RunRecorder>(m, "RunRecorder",
                            "The metrics recorder (src/core/run_stats.hpp): RunStats records (seconds, int64 "
                            "weights) and the engine's run counters.")
        .def(nb::init<>())
        .def("add_stretch", [](RunRecorder& r, double t0, double dt, int64_t n, int64_t w) {
                r.stats.add_stretch(t0, dt, n, w);
            }, "t0"_a, "dt"_a, "n"_a, "weight"_a, "n steps of t0 + j dt seconds, each giving weight gaps.")
        .def("add_gap", [](RunRecorder& r, double v, int64_t w) { r.stats.add_gap(v, w); }, "value"_a,
             "weight"_a = 1, "One gap of value seconds, weight times.")
        .def("record_gap", [](RunRecorder& r, double g, int64_t w, double slo) {
                kairos::record_gap(r.stats, r.counters, g, w, slo);
            }, "g"_a, "w"_a, "slo"_a, "A gap of g seconds given w times, counted against the TBT SLO slo (s).")
        .def("record_stretch_steps", [](RunRecorder& r, double t0, double dt, int64_t n, int64_t B, double slo) {
                kairos::record_stretch_steps(r.stats, r.counters, t0, dt, n, B, slo);
            }, "t0"_a, "dt"_a, "n"_a, "B"_a, "slo"_a,
             "Steps 1..n-1 of a stretch of n steps (t0 + j dt seconds) over a batch of B requests.")
        .def("advance_clock", [](RunRecorder& r, double t) { r.counters.advance_clock(t); }, "t"_a,
             "A popped event at t seconds: integrates the waiting area up to t.")
        .def("arrive", [](RunRecorder& r) { r.counters.arrive(); }, "A request starts waiting.")
        .def("first_token", [](RunRecorder& r, double now, double t) { r.counters.first_token(now, t); },
             "now"_a, "t"_a, "A first token at t <= now (seconds).")
        .def("gaps", [](const RunRecorder& r) {
                std::vector<double> v;
                std::vector<int64_t> w;
                r.stats.gaps(v, w);
                return nb::make_tuple(to_numpy(std::move(v)), to_numpy(std::move(w)));
            }, "All gaps as (values float64 s, weights int64), like RunStats.gaps().")
        .def("records", [](const RunRecorder& r) {
                nb::dict d;
                d["s_t0"] = copy_numpy(r.stats.s_t0);
                d["s_dt"] = copy_numpy(r.stats.s_dt);
                d["s_n"] = copy_numpy(r.stats.s_n);
                d["s_w"] = copy_numpy(r.stats.s_w);
                d["gap_v"] = copy_numpy(r.stats.gap_v);
                d["gap_w"] = copy_numpy(r.stats.gap_w);
                return d;
            }, "The records as arrays named like RunStats' lists (float64 and int64).")
        .def("counters", [](const RunRecorder& r) {
                const kairos::RunCounters& c = r.counters;
                nb::dict d;
                d["waiting"] = c.waiting;
                d["wait_area"] = c.wait_area;
                d["area_t"] = c.area_t;
                d["tbt_violations"] = c.tbt_violations;
                d["tokens_out"] = c.tokens_out;
                d["n_decisions"] = c.n_decisions;
                d["n_invalid"] = c.n_invalid;
                d["n_finished"] = c.n_finished;
                d["n_rejected"] = c.n_rejected;
                d["n_preemptions"] = c.n_preemptions;
                d["swap_bytes"] = c.swap_bytes;
                return d;
            }, "The run counters as a dict (the Simulator attribute names; area_t is Simulator._area_t).");

    m.def("weighted_percentiles",
          [](In1<double> values, In1<int64_t> weights, std::vector<double> qs) {
              if (values.shape(0) != weights.shape(0))
                  throw nb::value_error("weighted_percentiles: values and weights differ in length");
              return kairos::weighted_percentiles(values.data(), weights.data(), values.shape(0), qs);
          },
          "values"_a.noconvert(), "weights"_a.noconvert(), "qs"_a,
          "metrics.weighted_percentiles: percentiles q in [0, 100] of float64 values repeated by int64 weights (>= 0).");
    m.def("sorted_percentile", [](In1<double> s, double q) { return kairos::sorted_percentile(s.data(), s.shape(0), q); },
          "s"_a.noconvert(), "q"_a, "metrics.sorted_percentile: the inverted-CDF percentile q in [0, 100] of sorted s.");
}

}  // namespace

void bind_components(nb::module_& m) {
    bind_event_queue(m);
    bind_link(m);
    bind_run_stats(m);
    // a decode stretch's closed form (simulator.cpp), for its unit test (tests/sim/test_invariants.py)
    m.def("steps_within", &kairos::steps_within, "t0"_a, "dt"_a, "x"_a,
          "Largest j >= 0 with S(j) = j t0 + dt j (j-1)/2 <= x: steps of a stretch (first step t0 s, each dt s "
          "longer) finished within x s.");
}
