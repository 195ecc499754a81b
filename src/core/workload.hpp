// The workload a run serves: per-request arrival time (seconds from the run's start), prompt and output
// lengths (tokens), in arrival order (request id rid = arrival order). Generated in Python (kairos_gym.workload).
//
// Whole (make_workload): every request, copied in once per reset; immutable afterwards, so snapshots share it.
// Chunked (make_workload_ring + append_chunk; streaming metrics with a synthetic workload, docs/reliability.md):
// a ring of `slots` requests (a power of two), request rid in slot rid & (slots - 1), appended chunk by chunk
// as the run reaches the end of what is loaded; `complete` once the last chunk is in. Sizes: requests (counts),
// times in seconds, lengths in tokens.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "requests.hpp"

namespace kairos {

struct Workload {
    Column<double> arrival;   // seconds, non-decreasing
    Column<int64_t> prompt;   // tokens
    Column<int64_t> output;   // tokens
    int64_t n = 0;            // requests loaded so far (rids 0 .. n - 1); the total once complete
    bool complete = true;     // false: more chunks may follow (chunked mode)

    int64_t size() const { return n; }
    bool ring() const { return arrival.mask != -1; }
    int64_t slots() const { return static_cast<int64_t>(arrival.size()); }
};

using WorkloadPtr = std::shared_ptr<const Workload>;

// A whole workload from three equally long arrays; throws std::invalid_argument on a length mismatch, an empty
// workload, a negative length or a decreasing arrival time.
WorkloadPtr make_workload(std::vector<double> arrival, std::vector<int64_t> prompt, std::vector<int64_t> output);

// An empty chunked workload of `slots` request slots (a power of two >= 2; std::invalid_argument otherwise).
std::shared_ptr<Workload> make_workload_ring(int64_t slots);

// Append requests n .. n + k - 1 (k = arrival.size()) to a chunked workload; `last`: no chunk follows. Checks
// before changing anything (std::invalid_argument): a chunked, not yet complete workload; equally long arrays;
// times finite, >= 0, non-decreasing within the chunk and from the last loaded time; lengths >= 0; k >= 1
// unless `last`; the total within MAX_RUN_REQUESTS. `free_slot(rid)` says whether the slot of loaded request
// rid may be overwritten (its request is settled); a chunk that would overwrite a request still needed throws
// std::length_error (the ring is too small for how far ahead the chunk reaches).
template <class FreeSlot>
void append_chunk(Workload& w, const std::vector<double>& arrival, const std::vector<int64_t>& prompt,
                  const std::vector<int64_t>& output, bool last, FreeSlot free_slot);

void check_chunk(const Workload& w, const std::vector<double>& arrival, const std::vector<int64_t>& prompt,
                 const std::vector<int64_t>& output, bool last);

template <class FreeSlot>
void append_chunk(Workload& w, const std::vector<double>& arrival, const std::vector<int64_t>& prompt,
                  const std::vector<int64_t>& output, bool last, FreeSlot free_slot) {
    check_chunk(w, arrival, prompt, output, last);
    const int64_t k = static_cast<int64_t>(arrival.size()), slots = w.slots();
    for (int64_t rid = w.n; rid < w.n + k; ++rid)
        if (rid - slots >= 0 && !free_slot(rid - slots))
            throw std::length_error("workload: a chunk would overwrite request " + std::to_string(rid - slots) +
                                    ", still in flight (the workload ring is too small for this chunk)");
    for (int64_t i = 0; i < k; ++i) {
        const int64_t rid = w.n + i;
        w.arrival[rid] = arrival[static_cast<size_t>(i)];
        w.prompt[rid] = prompt[static_cast<size_t>(i)];
        w.output[rid] = output[static_cast<size_t>(i)];
    }
    w.n += k;
    w.complete = last;
}

}  // namespace kairos
