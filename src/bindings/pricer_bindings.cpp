// kairos_gym._core.Pricer: the C++ pricer, giving kairos_gym.latency.pricing.ChunkPricer's prices bit for bit.
//
// Python -> C++ boundary: the Pricer is built from a pricing.CostTables (what ChunkPricer.compile() exports:
// float64 numpy tables g[T], gc[T, 3], l[S], lc[S, 3], the decode-pair constants, the attention constants and
// the menu). The core copies the tables once into its own immutable CostTables (a shared_ptr, so the
// simulators and snapshots share them without the GIL); tables() hands them back as read-only numpy views
// (zero-copy). When a price needs an index past the tables, the core calls grow(n_tokens, n_seqs) (Python,
// normally ChunkPricer.compile) for tables covering those indices, and counts it in grow_count.
// Bad arguments raise kairos_gym.errors.ConfigError. Units: seconds, tokens, FLOPs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "pricer.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using kairos::CostTables;
using kairos::MenuTerm;
using kairos::Pricer;
using PyTerm = std::tuple<int64_t, int64_t, int64_t, int64_t, double, double, double>;
using Vec = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Mat3 = nb::ndarray<const double, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu>;

template <typename A>
A array_attr(nb::handle obj, const char* name, const char* shape) {
    A a;
    if (!nb::try_cast(obj.attr(name), a, false)) {
        throw nb::type_error(("pricer: CostTables." + std::string(name) + " must be a C-contiguous float64 " +
                              "array of shape " + shape)
                                 .c_str());
    }
    return a;
}

// The core's copy of a pricing.CostTables.
std::shared_ptr<const CostTables> read_tables(nb::handle obj) {
    auto t = std::make_shared<CostTables>();
    Vec g = array_attr<Vec>(obj, "g", "[T]");
    Mat3 gc = array_attr<Mat3>(obj, "gc", "[T, 3]");
    Vec l = array_attr<Vec>(obj, "l", "[S]");
    Mat3 lc = array_attr<Mat3>(obj, "lc", "[S, 3]");
    if (gc.shape(0) != g.shape(0) || lc.shape(0) != l.shape(0)) {
        throw nb::value_error("pricer: CostTables.gc / lc must have as many rows as g / l");
    }
    t->g.assign(g.data(), g.data() + g.shape(0));
    t->gc.assign(gc.data(), gc.data() + 3 * gc.shape(0));
    t->l.assign(l.data(), l.data() + l.shape(0));
    t->lc.assign(lc.data(), lc.data() + 3 * lc.shape(0));
    t->kdec = nb::cast<double>(obj.attr("kdec"));
    auto kc = nb::cast<std::tuple<double, double, double>>(obj.attr("kdec_cost"));
    t->kdec_cost = {std::get<0>(kc), std::get<1>(kc), std::get<2>(kc)};
    t->attn.apf_c = nb::cast<double>(obj.attr("apf_c"));
    t->attn.kv_m = nb::cast<double>(obj.attr("kv_m"));
    t->attn.p = nb::cast<double>(obj.attr("p"));
    t->attn.inv_p = nb::cast<double>(obj.attr("inv_p"));
    t->attn.attn_pf_pair = nb::cast<double>(obj.attr("attn_pf_pair"));
    t->attn.peak_c_attn_pf = nb::cast<double>(obj.attr("peak_c_attn_pf"));
    t->menu = nb::cast<std::vector<int64_t>>(obj.attr("menu"));
    nb::handle st = obj.attr("step");
    kairos::StepConstants& sc = t->step;
    sc.fixed_s = nb::cast<double>(st.attr("fixed_s"));
    sc.ew_ar_tok = nb::cast<double>(st.attr("ew_ar_tok"));
    for (const auto& [count, fc, w, am] :
         nb::cast<std::vector<std::tuple<double, double, double, double>>>(st.attr("gemms"))) {
        sc.gemms.push_back({count, fc, w, am});
    }
    sc.lm_fc = nb::cast<double>(st.attr("lm_fc"));
    sc.lm_wm = nb::cast<double>(st.attr("lm_wm"));
    sc.adec_c = nb::cast<double>(st.attr("adec_c"));
    sc.moe = nb::cast<bool>(st.attr("moe"));
    sc.moe_p = nb::cast<double>(st.attr("moe_p"));
    sc.moe_inv_p = nb::cast<double>(st.attr("moe_inv_p"));
    sc.moe_fc = nb::cast<double>(st.attr("moe_fc"));
    sc.moe_e = nb::cast<double>(st.attr("moe_e"));
    sc.moe_miss = nb::cast<double>(st.attr("moe_miss"));
    sc.moe_shared = nb::cast<double>(st.attr("moe_shared"));
    sc.moe_wm = nb::cast<double>(st.attr("moe_wm"));
    sc.moe_am = nb::cast<double>(st.attr("moe_am"));
    return t;
}

