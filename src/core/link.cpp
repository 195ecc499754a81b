// The fair-share P->D link (see link.hpp; Python: kairos_gym/latency/transfer.py FairShareLink).
#include "link.hpp"

#include <cmath>
#include <limits>

namespace kairos {

FairShareLink::FairShareLink(double bandwidth_bytes_per_s) : bandwidth_(bandwidth_bytes_per_s) {
    if (!(bandwidth_ > 0.0 && bandwidth_ < std::numeric_limits<double>::infinity()))
        throw std::invalid_argument("FairShareLink: the bandwidth must be a finite number > 0 (bytes/s)");
}

void FairShareLink::add(int64_t tid, double nbytes, double now) {
    advance(now);
    const std::size_t i = find(tid);
    if (i == npos) {
        tid_.push_back(tid);
        rem_.push_back(nbytes);
    } else {
        rem_[i] = nbytes;  // a dict assignment to a present key keeps its place
    }
    ++version_;
}

void FairShareLink::remove(int64_t tid, double now) {
    advance(now);
    const std::size_t i = find(tid);
    if (i == npos) throw UnknownTransfer(tid);
    tid_.erase(tid_.begin() + static_cast<std::ptrdiff_t>(i));
    rem_.erase(rem_.begin() + static_cast<std::ptrdiff_t>(i));
    ++version_;
}

void FairShareLink::set_rate(double now, double bandwidth_bytes_per_s, bool cut) {
    if (!(bandwidth_bytes_per_s > 0.0 && bandwidth_bytes_per_s < std::numeric_limits<double>::infinity()))
        throw std::invalid_argument("FairShareLink.set_rate: the bandwidth must be a finite number > 0 (bytes/s)");
    advance(now);
    bandwidth_ = bandwidth_bytes_per_s;
    cut_ = cut;
    ++version_;
}

bool FairShareLink::next_completion(Completion& out) const noexcept {
    const std::size_t n = tid_.size();
    if (!n || cut_) return false;
    // min over (remaining, id) tuples: the least remaining, ties to the smallest id (the values are never NaN:
    // sums and differences of finite numbers)
    double rem = rem_[0];
    int64_t tid = tid_[0];
    for (std::size_t i = 1; i < n; ++i) {
        if (rem_[i] < rem || (rem_[i] == rem && tid_[i] < tid)) {
            rem = rem_[i];
            tid = tid_[i];
        }
    }
    if (rem < 0.0) rem = 0.0;
    out.t = last_ + rem * static_cast<double>(n) / bandwidth_;
    out.tid = tid;
    return true;
}

void FairShareLink::set_state(double last, std::vector<int64_t> tids, std::vector<double> remaining,
                              int64_t version) {
    if (tids.size() != remaining.size())
        throw std::invalid_argument("FairShareLink.set_state: ids and remaining bytes differ in length");
    for (std::size_t i = 0; i < tids.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (tids[i] == tids[j]) throw std::invalid_argument("FairShareLink.set_state: a repeated transfer id");
    last_ = last;
    tid_ = std::move(tids);
    rem_ = std::move(remaining);
    version_ = version;
}

void replay_link(FairShareLink& link, std::size_t n, const int8_t* ops, const int64_t* tid, const double* nbytes,
                 const double* now, double* out_t, int64_t* out_tid) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t i = 0; i < n; ++i) {
        out_t[i] = nan;
        out_tid[i] = -1;
        switch (ops[i]) {
            case LINK_ADVANCE: link.advance(now[i]); break;
            case LINK_ADD: link.add(tid[i], nbytes[i], now[i]); break;
            case LINK_REMOVE: link.remove(tid[i], now[i]); break;
            case LINK_NEXT: {
                Completion c;
                if (link.next_completion(c)) {
                    out_t[i] = c.t;
                    out_tid[i] = c.tid;
                }
                break;
            }
            default: throw std::invalid_argument("replay_link: an unknown op code (0..3 allowed)");
        }
    }
}

}  // namespace kairos
