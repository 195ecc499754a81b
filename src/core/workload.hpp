// The workload a run serves: per-request arrival time (seconds from the run's start), prompt and output
// lengths (tokens), in arrival order. Generated in Python (kairos_gym.workload) and copied in once per reset;
// immutable afterwards, so snapshots share it through a shared_ptr.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace kairos {

struct Workload {
    std::vector<double> arrival;   // seconds, non-decreasing
    std::vector<int64_t> prompt;   // tokens
    std::vector<int64_t> output;   // tokens

    int64_t size() const { return static_cast<int64_t>(arrival.size()); }
};

using WorkloadPtr = std::shared_ptr<const Workload>;

// A workload from three equally long arrays; throws std::invalid_argument on a length mismatch, an empty
// workload, a negative length or a decreasing arrival time.
WorkloadPtr make_workload(std::vector<double> arrival, std::vector<int64_t> prompt, std::vector<int64_t> output);

}  // namespace kairos