Pricer::GrowFn grow_fn(nb::handle grow) {
    if (grow.is_none()) return nullptr;
    if (!PyCallable_Check(grow.ptr())) throw nb::type_error("pricer: grow must be callable or None");
    nb::object fn = nb::borrow(grow);
    return [fn](int64_t n_tokens, int64_t n_seqs) {
        nb::gil_scoped_acquire gil;
        return read_tables(fn(n_tokens, n_seqs));
    };
}

nb::tuple cost3(const kairos::Cost3& c) { return nb::make_tuple(c.time_s, c.flops, c.compute_s); }

std::vector<MenuTerm> to_terms(const std::vector<PyTerm>& in) {
    std::vector<MenuTerm> out;
    out.reserve(in.size());
    for (const PyTerm& x : in) {
        out.push_back({std::get<0>(x), std::get<1>(x), std::get<2>(x), std::get<3>(x), std::get<4>(x),
                       std::get<5>(x), std::get<6>(x)});
    }
    return out;
}

nb::tuple from_terms(const std::vector<MenuTerm>& terms) {
    nb::object out = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(terms.size())));
    for (size_t i = 0; i < terms.size(); ++i) {
        const MenuTerm& m = terms[i];
        nb::tuple t = nb::make_tuple(m.chunk, m.n_full, m.rest, m.n_chunks, m.first_attn_s, m.full_attn_s,
                                     m.rest_attn_s);
        PyTuple_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), t.release().ptr());
    }
    return nb::borrow<nb::tuple>(out);
}

nb::tuple rows(Pricer& p, int64_t n_decode, double dec_pairs, const std::vector<MenuTerm>& terms, double wait_s) {
    std::vector<double> firsts, totals;
    p.menu_rows(n_decode, dec_pairs, terms, wait_s, firsts, totals);
    return nb::make_tuple(nb::cast(firsts), nb::cast(totals));
}

}  // namespace

