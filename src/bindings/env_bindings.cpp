// _core.EnvStepper: the native env step (src/core/env_step.hpp) for kairos_gym/env/stepper.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include "env_step.hpp"

namespace nb = nanobind;
using namespace kairos;

namespace {

double num(const nb::dict& d, const char* key) {
    if (!d.contains(key)) throw nb::key_error(key);
    return nb::cast<double>(d[key]);
}

}  // namespace

void bind_env(nb::module_& m) {
    nb::class_<EnvStepper>(m, "EnvStepper", "One KairosEnv step in one native call (see kairos_gym/env/stepper.py).")
        .def("__init__",
             [](EnvStepper* self, Simulator& sim, const nb::dict& p, std::vector<int64_t> node,
                std::vector<int64_t> chunk, int64_t W) {
                 ObsParams o;
                 o.ttft = num(p, "ttft");
                 o.tbt = num(p, "tbt");
                 o.budget = num(p, "budget");
                 o.inv_max_chunk = num(p, "inv_max_chunk");
                 o.log_den = num(p, "log_den");
                 o.ttft_slo = num(p, "ttft_slo");
                 o.tbt_slo = num(p, "tbt_slo");
                 o.ttft_slo_scale = num(p, "ttft_slo_scale");
                 o.tbt_slo_scale = num(p, "tbt_slo_scale");
                 o.queue_tokens_scale = num(p, "queue_tokens_scale");
                 o.queue_requests_scale = num(p, "queue_requests_scale");
                 o.batch_scale = num(p, "batch_scale");
                 o.context_scale = num(p, "context_scale");
                 o.pending_scale = num(p, "pending_scale");
                 o.remaining_scale = num(p, "remaining_scale");
                 if (!p.contains("oracle")) throw nb::key_error("oracle");
                 o.oracle = nb::cast<bool>(p["oracle"]);
                 o.pull = p.contains("pull") && nb::cast<bool>(p["pull"]);  // absent: arrival-only layout
                 o.faults = p.contains("faults") && nb::cast<bool>(p["faults"]);  // absent: no availability group
                 new (self) EnvStepper(sim, o, std::move(node), std::move(chunk), W);
             },
             nb::arg("sim"), nb::arg("params"), nb::arg("node"), nb::arg("chunk"), nb::arg("W"),
             nb::keep_alive<1, 2>(),
             "sim: a _core.Simulator; params: the observation's scales (dict, see native_step.py); node/chunk: "
             "each action's decode node (-1: prefill path) and chunk (0: LargestSafe); W: actions per node.")
        .def("step",
             [](EnvStepper& s, int64_t a) {
                 EnvStepResult r = s.step(a);
                 return nb::make_tuple(r.valid, r.terminated, r.d_wait, r.d_viol, r.d_tokens, r.d_finished,
                                       r.interval, r.rid, r.now);
             },
             nb::arg("action"),
             "Apply action `action`, run to the next decision, write obs and mask; returns (valid, terminated, "
             "d_wait, d_viol, d_tokens, d_finished, interval_s, rid, now_s).")
        .def("observe", &EnvStepper::observe, "Write the pending decision's obs and mask (zeros when none).")
        .def("buffers",
             [](nb::handle self) {
                 EnvStepper& s = nb::cast<EnvStepper&>(self);
                 size_t F = s.obs.size(), A = s.mask.size();
                 return nb::make_tuple(nb::ndarray<nb::numpy, const float>(s.obs.data(), {F}, self),
                                       nb::ndarray<nb::numpy, const int8_t>(s.mask.data(), {A}, self));
             },
             "Read-only views of the observation (float32 [F]) and mask (int8 [A]) buffers, rewritten at every "
             "step and observe().");
}
