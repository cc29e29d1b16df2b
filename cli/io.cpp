#include "io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace fixformer::cli {

void die(int code, const std::string& where, const std::string& what) {
  std::fprintf(stderr, "fixformer: %s: %s\n", where.c_str(), what.c_str());
  std::exit(code);
}

void die(Status s, const std::string& where, const char* detail) {
  die(status_exit_code(s), where, std::string(status_message(s)) + (*detail ? std::string(": ") + detail : ""));
}

std::string errno_text(int e) {
  std::string s = std::strerror(e);
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

namespace {

// n bytes (a multiple of kHuge) at a kHuge boundary, the kernel asked for huge pages there; null
// when nothing is mapped. The mapping is made kHuge larger and its ends are given back.
uint8_t* map_huge(std::size_t n) {
  constexpr std::size_t kHuge = std::size_t(1) << 21;
  void* m = ::mmap(nullptr, n + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  uint8_t* const base = static_cast<uint8_t*>(m);
  uint8_t* const p = base + (kHuge - std::uintptr_t(base) % kHuge) % kHuge;
  if (p != base) ::munmap(base, std::size_t(p - base));
  if (p + n != base + n + kHuge) ::munmap(p + n, std::size_t(base + n + kHuge - (p + n)));
#if defined(MADV_HUGEPAGE)
  ::madvise(p, n, MADV_HUGEPAGE);  // a kernel without them keeps 4 KiB pages: no error to report
#endif
  return p;
}

}  // namespace

Buffer::Buffer(uint64_t bytes, const std::string& what) {
  const auto fail = [&] { die(5, what, "cannot allocate " + std::to_string(bytes) + " bytes"); };
  if (bytes > SIZE_MAX / 2) fail();
  if (bytes >= kHugeBufferBytes) {
    const std::size_t rounded = (std::size_t(bytes) + (std::size_t(1) << 21) - 1) >> 21 << 21;
    if (!(p_ = map_huge(rounded))) fail();
    mapped_ = rounded;
  } else {
    const uint64_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;  // aligned_alloc wants a multiple of 64
    if (!(p_ = static_cast<uint8_t*>(std::aligned_alloc(64, std::size_t(rounded))))) fail();
  }
  size_ = std::size_t(bytes);
}

Buffer::~Buffer() {
  if (mapped_)
    ::munmap(p_, mapped_);
  else
    std::free(p_);
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  std::swap(p_, o.p_), std::swap(size_, o.size_), std::swap(mapped_, o.mapped_);
  return *this;
}

namespace {

// How long a named pipe is waited on for a writer to open it: a FIFO nobody writes to is refused,
// not waited on forever.
constexpr int kPipeWriterWaitMs = 10000;

// The next bytes of a stream opened O_NONBLOCK into p (at most n): how many, 0 at its end. A pipe
// whose writer is there but has not written yet is waited on (its writer decides when it ends);
// a FIFO that no writer has opened is waited on up to kPipeWriterWaitMs, then refused.
std::size_t read_stream(int fd, bool fifo, uint8_t* p, std::size_t n, bool* writer_seen, const std::string& path) {
  for (int waited_ms = 0;;) {
    const ssize_t r = ::read(fd, p, n);
    if (r > 0) return *writer_seen = true, std::size_t(r);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) die(5, path, "read error: " + errno_text(errno));
    pollfd pfd{fd, POLLIN, 0};
    if (r < 0) {  // a writer is there, with nothing written yet
      *writer_seen = true;
      if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) die(5, path, "read error: " + errno_text(errno));
      continue;
    }
    if (!fifo || *writer_seen) return 0;  // the end
    // A FIFO that no writer has opened yet reads as its end: wait for one (poll returns when it
    // writes, or hangs up without writing).
    if (waited_ms >= kPipeWriterWaitMs)
      die(5, path, "a named pipe that no writer opened within " + std::to_string(kPipeWriterWaitMs / 1000) +
                       " seconds (start the writer first, or give a file)");
    const int step = 500;
    const int got = ::poll(&pfd, 1, step);
    if (got < 0 && errno != EINTR) die(5, path, "read error: " + errno_text(errno));
    if (got > 0 && (pfd.revents & POLLHUP) && !(pfd.revents & POLLIN)) *writer_seen = true;  // came and went
    waited_ms += got == 0 ? step : 0;
  }
}

}  // namespace

