// The fair-share P->D link: the rules of `FairShareLink` (kairos_gym/latency/transfer.py), bit for bit.
//
// Processor sharing: the n transfers on a link each move bandwidth / n bytes per second. Pure bookkeeping with no
// clock of its own: the engine advances the link to the current time before every change and asks for the next
// completion. Units: times in seconds (float64), sizes in bytes (float64, like the Python floats), bandwidth in
// bytes/s; transfer ids are request ids (int64).
//
// Bit for bit with Python: the remaining bytes are kept by id in insertion order (Python's dict: a new id goes to
// the end, re-adding a present id overwrites its value in place, a removal closes the gap);
// advance does `done = (now - last) * bandwidth / n` once, then `rem -= done` for each transfer; the next
// completion is the least (remaining, id) pair (ties: smallest id), clamped at 0, finishing at
// `last + rem * n / bandwidth`. `version` counts the changes (add, remove): a completion event carrying an older
// version is stale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kairos {

// remove() of an id that is not on the link (Python's KeyError).
struct UnknownTransfer : std::out_of_range {
    explicit UnknownTransfer(int64_t tid) : std::out_of_range(std::to_string(tid)), tid(tid) {}
    int64_t tid;
};

struct Completion {
    double t;     // completion time (seconds)
    int64_t tid;  // the transfer that completes first
};

class FairShareLink {
public:
    // bandwidth in bytes/s: finite and > 0 (TransferConfig guarantees it; anything else throws
    // std::invalid_argument, where Python would divide by zero or run on infinities).
    explicit FairShareLink(double bandwidth_bytes_per_s);

    std::size_t size() const noexcept { return tid_.size(); }
    double bandwidth() const noexcept { return bandwidth_; }
    int64_t version() const noexcept { return version_; }
    double last() const noexcept { return last_; }
    bool contains(int64_t tid) const noexcept { return find(tid) != npos; }

    // Move the link's progress forward to `now` (seconds).
    void advance(double now) noexcept {
        const std::size_t n = tid_.size();
        if (n && now > last_ && !cut_) {
            const double done = (now - last_) * bandwidth_ / static_cast<double>(n);
            for (double& r : rem_) r -= done;
        }
        last_ = now > last_ ? now : last_;  // Python's max(last, now): keeps `last` unless now is greater
    }

    // Faults (faults.hpp): move the link to `now`, then give it `bandwidth_bytes_per_s` (finite, > 0) and cut it or
    // not (a cut link moves no byte and completes nothing until it is set uncut); the version moves.
    void set_rate(double now, double bandwidth_bytes_per_s, bool cut);
    bool cut() const noexcept { return cut_; }
    // Start moving `nbytes` for transfer `tid` at `now`.
    void add(int64_t tid, double nbytes, double now);
    // Finish transfer `tid` at `now`. The link is advanced first; an id not on it then throws UnknownTransfer
    // (the advance stays done, as in Python, and the version does not move).
    void remove(int64_t tid, double now);
    // The transfer that completes first if nothing changes; false when the link is empty.
    bool next_completion(Completion& out) const noexcept;

    // State for snapshots: ids and remaining bytes in insertion order.
    const std::vector<int64_t>& tids() const noexcept { return tid_; }
    const std::vector<double>& remaining() const noexcept { return rem_; }
    // Restore a state (ids must be distinct: std::invalid_argument otherwise, the link unchanged).
    void set_state(double last, std::vector<int64_t> tids, std::vector<double> remaining, int64_t version);

private:
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    std::size_t find(int64_t tid) const noexcept {
        for (std::size_t i = 0; i < tid_.size(); ++i)
            if (tid_[i] == tid) return i;
        return npos;
    }

    double bandwidth_;
    std::vector<int64_t> tid_;  // insertion order
    std::vector<double> rem_;   // remaining bytes, parallel to tid_
    double last_ = 0.0;
    int64_t version_ = 0;
    bool cut_ = false;
};

// One operation of a recorded sequence (replay_link, for the differential tests and the benchmark).
enum LinkOp : int8_t { LINK_ADVANCE = 0, LINK_ADD = 1, LINK_REMOVE = 2, LINK_NEXT = 3 };

// Apply ops[i] with (tid[i], nbytes[i], now[i]) in order to `link`; out_t[i], out_tid[i] receive the result
// of a LINK_NEXT (NaN and -1 for "no transfer"), and NaN, -1 for the other ops. An unknown op code throws
// std::invalid_argument and an unknown id in LINK_REMOVE throws UnknownTransfer, both after ops[0..i-1].
void replay_link(FairShareLink& link, std::size_t n, const int8_t* ops, const int64_t* tid, const double* nbytes,
                 const double* now, double* out_t, int64_t* out_tid);

}  // namespace kairos
