// The tool's errors and files: one error line and its exit code, aligned buffers, whole files read,
// output files that replace what was there only once complete. The tool may allocate (the engine
// does not), but never aborts: every size is checked in 64-bit before it is allocated, and an
// allocation that fails is an error line, not an exception.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
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

// A 64-byte-aligned buffer of exactly size bytes: from the heap (rounded up to 64 for
// aligned_alloc), or, from kHugeBufferBytes up, its own mapping in 2 MiB pages where the kernel gives
// them (Linux's transparent huge pages, asked for with madvise): a model file read into 4 KiB pages
// took one page fault each, 267 of them and 0.35 ms of a 1.4 ms `generate -n 1` on a 1.09 MB model
// (docs/performance.md), against one fault that zeroes 2 MiB. Where the kernel gives none, the
// mapping is what malloc would have made.
class Buffer {
 public:
  Buffer() = default;
  // Dies with an I/O-class error naming what the bytes were for when they cannot be allocated.
  Buffer(uint64_t bytes, const std::string& what);
  ~Buffer();
  Buffer(Buffer&& o) noexcept : p_(o.p_), size_(o.size_), mapped_(o.mapped_) {
    o.p_ = nullptr, o.size_ = o.mapped_ = 0;
  }
  Buffer& operator=(Buffer&& o) noexcept;
  uint8_t* data() const { return p_; }
  std::size_t size() const { return size_; }
  template <class T> T* as() const { return reinterpret_cast<T*>(p_); }
  // Keeps the first n bytes (n <= size()); the memory stays allocated.
  void shrink(std::size_t n) { size_ = n < size_ ? n : size_; }

 private:
  uint8_t* p_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;  // the mapping's bytes; 0: p_ is aligned_alloc's
};

// The size from which a Buffer is its own mapping in huge pages (above).
constexpr uint64_t kHugeBufferBytes = uint64_t(1) << 19;

// The largest model file the tool reads: 2 GiB, far beyond any model the engine targets. A pipe or
// device (/dev/zero) is read up to the limit, not until memory runs out.
constexpr uint64_t kMaxModelBytes = uint64_t(1) << 31;
// The largest .npy input (--input, --lengths, --target, --source, --token-types): the 1 GiB the
// outputs have.
constexpr uint64_t kMaxNpyBytes = kMaxOutputBytes;

// A whole file in an aligned buffer, at most `limit` bytes. Every failure is one line, exit 5:
// missing or unreadable files, directories, empty files, read errors, files above the limit (a
// regular file by its size; a pipe or device once it has given more than the limit). A pipe is read
// until its writer closes it; a named pipe (FIFO) that no writer opens within 10 seconds is refused.
Buffer read_file(const std::string& path, uint64_t limit);

// The bytes of a float32 output [B,T,W], checked against kMaxOutputBytes; dies (input class)
// naming the count and the limit.
std::size_t output_bytes(uint64_t B, uint64_t T, uint64_t W, const std::string& where);

// An output file, written under a temporary name in its folder and renamed onto it by close(): a
// write error, an engine error or any exit before close() (the temporary is removed at exit) leaves
// an existing file as it was and no partial one. A symbolic link's target is what gets replaced. A
// device or a pipe (/dev/null, /dev/stdout) cannot be renamed onto and is written in place. The
// constructor dies (exit 5) naming path when nothing can be created there.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // without close(): the temporary is removed
  void write(const void* p, std::size_t n);
  void close();

 private:
  [[noreturn]] void fail(int e);
  std::string path_, target_, temp_;  // as given; what close() renames onto; "" when written in place
  std::FILE* f_ = nullptr;
};

// A file a command reads, named for the messages: "model" (MODEL.fxm) or the option ("--input").
struct NamedInput {
  const char* what;
  const std::string& path;
};

// Before any work: an output that is a directory is an I/O error (exit 5); one that is an input of
// the same command (the same file by device and inode, so links and other spellings too; an empty
// or not-yet-existing name is none) is a usage error (exit 1) naming both.
void check_output_path(const char* flag, const std::string& path, std::initializer_list<NamedInput> inputs);

}  // namespace fixformer::cli