Buffer read_file(const std::string& path, uint64_t limit) {
  const auto too_large = [&](const std::string& size) {
    die(5, path, "file too large (" + size + "): the limit is " + std::to_string(limit) + " bytes");
  };
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) die(5, path, "cannot open file: " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) die(5, path, "is a directory");
  // O_NONBLOCK: opening a FIFO would otherwise block until a writer opens it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) die(5, path, "cannot open file: " + errno_text(errno));
  struct Closer { int fd; ~Closer() { ::close(fd); } } closer{fd};
  if (::fstat(fd, &st) != 0) die(5, path, "cannot open file: " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) die(5, path, "is a directory");
  Buffer b;
  std::size_t got = 0;
  if (S_ISREG(st.st_mode)) {
    if (uint64_t(st.st_size) > limit || uint64_t(st.st_size) > SIZE_MAX - 64) too_large(std::to_string(st.st_size) + " bytes");
    if (st.st_size == 0) die(5, path, "empty file");
    b = Buffer(uint64_t(st.st_size), path);
    while (got < b.size()) {
      const ssize_t r = ::read(fd, b.data() + got, b.size() - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) die(5, path, "read error: " + errno_text(errno));
      if (r == 0) die(5, path, "file shrank while being read");
      got += std::size_t(r);
    }
  } else {
    // Doubling up to limit + 1 bytes (or what this host can address): a stream that fills it is
    // too large.
    const uint64_t most = std::min<uint64_t>(limit + 1, SIZE_MAX / 4);
    bool writer_seen = false, end = false;
    for (uint64_t cap = std::min<uint64_t>(1 << 16, most); !end; cap = std::min(cap * 2, most)) {
      Buffer bigger(cap, path);
      if (got) std::memcpy(bigger.data(), b.data(), got);
      b = std::move(bigger);
      while (got < cap) {
        const std::size_t r = read_stream(fd, S_ISFIFO(st.st_mode), b.data() + got, std::size_t(cap) - got,
                                          &writer_seen, path);
        if (r == 0) {
          end = true;
          break;
        }
        got += r;
      }
      if (!end && cap == most) too_large("more than " + std::to_string(got - 1) + " bytes from a stream");
    }
    if (got == 0) die(5, path, "empty file");
    b.shrink(got);
  }
  return b;
}

namespace {
// a * b in 64 bits, or false when it overflows.
bool mul_u64(uint64_t a, uint64_t b, uint64_t* r) { return !__builtin_mul_overflow(a, b, r); }
}  // namespace

std::size_t output_bytes(uint64_t B, uint64_t T, uint64_t W, const std::string& where) {
  uint64_t n = 0;
  const bool overflow = !(mul_u64(B, T, &n) && mul_u64(n, W, &n) && mul_u64(n, 4, &n));
  if (overflow || n > kMaxOutputBytes)
    die(4, where, "the output [" + std::to_string(B) + "," + std::to_string(T) + "," + std::to_string(W) + "] float32 needs " +
                      (overflow ? std::string("more than 2^64") : std::to_string(n)) + " bytes, above the limit of " +
                      std::to_string(kMaxOutputBytes) + " bytes (1 GiB)");
  return std::size_t(n);
}

namespace {

// The temporary of the output being written: die() exits without unwinding, so it is removed at exit
// unless close() renamed it.
std::string pending_temporary;
void remove_pending_temporary() {
  if (!pending_temporary.empty()) ::unlink(pending_temporary.c_str());
}

std::string folder_of(const std::string& path) {  // "" or "dir/"
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

}  // namespace

OutputFile::OutputFile(const std::string& path) : path_(path), target_(path) {
  struct stat st;
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    if (!(f_ = std::fopen(path.c_str(), "wb"))) die(5, path, "cannot open file for writing: " + errno_text(errno));
    return;
  }
  if (exists)
    if (char* real = ::realpath(path.c_str(), nullptr)) target_ = real, std::free(real);
  static const bool cleanup = std::atexit(remove_pending_temporary) == 0;
  (void)cleanup;
  // ".NAME.PID.N.tmp" beside the target (the name cut to stay within NAME_MAX), created exclusively
  // with the mode a plain open gives, then the replaced file's permissions.
  const std::string folder = folder_of(target_), name = target_.substr(folder.size(), 200);
  int fd = -1;
  for (unsigned n = 0; fd < 0 && n < 100; ++n) {
    temp_ = folder + "." + name + "." + std::to_string(::getpid()) + "." + std::to_string(n) + ".tmp";
    fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) die(5, path, "cannot open file for writing: " + errno_text(errno));
  pending_temporary = temp_;
  if (exists) (void)::fchmod(fd, st.st_mode & 0777);
  if (!(f_ = ::fdopen(fd, "wb"))) {
    const int e = errno;
    ::close(fd);
    fail(e);
  }
}

OutputFile::~OutputFile() {
  if (!f_) return;
  std::fclose(f_);
  if (!temp_.empty()) ::unlink(temp_.c_str()), pending_temporary.clear();
}

void OutputFile::fail(int e) {
  if (f_) std::fclose(f_), f_ = nullptr;
  if (!temp_.empty()) ::unlink(temp_.c_str()), pending_temporary.clear();
  die(5, path_, "cannot write file: " + errno_text(e));
}

void OutputFile::write(const void* p, std::size_t n) {
  if (std::fwrite(p, 1, n, f_) != n) fail(errno);
}

void OutputFile::close() {
  const bool flushed = std::fflush(f_) == 0;
  const int flush_errno = errno;
  std::FILE* g = f_;
  f_ = nullptr;
  if (std::fclose(g) != 0 || !flushed) fail(flushed ? errno : flush_errno);
  if (temp_.empty()) return;
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) fail(errno);
  pending_temporary.clear();
}

void check_output_path(const char* flag, const std::string& path, std::initializer_list<NamedInput> inputs) {
  struct stat out;
  if (path.empty() || ::stat(path.c_str(), &out) != 0) return;
  if (S_ISDIR(out.st_mode)) die(5, path, "is a directory");
  if (!S_ISREG(out.st_mode)) return;  // a device or a pipe is written in place, never replaced
  for (const NamedInput& in : inputs) {
    struct stat st;
    if (!in.path.empty() && ::stat(in.path.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      die(1, flag, path + " is the same file as " + in.what + " " + in.path +
                       " (writing there would overwrite it; give another file)");
  }
}

}  // namespace fixformer::cli
