// _core.VecStepper: N env steps in one call (src/core/vec_step.hpp) for kairos_gym/env/vector.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include "vec_step.hpp"

namespace nb = nanobind;
using namespace kairos;

void bind_vec(nb::module_& m) {
    nb::class_<VecStepper>(m, "VecStepper", "N EnvStepper steps in one call (see kairos_gym/env/vector.py).")
        .def(nb::init<std::vector<EnvStepper*>>(), nb::arg("steppers"), nb::keep_alive<1, 2>(),
             "steppers: a list of _core.EnvStepper with equal observation and mask sizes.")
        .def("step",
             [](VecStepper& s, nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig> actions,
                nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig> active) {
                 if (actions.shape(0) != s.n() || active.shape(0) != s.n())
                     throw nb::value_error("VecStepper.step: actions and active must have one entry per env");
                 const int64_t* a = actions.data();
                 const uint8_t* on = active.data();
                 nb::gil_scoped_release release;
                 s.step(a, on);
             },
             nb::arg("actions"), nb::arg("active"),
             "Step every env i with active[i] (uint8) by actions[i] (int64, valid indices: checked by Python).")
        .def("set",
             [](VecStepper& s, size_t i, EnvStepper* e) { s.set(i, e); },
             nb::arg("i"), nb::arg("stepper"),
             "Replace env i's stepper (equal observation and mask sizes; IndexError / ValueError otherwise). "
             "The VecStepper does not keep it alive: the caller holds it while it is set (KairosVectorEnv.set_env).")
        .def("buffers",
             [](nb::handle self) {
                 VecStepper& s = nb::cast<VecStepper&>(self);
                 size_t N = s.n();
                 return nb::make_tuple(nb::ndarray<nb::numpy, const float>(s.obs.data(), {N, s.F}, self),
                                       nb::ndarray<nb::numpy, const int8_t>(s.mask.data(), {N, s.A}, self),
                                       nb::ndarray<nb::numpy, const uint8_t>(s.valid.data(), {N}, self),
                                       nb::ndarray<nb::numpy, const uint8_t>(s.terminated.data(), {N}, self),
                                       nb::ndarray<nb::numpy, const double>(s.d_wait.data(), {N}, self),
                                       nb::ndarray<nb::numpy, const int64_t>(s.d_viol.data(), {N}, self),
                                       nb::ndarray<nb::numpy, const int64_t>(s.d_missed.data(), {N}, self));
             },
             "Read-only views: obs float32 [N, F], mask int8 [N, A], valid, terminated (uint8 [N]), d_wait float64 "
             "[N], d_viol int64 [N], d_missed int64 [N]; rewritten at every step for the active envs.");
}
