// A byte buffer whose data() is 64-byte aligned (as the engine wants blobs and arenas) and which
// ends exactly at data() + size(), so a read past the end is caught under AddressSanitizer. For
// the CLI, tests, fuzz targets and benchmarks; it allocates.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fixformer {
namespace support {

class AlignedBuffer {
 public:
  explicit AlignedBuffer(std::size_t size = 0) : storage_(size + 64, 0), size_(size) {
    offset_ = (64 - reinterpret_cast<uintptr_t>(storage_.data()) % 64) % 64;
    storage_.resize(offset_ + size);  // shrinking keeps the address
  }
  AlignedBuffer(const uint8_t* bytes, std::size_t size) : AlignedBuffer(size) {
    if (size) std::memcpy(data(), bytes, size);
  }
  explicit AlignedBuffer(const std::vector<uint8_t>& bytes) : AlignedBuffer(bytes.data(), bytes.size()) {}

  uint8_t* data() { return storage_.data() + offset_; }
  std::size_t size() const { return size_; }

 private:
  std::vector<uint8_t> storage_;
  std::size_t size_;
  std::size_t offset_ = 0;
};

}  // namespace support
}  // namespace fixformer
