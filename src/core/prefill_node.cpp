#include "prefill_node.hpp"

#include <stdexcept>

namespace kairos {

void PrefillNode::enqueue(int64_t rid, int64_t p) {
    queue.push_back(PrefillItem{rid, p, 0});
    queued_tokens += p;
    q_pairs += static_cast<double>(p * (p + 1)) / 2.0;  // an exact int product, then / 2.0
    q_kv += static_cast<double>(p);
}

bool PrefillNode::remove_unstarted(int64_t rid, int64_t p) {
    for (auto it = queue.begin(); it != queue.end(); ++it) {
        if (it->rid != rid) continue;
        if (it->done != 0 || it->rem != p) throw std::logic_error("prefill node: removing a started prefill");
        queue.erase(it);
        queued_tokens -= p;
        q_pairs -= static_cast<double>(p * (p + 1)) / 2.0;
        q_kv -= static_cast<double>(p);
        return true;
    }
    return false;
}

bool PrefillNode::compose_step(int64_t budget) {
    step.clear();
    int64_t n_tok = 0;
    double pairs = 0.0;
    double kv = 0.0;
    for (const PrefillItem& it : queue) {
        if (n_tok >= budget) break;
        int64_t c = it.rem < budget - n_tok ? it.rem : budget - n_tok;
        step.push_back(StepItem{it.rid, c, it.done});
        n_tok += c;
        pairs += static_cast<double>(c) * (static_cast<double>(it.done) + static_cast<double>(c + 1) / 2.0);
        kv += static_cast<double>(it.done + c);
    }
    has_step = !step.empty();
    if (has_step) {  // an empty queue leaves the last step's figures
        step_tokens = n_tok;
        step_pairs = pairs;
        step_kv = kv;
    }
    return has_step;
}

int64_t PrefillNode::complete_chunk(int64_t rid, int64_t c) {
    auto it = queue.begin();
    if (it == queue.end()) throw std::logic_error("prefill node: a step item is not queued");
    if (it->rid != rid) {
        for (; it != queue.end() && it->rid != rid; ++it) {
        }
        if (it == queue.end()) throw std::logic_error("prefill node: a step item is not queued");
    }
    int64_t rem = it->rem, dn = it->done;
    q_pairs -= static_cast<double>(rem) * (static_cast<double>(dn) + static_cast<double>(rem + 1) / 2.0);
    rem -= c;
    dn += c;
    it->rem = rem;
    it->done = dn;
    queued_tokens -= c;
    if (rem == 0) {
        q_kv -= static_cast<double>(dn);
        queue.erase(it);
        return dn;
    }
    q_pairs += static_cast<double>(rem) * (static_cast<double>(dn) + static_cast<double>(rem + 1) / 2.0);
    return -1;
}

bool PrefillNode::remove(int64_t rid) {
    for (auto it = queue.begin(); it != queue.end(); ++it) {
        if (it->rid != rid) continue;
        const int64_t rem = it->rem, dn = it->done;
        q_pairs -= static_cast<double>(rem) * (static_cast<double>(dn) + static_cast<double>(rem + 1) / 2.0);
        q_kv -= static_cast<double>(dn + rem);
        queued_tokens -= rem;
        queue.erase(it);
        return true;
    }
    return false;
}

bool PrefillNode::in_step(int64_t rid, bool* final) const {
    if (!has_step) return false;
    for (const StepItem& s : step)
        if (s.rid == rid) {
            for (const PrefillItem& q : queue)
                if (q.rid == rid) *final = s.chunk >= q.rem;
            return true;
        }
    return false;
}

}  // namespace kairos
