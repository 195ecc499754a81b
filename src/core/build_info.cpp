#include "build_info.hpp"

#ifndef KAIROS_SOURCE_HASH
#define KAIROS_SOURCE_HASH "unknown"
#endif
#ifndef KAIROS_FP_CONTRACT_OFF
#define KAIROS_FP_CONTRACT_OFF 0
#endif

namespace kairos {

BuildInfo build_info() {
    BuildInfo b;
#if defined(__clang__)
    b.compiler = std::string("Clang ") + __clang_version__;
#elif defined(__GNUC__)
    b.compiler = "GNU " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
                 std::to_string(__GNUC_PATCHLEVEL__);
#else
    b.compiler = "unknown";
#endif
    b.cxx_standard = std::to_string(__cplusplus);
#if defined(__FAST_MATH__)
    b.fast_math = true;
#else
    b.fast_math = false;
#endif
    b.fp_contract_off = KAIROS_FP_CONTRACT_OFF != 0;
    b.source_hash = KAIROS_SOURCE_HASH;
    return b;
}

}  // namespace kairos
