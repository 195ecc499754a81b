// Replay of a recorded push/pop sequence on an EventQueue (event_queue.hpp), for the differential tests and the
// benchmark: the queue itself is header only.
#include "event_queue.hpp"

namespace kairos {

std::size_t replay_event_queue(EventQueue& q, std::size_t n, const int8_t* ops, const double* t, const int8_t* kind,
                               const int32_t* a, const int64_t* b, Event* popped) {
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (ops[i] == EQ_PUSH) q.push(t[i], kind[i], a[i], b[i]);
        else if (ops[i] == EQ_POP) popped[k++] = q.pop();
        else throw std::invalid_argument("replay_event_queue: an unknown op code (0 push, 1 pop)");
    }
    return k;
}

}  // namespace kairos
