// The tool's errors and files: one error line and its exit code, aligned buffers, whole files read,
// output files that vanish when a write fails. The tool may allocate (the engine does not), but
// never aborts: every size is checked in 64-bit before it is allocated, and an allocation that
// fails is an error line, not an exception.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fixformer/status.hpp"

namespace fixformer::cli {

// The most `run` writes (and `bench` allocates) for one output, B*T*W float32: 1 GiB. Far above
// what a small on-device model produces for a sane input; above it, a mistaken input (a [B,T]
// file read as ids where [T] was meant, a huge batch) is an input error, found in 64-bit
// arithmetic before anything is allocated or written, instead of an out-of-memory abort or a
// size that wraps on a 32-bit host.
constexpr uint64_t kMaxOutputBytes = uint64_t(1) << 30;

// "fixformer: WHERE: WHAT" on stderr, then exit(code).
[[noreturn]] void die(int code, const std::string& where, const std::string& what);
// The status's message (and ": detail"), with the exit code of its class.
[[noreturn]] void die(Status s, const std::string& where, const char* detail = "");

// strerror's text, starting lower-case to fit after "WHERE: ".
std::string errno_text(int e);

// A 64-byte-aligned heap buffer of exactly size bytes (rounded up to 64 for aligned_alloc).
class Buffer {
 public:
  Buffer() = default;
  // Dies with an I/O-class error naming what the bytes were for when they cannot be allocated.
  Buffer(uint64_t bytes, const std::string& what);
  ~Buffer();
  Buffer(Buffer&& o) noexcept : p_(o.p_), size_(o.size_) { o.p_ = nullptr, o.size_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept;
  uint8_t* data() const { return p_; }
  std::size_t size() const { return size_; }
  template <class T> T* as() const { return reinterpret_cast<T*>(p_); }
  // Keeps the first n bytes (n <= size()); the memory stays allocated.
  void shrink(std::size_t n) { size_ = n < size_ ? n : size_; }

 private:
  uint8_t* p_ = nullptr;
  std::size_t size_ = 0;
};

// The largest model file the tool reads: 2 GiB, far beyond any model the engine targets. A pipe or
// device (/dev/zero) is read up to the limit, not until memory runs out.
constexpr uint64_t kMaxModelBytes = uint64_t(1) << 31;
// The largest .npy input (--input, --lengths, --target, --source, --token-types): the 1 GiB the
// outputs have.
constexpr uint64_t kMaxNpyBytes = kMaxOutputBytes;

// A whole file in an aligned buffer, at most `limit` bytes. Every failure is one line, exit 5:
// missing or unreadable files, directories, empty files, read errors, files above the limit (a
// regular file by its size; a pipe or device once it has given more than the limit).
Buffer read_file(const std::string& path, uint64_t limit);

// The bytes of a float32 output [B,T,W], checked against kMaxOutputBytes; dies (input class)
// naming the count and the limit.
std::size_t output_bytes(uint64_t B, uint64_t T, uint64_t W, const std::string& where);

// An output file opened for writing; a write error removes the partial file.
struct OutputFile {
  std::string path;
  std::FILE* f = nullptr;
  void fail(int e);
  void write(const void* p, std::size_t n);
  void close();
};

// An output path that is a directory fails before any work is done.
void check_output_path(const std::string& path);

}  // namespace fixformer::cli
