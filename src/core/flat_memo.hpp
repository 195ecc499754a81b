// The Pricer's memos of doubles: open addressing with linear probing in a power-of-two array, grown by doubling at
// 3/4 load. It replaces std::unordered_map, whose per-entry heap node, modulo-prime bucket index and pointer chase
// were the largest single cost of pricing a decision menu (callgrind, docs/performance.md). A memo never changes a
// value: what it returns is what the caller would compute, so the container cannot change results. No erase: the
// Pricer clears a memo when it reaches its limit, as the Python ChunkPricer does; clear() keeps the array for the
// next fill. Size bound: under the Pricer's limit (Pricer::kMemoLimit = 200,000 entries) the array never exceeds
// 2^19 slots (16 bytes a slot for FlatMemo: 8 MiB; 24 for PairMemo: 12 MiB).
//
// Two keys (OpenMemo's Key):
// - FlatMemo: a packed pair of token counts (pricer.cpp pack(): a, b in [0, 2^24], so a key is < 2^56 and the
//   all-ones key never occurs: it marks an empty slot);
// - PairMemo: two doubles compared by their bits (the attention p-norm and a step's dense terms, pricer.cpp):
//   the all-ones first word, a NaN's bit pattern, marks an empty slot, and the callers key only finite numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kairos {

struct PackedKey {  // FlatMemo's key
    uint64_t k = ~uint64_t{0};
    bool empty() const { return k == ~uint64_t{0}; }
    bool operator==(const PackedKey& o) const { return k == o.k; }
    uint64_t hash() const { return k * 0x9E3779B97F4A7C15ull; }
};

struct BitsPairKey {  // PairMemo's key: two doubles by their bits
    uint64_t a = ~uint64_t{0};
    uint64_t b = 0;
    static BitsPairKey of(double x, double y) {
        BitsPairKey k;
        std::memcpy(&k.a, &x, sizeof k.a);
        std::memcpy(&k.b, &y, sizeof k.b);
        return k;
    }
    bool empty() const { return a == ~uint64_t{0}; }
    bool operator==(const BitsPairKey& o) const { return a == o.a && b == o.b; }
    uint64_t hash() const {
        const uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ ((b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full);
        return (h ^ (h >> 29)) * 0x9E3779B97F4A7C15ull;
    }
};

template <class Key>
class OpenMemo {
   public:
    // The stored value of `key`, or nullptr.
    const double* find(const Key& key) const {
        if (slots_.empty()) return nullptr;
        for (size_t i = index(key);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.key == key) return &s.value;
            if (s.key.empty()) return nullptr;
        }
    }
    // Store `value` for a key not stored yet (the callers look it up first).
    void emplace(const Key& key, double value) {
        if (4 * (size_ + 1) > 3 * slots_.size()) rehash(slots_.empty() ? 64 : 2 * slots_.size());
        size_t i = index(key);
        while (!slots_[i].key.empty()) i = (i + 1) & mask_;
        slots_[i] = {key, value};
        ++size_;
    }
    size_t size() const { return size_; }
    void clear() {  // keeps the array (the next fill reaches the same size)
        for (Slot& s : slots_) s.key = Key{};
        size_ = 0;
    }

   private:
    struct Slot {
        Key key{};
        double value = 0.0;
    };
    size_t index(const Key& key) const { return static_cast<size_t>(key.hash() >> shift_); }
    void rehash(size_t n) {  // n a power of two >= 64
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(n, Slot{});
        mask_ = n - 1;
        shift_ = 64;
        for (size_t m = n; m > 1; m >>= 1) --shift_;
        size_ = 0;
        for (const Slot& s : old)
            if (!s.key.empty()) emplace(s.key, s.value);
    }
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    unsigned shift_ = 64;
    size_t size_ = 0;
};

// Keyed by a packed pair of token counts (the attention, prefill-alone and menu-term memos).
class FlatMemo : public OpenMemo<PackedKey> {
   public:
    const double* find(uint64_t key) const { return OpenMemo::find(PackedKey{key}); }
    void emplace(uint64_t key, double value) { OpenMemo::emplace(PackedKey{key}, value); }
};

// Keyed by two doubles' bits (the p-norm and dense-term memos).
class PairMemo : public OpenMemo<BitsPairKey> {
   public:
    const double* find(double a, double b) const { return OpenMemo::find(BitsPairKey::of(a, b)); }
    void emplace(double a, double b, double value) { OpenMemo::emplace(BitsPairKey::of(a, b), value); }
};

}  // namespace kairos
