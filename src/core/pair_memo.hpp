// PairMemo: a memo of doubles keyed by two doubles, compared by their bits (the Pricer's memo of the attention
// p-norm, pricer.cpp attn_time, and of a step's dense terms, model_time: both are pure functions of their
// arguments, so a stored value is what the caller would compute, bit for bit).
//
// Open addressing with linear probing in a power-of-two array, grown by doubling at 3/4 load, like FlatMemo
// (flat_memo.hpp), with a 16-byte key. The all-ones first word marks an empty slot: it is the bit pattern of a
// NaN, and the callers key only finite numbers. No erase: the Pricer clears a memo when it reaches its limit
// (Pricer::kMemoLimit = 200,000 entries), so the array never exceeds 2^19 slots of 24 bytes (12 MiB); clear()
// keeps the array for the next fill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kairos {

class PairMemo {
   public:
    // The stored value of (a, b), or nullptr.
    const double* find(double a, double b) const {
        if (slots_.empty()) return nullptr;
        const uint64_t ka = bits(a), kb = bits(b);
        for (size_t i = index(ka, kb);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.a == ka && s.b == kb) return &s.value;
            if (s.a == kEmpty) return nullptr;
        }
    }
    // Store `value` for a key not stored yet (the callers look it up first); a and b finite.
    void emplace(double a, double b, double value) { put(bits(a), bits(b), value); }
    size_t size() const { return size_; }
    void clear() {  // keeps the array (the next fill reaches the same size)
        for (Slot& s : slots_) s.a = kEmpty;
        size_ = 0;
    }

   private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    struct Slot {
        uint64_t a = kEmpty;
        uint64_t b = 0;
        double value = 0.0;
    };
    static uint64_t bits(double x) {
        uint64_t u;
        std::memcpy(&u, &x, sizeof u);
        return u;
    }
    size_t index(uint64_t a, uint64_t b) const {
        const uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ ((b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full);
        return static_cast<size_t>((h ^ (h >> 29)) * 0x9E3779B97F4A7C15ull >> shift_);
    }
    void put(uint64_t a, uint64_t b, double value) {
        if (4 * (size_ + 1) > 3 * slots_.size()) rehash(slots_.empty() ? 64 : 2 * slots_.size());
        size_t i = index(a, b);
        while (slots_[i].a != kEmpty) i = (i + 1) & mask_;
        slots_[i] = {a, b, value};
        ++size_;
    }
    void rehash(size_t n) {  // n a power of two >= 64
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(n, Slot{});
        mask_ = n - 1;
        shift_ = 64;
        for (size_t m = n; m > 1; m >>= 1) --shift_;
        size_ = 0;
        for (const Slot& s : old)
            if (s.a != kEmpty) put(s.a, s.b, s.value);
    }
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    unsigned shift_ = 64;
    size_t size_ = 0;
};

}  // namespace kairos
