// FlatMemo: the Pricer's memo of doubles keyed by a packed pair of token counts (pricer.cpp pack(): a, b in
// [0, 2^24], so a key is < 2^56 and the all-ones key never occurs: it marks an empty slot).
//
// Open addressing with linear probing in a power-of-two array (a Fibonacci hash of the key), grown by doubling
// at 3/4 load. It replaces std::unordered_map, whose per-entry heap node, modulo-prime bucket index and pointer
// chase were the largest single cost of pricing a decision menu (callgrind, docs/performance.md). A memo never
// changes a value: what it returns is what the caller would compute, so the container cannot change results.
// No erase: the Pricer clears a memo when it reaches its limit, as the Python ChunkPricer does. Size bound: under
// the Pricer's limit (Pricer::kMemoLimit = 200,000 entries) the array never exceeds 2^19 slots of 16 bytes (8 MiB);
// clear() keeps the array for the next fill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kairos {

class FlatMemo {
   public:
    // The stored value of `key`, or nullptr.
    const double* find(uint64_t key) const {
        if (slots_.empty()) return nullptr;
        for (size_t i = index(key);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.key == key) return &s.value;
            if (s.key == kEmpty) return nullptr;
        }
    }
    // Store `value` for a key not stored yet (the callers look it up first).
    void emplace(uint64_t key, double value) {
        if (4 * (size_ + 1) > 3 * slots_.size()) rehash(slots_.empty() ? 64 : 2 * slots_.size());
        size_t i = index(key);
        while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
        slots_[i] = {key, value};
        ++size_;
    }
    size_t size() const { return size_; }
    void clear() {  // keeps the array (the next fill reaches the same size)
        for (Slot& s : slots_) s.key = kEmpty;
        size_ = 0;
    }

   private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    struct Slot {
        uint64_t key = kEmpty;
        double value = 0.0;
    };
    size_t index(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
    void rehash(size_t n) {  // n a power of two >= 64
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(n, Slot{});
        mask_ = n - 1;
        shift_ = 64;
        for (size_t m = n; m > 1; m >>= 1) --shift_;
        size_ = 0;
        for (const Slot& s : old)
            if (s.key != kEmpty) emplace(s.key, s.value);
    }
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    unsigned shift_ = 64;
    size_t size_ = 0;
};

}  // namespace kairos
