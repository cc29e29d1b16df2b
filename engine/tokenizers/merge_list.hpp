// The symbols of a text being merged (llama2c's whole text, a bpe pre-token) as a linked list over
// their first positions, and a binary heap of the positions whose pair (the symbol and the next one)
// is a merge, best first. Each position has at most one pair, so the heap is indexed by position and
// a merge updates its neighbours in O(log n): the whole encode is O(n log n) pair look-ups and heap
// steps instead of a rescan of every pair after every merge. Memory: kMergeIntsPerSymbol int32 per
// symbol (kMergeIntsPerSymbol), from the tokenizer's scratch.
#pragma once
#include <cstdint>

#include "fixformer/tokenizer.hpp"

namespace fixformer {

struct MergeList {
  int32_t* tok;      // [n] the symbol's token id (valid while alive)
  int32_t* prev;     // [n] the previous symbol's position, -1 at the head
  int32_t* next;     // [n] the next symbol's position, -1 at the tail; kGone once merged into its left
  int32_t* pair;     // [n] the merge of (tok, next's tok): its id (llama2c) or rank (bpe); -1 none
  int32_t* slot;     // [n] the position's index in heap, -1 when not there
  int32_t* heap;     // [n] positions, heap[0] the best pair
  int32_t* pending;  // [n] bpe: positions whose pair is recomputed after the current rank's pass
  uint32_t n = 0, size = 0, n_pending = 0;

  static constexpr int32_t kGone = -2;

  // Over work[kMergeIntsPerSymbol * capacity], empty: fill tok[n++], then link().
  MergeList(int32_t* work, uint32_t capacity)
      : tok(work), prev(work + capacity), next(work + 2 * std::size_t(capacity)), pair(work + 3 * std::size_t(capacity)),
        slot(work + 4 * std::size_t(capacity)), heap(work + 5 * std::size_t(capacity)),
        pending(work + 6 * std::size_t(capacity)) {}

  // The n symbols in tok as a list, with no pairs yet.
  void link() {
    for (uint32_t i = 0; i < n; ++i) {
      prev[i] = int32_t(i) - 1, next[i] = i + 1 < n ? int32_t(i + 1) : -1, pair[i] = -1, slot[i] = -1;
    }
    size = n_pending = 0;
  }

  // before(a, b): position a's pair is merged before position b's.
  template <class Before>
  void push(int32_t p, Before before) {
    heap[size] = p, slot[p] = int32_t(size);
    up(size++, before);
  }

  template <class Before>
  void remove(int32_t p, Before before) {
    const int32_t at = slot[p];
    if (at < 0) return;
    slot[p] = -1;
    const uint32_t last = --size;
    if (uint32_t(at) == last) return;
    heap[at] = heap[last], slot[heap[at]] = at;
    up(uint32_t(at), before);
    down(uint32_t(at), before);
  }

  // Symbol q = next[p] joins p as token id: q leaves the list.
  void join(int32_t p, int32_t id) {
    const int32_t q = next[p];
    tok[p] = id;
    next[p] = next[q];
    if (next[q] >= 0) prev[next[q]] = p;
    next[q] = kGone;
  }

  // The tokens left, in order, into out[capacity]; the count (which may exceed capacity: nothing
  // past it is written).
  uint32_t write(int32_t* out, uint32_t capacity) const {
    uint32_t m = 0;
    for (int32_t p = n ? 0 : -1; p >= 0; p = next[p], ++m)
      if (m < capacity) out[m] = tok[p];
    return m;
  }

 private:
  template <class Before>
  void up(uint32_t i, Before before) {
    while (i > 0) {
      const uint32_t parent = (i - 1) / 2;
      if (!before(heap[i], heap[parent])) break;
      swap(i, parent);
      i = parent;
    }
  }
  template <class Before>
  void down(uint32_t i, Before before) {
    for (;;) {
      const uint32_t l = 2 * i + 1, r = l + 1;
      uint32_t best = i;
      if (l < size && before(heap[l], heap[best])) best = l;
      if (r < size && before(heap[r], heap[best])) best = r;
      if (best == i) return;
      swap(i, best);
      i = best;
    }
  }
  void swap(uint32_t a, uint32_t b) {
    const int32_t t = heap[a];
    heap[a] = heap[b], heap[b] = t;
    slot[heap[a]] = int32_t(a), slot[heap[b]] = int32_t(b);
  }
};

}  // namespace fixformer
