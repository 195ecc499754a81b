// kairos_gym._core: the Python face of the C++ simulation core (one small, typed surface;
// docs/architecture.md lists it). Bindings only: the core itself lives in src/core and has no Python headers.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "build_info.hpp"

namespace nb = nanobind;

void bind_components(nb::module_& m);  // components_bindings.cpp: event queue, link, run stats
void bind_pricer(nb::module_& m);  // pricer_bindings.cpp
void bind_simulator(nb::module_& m);  // simulator_bindings.cpp
void bind_env(nb::module_& m);  // env_bindings.cpp: the env step and its ObsParams
void bind_vec(nb::module_& m);  // vec_bindings.cpp: N env steps in one call
void bind_oracle(nb::module_& m);  // oracle_bindings.cpp: base policies, rollout Oracle
void bind_portable_math(nb::module_& m);  // portable_math_bindings.cpp: exp, log, pow, ... (portable_math.hpp)
void bind_mlp(nb::module_& m);  // mlp_bindings.cpp: the portable actor forward pass (mlp_forward.hpp)
void bind_samplers(nb::module_& m);  // samplers_bindings.cpp: portable numpy-Generator samplers

NB_MODULE(_core, m) {
    m.doc() = "kairos-gym C++ simulation core";
    m.def(
        "build_info",
        []() {
            kairos::BuildInfo b = kairos::build_info();
            nb::dict d;
            d["compiler"] = b.compiler;
            d["cxx_standard"] = b.cxx_standard;
            d["fast_math"] = b.fast_math;
            d["fp_contract_off"] = b.fp_contract_off;
            d["source_hash"] = b.source_hash;
            return d;
        },
        "Build facts: compiler, C++ standard, floating-point flags, hash of the sources (dict).");
    bind_components(m);
    bind_pricer(m);
    bind_simulator(m);
    bind_env(m);
    bind_vec(m);
    bind_oracle(m);
    bind_portable_math(m);
    bind_mlp(m);
    bind_samplers(m);
}
