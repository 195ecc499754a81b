// The simulator's event heap: a binary heap of (t, seq, kind, a, b) laid out as Python's heapq lays out a list
// of those tuples (Simulator.events() hands it over element for element).
//
// Units and fields: t is the event's simulated time in seconds (float64); seq is the push counter (int64, 1 for
// the first push of a run, +1 per push, stale events included); kind is the event type (simulator.hpp EV_*);
// a is a node index or request id; b a version counter or node index.
//
// Order. Python compares the tuples element by element: the first pair of elements that are not equal decides
// with `<`. seq is unique, so (t, seq) always decides and kind/a/b are never compared: an event precedes another
// iff t < t' or (t == t' and seq < seq'). Equal times, -0.0 against 0.0 included, go by push order. A NaN time
// would make the Python order depend on the heap's layout (every comparison with NaN is false), so push refuses
// one (the engine never makes one: every time is a sum of finite, validated durations).
//
// Layout. push and pop are CPython's heapq algorithms (_siftdown, and _siftup's bottom-up descent), so the heap
// array equals Python's list element for element after any sequence of pushes and pops, not only the pop order
// (useful when diffing engine traces). The queue is header only (the engine's hot path); event_queue.cpp
// has the replay used by the tests and the benchmark.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace kairos {

struct Event {
    double t;      // simulated time (seconds)
    int64_t seq;   // push counter: ties in t go by push order
    int8_t kind;   // event type
    int32_t a;     // node index or request id
    int64_t b;     // version or node index
};

// Python's tuple `<` on (t, seq, ...) with unique seq and no NaN.
inline bool event_before(const Event& x, const Event& y) noexcept {
    return x.t < y.t || (x.t == y.t && x.seq < y.seq);
}

class EventQueue {
public:
    // Push an event at time t (seconds), numbered with the next seq (`Simulator._push`). Throws
    // std::invalid_argument for a NaN time (the queue is unchanged).
    void push(double t, int8_t kind, int32_t a, int64_t b) {
        if (std::isnan(t)) throw std::invalid_argument("EventQueue.push: the event time is NaN");
        ++seq_;
        heap_.push_back(Event{t, seq_, kind, a, b});
        sift_down(0, heap_.size() - 1);
    }

    // Remove and return the earliest event (`heapq.heappop`). Throws std::out_of_range when empty.
    Event pop() {
        if (heap_.empty()) throw std::out_of_range("EventQueue.pop: the queue is empty");
        Event last = heap_.back();
        heap_.pop_back();
        if (heap_.empty()) return last;
        Event first = heap_[0];
        heap_[0] = last;
        sift_up(0);
        return first;
    }

    // The earliest event, without removing it. Throws std::out_of_range when empty.
    const Event& top() const {
        if (heap_.empty()) throw std::out_of_range("EventQueue.top: the queue is empty");
        return heap_[0];
    }

    bool empty() const noexcept { return heap_.empty(); }
    std::size_t size() const noexcept { return heap_.size(); }
    // The seq of the last push (0 before the first).
    int64_t seq() const noexcept { return seq_; }
    // The heap array, in heapq's layout.
    const std::vector<Event>& items() const noexcept { return heap_; }

private:
    // heapq._siftdown: move heap_[pos] up towards startpos while it precedes its parent.
    void sift_down(std::size_t startpos, std::size_t pos) {
        Event item = heap_[pos];
        while (pos > startpos) {
            std::size_t parentpos = (pos - 1) >> 1;
            if (event_before(item, heap_[parentpos])) {
                heap_[pos] = heap_[parentpos];
                pos = parentpos;
                continue;
            }
            break;
        }
        heap_[pos] = item;
    }

    // heapq._siftup: descend to a leaf along the smaller children, then sift the item back up.
    void sift_up(std::size_t pos) {
        const std::size_t endpos = heap_.size();
        const std::size_t startpos = pos;
        Event item = heap_[pos];
        std::size_t childpos = 2 * pos + 1;
        while (childpos < endpos) {
            std::size_t rightpos = childpos + 1;
            if (rightpos < endpos && !event_before(heap_[childpos], heap_[rightpos])) childpos = rightpos;
            heap_[pos] = heap_[childpos];
            pos = childpos;
            childpos = 2 * pos + 1;
        }
        heap_[pos] = item;
        sift_down(startpos, pos);
    }

    std::vector<Event> heap_;
    int64_t seq_ = 0;
};

// One operation of a recorded sequence (replay_event_queue).
enum EventQueueOp : int8_t { EQ_PUSH = 0, EQ_POP = 1 };

// Apply ops[i] in order: EQ_PUSH pushes (t[i], kind[i], a[i], b[i]), EQ_POP pops into popped[k++] (popped holds
// at least as many events as there are pops). Returns the number of pops. An unknown op code throws
// std::invalid_argument, a pop of an empty queue std::out_of_range, a NaN time std::invalid_argument, each after
// ops[0..i-1].
std::size_t replay_event_queue(EventQueue& q, std::size_t n, const int8_t* ops, const double* t, const int8_t* kind,
                               const int32_t* a, const int64_t* b, Event* popped);

}  // namespace kairos
