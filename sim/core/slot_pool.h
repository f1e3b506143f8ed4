// A vector whose freed slots are reused (the last freed first), so an index stays a stable
// handle for an event's `data` while memory holds only what is in flight.
#pragma once

#include <cstdint>
#include <vector>

namespace fleetsim::core {

template <class T>
class SlotPool {
 public:
  /// Stores `v` in a free slot (or a new one) and returns the slot.
  uint32_t add(const T& v) {
    if (!free_.empty()) {
      const uint32_t s = free_.back();
      free_.pop_back();
      items_[s] = v;
      return s;
    }
    items_.push_back(v);
    return static_cast<uint32_t>(items_.size() - 1);
  }
  /// The slot may be reused by the next add(); its value stays until then.
  void release(uint32_t s) { free_.push_back(s); }
  T& operator[](uint32_t s) { return items_[s]; }
  const T& operator[](uint32_t s) const { return items_[s]; }
  /// Slots ever handed out (live and free): the range to scan.
  uint32_t capacity() const { return static_cast<uint32_t>(items_.size()); }
  /// Slots holding a value not yet released.
  size_t live() const { return items_.size() - free_.size(); }

 private:
  std::vector<T> items_;
  std::vector<uint32_t> free_;
};

}  // namespace fleetsim::core
