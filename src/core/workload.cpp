#include "workload.hpp"

#include <cmath>
#include <stdexcept>

namespace kairos {

WorkloadPtr make_workload(std::vector<double> arrival, std::vector<int64_t> prompt, std::vector<int64_t> output) {
    if (arrival.size() != prompt.size() || arrival.size() != output.size())
        throw std::invalid_argument("workload: arrival, prompt and output have different lengths");
    if (arrival.empty()) throw std::invalid_argument("workload: no requests");
    for (size_t i = 0; i < arrival.size(); ++i) {
        if (!std::isfinite(arrival[i]) || arrival[i] < 0.0)
            throw std::invalid_argument("workload: an arrival time is not finite and >= 0");
        if (i && arrival[i] < arrival[i - 1]) throw std::invalid_argument("workload: arrival times decrease");
        if (prompt[i] < 0 || output[i] < 0) throw std::invalid_argument("workload: a negative length");
    }
    auto w = std::make_shared<Workload>();
    w->arrival = std::move(arrival);
    w->prompt = std::move(prompt);
    w->output = std::move(output);
    return w;
}

}  // namespace kairos