void bind_pricer(nb::module_& m) {
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const kairos::PricerInputError& e) {
            nb::object cls = nb::module_::import_("kairos_gym.errors").attr("ConfigError");
            nb::object value = e.integral ? nb::object(nb::int_(static_cast<int64_t>(e.value)))
                                          : nb::object(nb::float_(e.value));
            nb::object err = cls("pricer: " + e.where, e.field, value, e.allowed);
            PyErr_SetObject(cls.ptr(), err.ptr());
        }
    });

    nb::class_<Pricer>(m, "Pricer",
                       "The C++ ChunkPricer: prices decode steps carrying a deflected chunk, menus and LargestSafe "
                       "schedules from compiled cost tables, bit for bit as kairos_gym.latency.pricing.ChunkPricer. "
                       "Seconds, tokens, FLOPs. Build with pricing.native_pricer().")
        .def(
            "__init__",
            [](Pricer* self, nb::handle tables, nb::handle grow) {
                new (self) Pricer(read_tables(tables), grow_fn(grow));
            },
            "tables"_a, "grow"_a = nb::none(),
            "tables: a pricing.CostTables (copied); grow(n_tokens, n_seqs) -> CostTables covering those indices, "
            "or None (an index past the tables is then an error).")
        .def("base", &Pricer::base, "n_tokens"_a, "n_seqs"_a,
             "F(T, S): everything of a step but attention (seconds).")
        .def(
            "base_cost", [](Pricer& p, int64_t t, int64_t s) { return cost3(p.base_cost(t, s)); }, "n_tokens"_a,
            "n_seqs"_a, "F(T, S) as (seconds, FLOPs, compute seconds).")
        .def("attn_time", &Pricer::attn_time, "pf_pairs"_a, "kv_read"_a,
             "Prefill-attention seconds of aggregated chunks (not memoised).")
        .def(
            "attn_cost", [](const Pricer& p, double pf, double kv) { return cost3(p.attn_cost(pf, kv)); },
            "pf_pairs"_a, "kv_read"_a, "Prefill-attention (seconds, FLOPs, compute seconds) of aggregated chunks.")
        .def("attn", &Pricer::attn, "chunk"_a, "prefix"_a,
             "G: prefill-attention seconds of one chunk after `prefix` cached tokens (memoised).")
        .def("model_time", &Pricer::model_time, "n_tokens"_a, "n_seqs"_a, "dec_pairs"_a, "pf_pairs"_a,
             "kv_read_tokens"_a,
             "StepLatencyModel.step_time_fast: seconds of a step from its aggregates (same bounds, same bits).")
        .def("step", &Pricer::step, "n_decode"_a, "dec_pairs"_a, "chunk"_a, "prefix"_a,
             "Seconds of one step: the decode batch plus one chunk (chunk may be 0).")
        .def(
            "fixed_schedule",
            [](Pricer& p, int64_t n_decode, double dec_pairs, int64_t prompt, int64_t chunk, int64_t done) {
                kairos::Schedule s = p.fixed_schedule(n_decode, dec_pairs, prompt, chunk, done);
                return nb::make_tuple(s.first_s, s.total_s, s.n_chunks);
            },
            "n_decode"_a, "dec_pairs"_a, "prompt"_a, "chunk"_a, "done"_a = 0,
            "(first_step_s, total_s, n_chunks) of the rest of a prompt in chunks of `chunk`.")
        .def("prefill_alone", &Pricer::prefill_alone, "prompt"_a, "budget"_a,
             "Seconds to prefill `prompt` tokens alone in steps of at most `budget` tokens (memoised).")
        .def(
            "menu_terms",
            [](Pricer& p, int64_t prompt, const std::vector<int64_t>& menu) {
                return from_terms(p.menu_terms(prompt, menu));
            },
            "prompt"_a, "menu"_a,
            "Per menu size (chunk, n_full, rest, n_chunks, first_attn_s, full_attn_s, rest_attn_s).")
        .def(
            "menu_rows",
            [](Pricer& p, int64_t n_decode, double dec_pairs, const std::vector<PyTerm>& terms, double wait_s) {
                return rows(p, n_decode, dec_pairs, to_terms(terms), wait_s);
            },
            "n_decode"_a, "dec_pairs"_a, "terms"_a, "wait_s"_a = 0.0,
            "(first_step_s per size, wait_s + total_s per size) of one decode node from menu_terms().")
        .def(
            "menu_schedules",
            [](Pricer& p, int64_t n_decode, double dec_pairs, int64_t prompt, const std::vector<int64_t>& menu) {
                return rows(p, n_decode, dec_pairs, p.menu_terms(prompt, menu), 0.0);
            },
            "n_decode"_a, "dec_pairs"_a, "prompt"_a, "menu"_a,
            "fixed_schedule from prefix 0 for every menu size: (first_step_s per size, total_s per size).")
        .def(
            "largest_safe",
            [](Pricer& p, int64_t n_decode, double dec_pairs, int64_t prompt, double budget_s,
               const std::vector<int64_t>& menu_desc, int64_t done) {
                std::vector<int64_t> sizes;
                auto [ok, total] = p.largest_safe(n_decode, dec_pairs, prompt, budget_s, menu_desc, done, sizes);
                return nb::make_tuple(ok, total, nb::cast(sizes));
            },
            "n_decode"_a, "dec_pairs"_a, "prompt"_a, "budget_s"_a, "menu_desc"_a, "done"_a = 0,
            "Greedy LargestSafe: (feasible, total_s, chunk_sizes).")
        .def("cache_size", &Pricer::cache_size, "Attention entries memoised so far.")
        .def_prop_ro("sec_per_decode_pair", &Pricer::sec_per_decode_pair,
                     "K: decode-attention seconds per (context + 1) token of the decode batch.")
        .def_prop_ro(
            "decode_pair_cost",
            [](const Pricer& p) {
                const auto& k = p.decode_pair_cost();
                return nb::make_tuple(k[0], k[1], k[2]);
            },
            "(seconds, FLOPs, compute seconds) per decode pair.")
        .def_prop_ro(
            "menu", [](const Pricer& p) { return nb::tuple(nb::cast(p.menu())); }, "The pricer's own chunk menu.")
        .def_prop_ro("grow_count", &Pricer::grow_count, "Times the tables were replaced by larger ones (grow calls).")
        .def_prop_ro(
            "table_sizes",
            [](const Pricer& p) { return nb::make_tuple(p.tables()->n_tokens(), p.tables()->n_seqs()); },
            "(entries of the token tables g/gc, entries of the sequence tables l/lc).")
        .def(
            "tables",
            [](const Pricer& p) {
                auto* owner = new std::shared_ptr<const CostTables>(p.tables());
                nb::capsule cap(owner, [](void* ptr) noexcept {
                    delete static_cast<std::shared_ptr<const CostTables>*>(ptr);
                });
                const CostTables& t = **owner;
                using V = nb::ndarray<nb::numpy, const double, nb::ndim<1>>;
                using M = nb::ndarray<nb::numpy, const double, nb::ndim<2>>;
                nb::dict d;
                d["g"] = V(t.g.data(), {t.g.size()}, cap).cast();
                d["gc"] = M(t.gc.data(), {t.g.size(), 3}, cap).cast();
                d["l"] = V(t.l.data(), {t.l.size()}, cap).cast();
                d["lc"] = M(t.lc.data(), {t.l.size(), 3}, cap).cast();
                return d;
            },
            "The core's tables as read-only numpy views (zero-copy): g, gc, l, lc.")
        .def("__copy__", [](nb::handle self) { return nb::borrow(self); },
             "The pricer itself: its prices never change (memos only cache values).")
        .def("__deepcopy__", [](nb::handle self, nb::handle) { return nb::borrow(self); }, "memo"_a,
             "The pricer itself: its prices never change (memos only cache values).");

    m.attr("PRICER_MAX_INDEX") = kairos::kMaxTableIndex;
    m.attr("PRICER_MEMO_LIMIT") = Pricer::kMemoLimit;
}
