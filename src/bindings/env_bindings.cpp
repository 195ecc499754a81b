// _core.EnvStepper and its typed parameters _core.ObsParams: the env step (src/core/env_step.hpp) for
// kairos_gym/env/stepper.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include "env_step.hpp"

namespace nb = nanobind;
using namespace kairos;

void bind_env(nb::module_& m) {
    nb::class_<ObsParams>(m, "ObsParams",
                          "The observation's scales and flags (observation.hpp), filled from an ObservationLayout by "
                          "kairos_gym/env/stepper.py: seconds, tokens, counts.")
        .def(nb::init<>())
        .def_rw("ttft", &ObsParams::ttft, "TTFT scale (s): the scenario's TTFT SLO.")
        .def_rw("tbt", &ObsParams::tbt, "TBT scale (s): the scenario's TBT SLO.")
        .def_rw("budget", &ObsParams::budget, "Slack scale (s): beta x TBT SLO.")
        .def_rw("inv_max_chunk", &ObsParams::inv_max_chunk, "1 / the largest menu chunk (1/tokens).")
        .def_rw("log_den", &ObsParams::log_den, "1 / log1p(max_context).")
        .def_rw("ttft_slo", &ObsParams::ttft_slo, "The context's TTFT SLO (s).")
        .def_rw("tbt_slo", &ObsParams::tbt_slo, "The context's TBT SLO (s).")
        .def_rw("ttft_slo_scale", &ObsParams::ttft_slo_scale, "Seconds at which ttft_slo reads 0.5.")
        .def_rw("tbt_slo_scale", &ObsParams::tbt_slo_scale, "Seconds at which tbt_slo reads 0.5.")
        .def_rw("queue_tokens_scale", &ObsParams::queue_tokens_scale, "Tokens at which p*_queued_tokens reads 0.5.")
        .def_rw("queue_requests_scale", &ObsParams::queue_requests_scale,
                "Requests at which p*_queued_requests reads 0.5.")
        .def_rw("batch_scale", &ObsParams::batch_scale, "Batch size at which d*_batch_size reads 0.5.")
        .def_rw("context_scale", &ObsParams::context_scale, "Tokens at which d*_total_context reads 0.5.")
        .def_rw("pending_scale", &ObsParams::pending_scale, "Admissions at which d*_pending_admissions reads 0.5.")
        .def_rw("remaining_scale", &ObsParams::remaining_scale,
                "Tokens at which d*_deflection_remaining reads 0.5.")
        .def_rw("oracle", &ObsParams::oracle, "One more request feature: the output length.")
        .def_rw("pull", &ObsParams::pull, "One more request feature: 1 at a pull decision.")
        .def_rw("faults", &ObsParams::faults, "The availability group (P + D + 1 features) at the end.");
    nb::class_<EnvStepper>(m, "EnvStepper", "One KairosEnv step in one call (see kairos_gym/env/stepper.py).")
        .def(nb::init<Simulator&, ObsParams, std::vector<int64_t>, std::vector<int64_t>, int64_t>(), nb::arg("sim"),
             nb::arg("params"), nb::arg("node"), nb::arg("chunk"), nb::arg("W"), nb::keep_alive<1, 2>(),
             "sim: a _core.Simulator; params: the observation's scales (an ObsParams); node/chunk: each action's "
             "decode node (-1: prefill path) and chunk (0: LargestSafe); W: actions per node.")
        .def("step",
             [](EnvStepper& s, int64_t a) {
                 EnvStepResult r = s.step(a);
                 return nb::make_tuple(r.valid, r.terminated, r.d_wait, r.d_viol, r.d_tokens, r.d_finished,
                                       r.interval, r.rid, r.now, r.d_missed);
             },
             nb::arg("action"),
             "Apply action `action`, run to the next decision, write obs and mask; returns (valid, terminated, "
             "d_wait, d_viol, d_tokens, d_finished, interval_s, rid, now_s, d_missed).")
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
