// Build facts of the core: compiler, flags that decide floating-point results, and the hash of the
// sources it was built from (so a stale editable build is detected from Python). No Python headers.
#pragma once
#include <string>

namespace kairos {

struct BuildInfo {
    std::string compiler;      // e.g. "GNU 12.2.0"
    std::string cxx_standard;  // "201703"
    bool fast_math;            // must be false: results must match the golden data bit for bit
    bool fp_contract_off;      // -ffp-contract=off: no fused multiply-add
    std::string source_hash;   // FNV-1a 64 of src/core and src/bindings at configure time (hex)
};

BuildInfo build_info();

}  // namespace kairos
