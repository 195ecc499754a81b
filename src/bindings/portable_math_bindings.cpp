// Python face of the portable math functions (src/core/portable_math.hpp): scalars, and element-wise over 1-D
// float64 arrays for the physics tables (kairos_gym/portable_math.py wraps them). Arrays in are 1-D C-contiguous
// float64 (no implicit conversion: a wrong dtype is a TypeError, never a silent cast); arrays out are new float64.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>

#include "portable_math.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using In1 = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Out1 = nb::ndarray<nb::numpy, double, nb::ndim<1>>;

template <class F>
Out1 map1(In1 x, F f) {
    const size_t n = x.shape(0);
    auto* out = new double[n > 0 ? n : 1];
    nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<double*>(p); });
    const double* in = x.data();
    {
        nb::gil_scoped_release release;
        for (size_t i = 0; i < n; ++i) out[i] = f(in[i]);
    }
    return Out1(out, {n}, owner);
}

}  // namespace

void bind_portable_math(nb::module_& m) {
    namespace pm = kairos::pmath;
    m.def("pm_exp", &pm::exp, "x"_a, "Portable exp (float).");
    m.def("pm_log", &pm::log, "x"_a, "Portable natural log (float).");
    m.def("pm_log1p", &pm::log1p, "x"_a, "Portable log(1 + x) (float).");
    m.def("pm_expm1", &pm::expm1, "x"_a, "Portable exp(x) - 1 (float).");
    m.def("pm_pow", &pm::pow, "x"_a, "y"_a, "Portable x ** y (float).");
    m.def("pm_cos", &pm::cos, "x"_a, "Portable cos (float; |x| <= 2^20 pi/2).");
    m.def("pm_erfc", &pm::erfc, "x"_a, "Portable complementary error function (float).");
    m.def("pm_exp_array", [](In1 x) { return map1(x, [](double v) { return pm::exp(v); }); }, "x"_a);
    m.def("pm_log_array", [](In1 x) { return map1(x, [](double v) { return pm::log(v); }); }, "x"_a);
    m.def("pm_log1p_array", [](In1 x) { return map1(x, [](double v) { return pm::log1p(v); }); }, "x"_a);
    m.def("pm_expm1_array", [](In1 x) { return map1(x, [](double v) { return pm::expm1(v); }); }, "x"_a);
    m.def("pm_cos_array", [](In1 x) { return map1(x, [](double v) { return pm::cos(v); }); }, "x"_a);
    m.def("pm_erfc_array", [](In1 x) { return map1(x, [](double v) { return pm::erfc(v); }); }, "x"_a);
    m.def("pm_pow_array", [](In1 x, double y) { return map1(x, [y](double v) { return pm::pow(v, y); }); },
          "x"_a, "y"_a, "Portable x ** y element-wise over a float64 array x and a float y.");
    m.def(
        "pm_pow_arrays",
        [](In1 x, In1 y) {
            if (x.shape(0) != y.shape(0)) throw nb::value_error("pm_pow_arrays: x and y differ in length");
            const double* yy = y.data();
            const double* x0 = x.data();
            return map1(x, [yy, x0](const double& v) { return pm::pow(v, yy[&v - x0]); });
        },
        "x"_a, "y"_a, "Portable x ** y element-wise over two float64 arrays of one length.");
}
