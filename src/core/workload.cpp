#include "workload.hpp"

#include <cmath>
#include <stdexcept>

namespace kairos {

namespace {
constexpr int64_t MAX_WORKLOAD_REQUESTS = 2147483647;  // = MAX_RUN_REQUESTS (simulator.hpp): rids are int32

void check_arrays(const std::vector<double>& arrival, const std::vector<int64_t>& prompt,
                  const std::vector<int64_t>& output, double floor_t) {
    if (arrival.size() != prompt.size() || arrival.size() != output.size())
        throw std::invalid_argument("workload: arrival, prompt and output have different lengths");
    for (size_t i = 0; i < arrival.size(); ++i) {
        if (!std::isfinite(arrival[i]) || arrival[i] < 0.0)
            throw std::invalid_argument("workload: an arrival time is not finite and >= 0");
        if (i && arrival[i] < arrival[i - 1]) throw std::invalid_argument("workload: arrival times decrease");
        if (!i && arrival[0] < floor_t)
            throw std::invalid_argument("workload: a chunk starts before the last loaded arrival time (times decrease "
                                        "across chunks)");
        if (prompt[i] < 0 || output[i] < 0) throw std::invalid_argument("workload: a negative length");
    }
}
}  // namespace

WorkloadPtr make_workload(std::vector<double> arrival, std::vector<int64_t> prompt, std::vector<int64_t> output) {
    check_arrays(arrival, prompt, output, 0.0);
    if (arrival.empty()) throw std::invalid_argument("workload: no requests");
    auto w = std::make_shared<Workload>();
    w->n = static_cast<int64_t>(arrival.size());
    w->arrival.v = std::move(arrival);
    w->prompt.v = std::move(prompt);
    w->output.v = std::move(output);
    return w;
}

std::shared_ptr<Workload> make_workload_ring(int64_t slots) {
    if (slots < 2 || (slots & (slots - 1))) throw std::invalid_argument("workload: ring slots not a power of two >= 2");
    auto w = std::make_shared<Workload>();
    w->arrival = Column<double>(slots, 0.0, slots - 1);
    w->prompt = Column<int64_t>(slots, 0, slots - 1);
    w->output = Column<int64_t>(slots, 0, slots - 1);
    w->n = 0;
    w->complete = false;
    return w;
}

void check_chunk(const Workload& w, const std::vector<double>& arrival, const std::vector<int64_t>& prompt,
                 const std::vector<int64_t>& output, bool last) {
    if (!w.ring()) throw std::invalid_argument("workload: appending to a whole workload (not chunked)");
    if (w.complete) throw std::invalid_argument("workload: appending after the last chunk");
    if (arrival.empty() && !last) throw std::invalid_argument("workload: an empty chunk that is not the last");
    check_arrays(arrival, prompt, output, w.n ? w.arrival[w.n - 1] : 0.0);
    if (static_cast<int64_t>(arrival.size()) > MAX_WORKLOAD_REQUESTS - w.n)
        throw std::invalid_argument("workload: more than 2^31 - 1 requests");
    if (w.n == 0 && arrival.empty()) throw std::invalid_argument("workload: no requests");
}

}  // namespace kairos
