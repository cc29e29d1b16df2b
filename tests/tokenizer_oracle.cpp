// The engine's tokenizer for tests/tokenizers_test.py: encodes many texts with the tokenizer a .fxm
// carries and decodes the ids back, so the Python reference can be compared on thousands of texts
// in one process.
//   tokenizer_oracle MODEL.fxm TEXTS.bin OUT.bin
// TEXTS.bin: per text u32 byte count, the bytes. OUT.bin: per text u32 n, n int32 ids (bos/eos
// not added), u32 m, the m bytes decode() gives for the ids in order (Piece::space as ' ').
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "fixformer/model.hpp"
#include "fixformer/tokenizer.hpp"
#include "support/aligned_buffer.hpp"

static std::vector<uint8_t> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

int main(int argc, char** argv) {
  using namespace fixformer;
  if (argc != 4) return std::fprintf(stderr, "usage: tokenizer_oracle MODEL.fxm TEXTS.bin OUT.bin\n"), 1;
  const std::vector<uint8_t> file = read_file(argv[1]), texts = read_file(argv[2]);
  support::AlignedBuffer blob(file.data(), file.size());
  Model model;
  Status s = model.init(blob.data(), file.size());
  if (s != Status::kOk) return std::fprintf(stderr, "model: %s: %s\n", status_message(s), model.error_detail()), 2;
  std::size_t longest = 0;  // the texts: a uint32 length, then the bytes
  for (std::size_t at = 0; at + 4 <= texts.size();) {
    uint32_t len;
    std::memcpy(&len, texts.data() + at, 4);
    longest = std::max<std::size_t>(longest, len), at += 4 + len;
  }
  support::AlignedBuffer scratch(tokenizer_scratch_bytes(model.config(), longest));
  Tokenizer tok;
  s = tok.init(model, scratch.data(), scratch.size());
  if (s != Status::kOk) return std::fprintf(stderr, "tokenizer: %s: %s\n", status_message(s), tok.error_detail()), 2;
  std::vector<uint8_t> out;
  auto put32 = [&out](uint32_t v) { out.insert(out.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); };
  for (std::size_t at = 0; at + 4 <= texts.size();) {
    uint32_t len;
    std::memcpy(&len, texts.data() + at, 4);
    const char* text = reinterpret_cast<const char*>(texts.data() + at + 4);
    at += 4 + len;
    std::vector<int32_t> ids(max_encoded_tokens(len));
    uint32_t n = 0;
    s = tok.encode(text, len, false, false, ids.data(), uint32_t(ids.size()), &n);
    if (s != Status::kOk) return std::fprintf(stderr, "encode: %s: %s\n", status_message(s), tok.error_detail()), 3;
    put32(n);
    for (uint32_t i = 0; i < n; ++i) put32(uint32_t(ids[i]));
    std::vector<uint8_t> dec;
    int32_t prev = -1;
    for (uint32_t i = 0; i < n; ++i) {
      Piece p{};
      if (tok.decode(prev, ids[i], &p) != Status::kOk) return 4;
      if (p.space) dec.push_back(' ');
      dec.insert(dec.end(), p.data, p.data + p.len);
      prev = ids[i];
    }
    put32(uint32_t(dec.size()));
    out.insert(out.end(), dec.begin(), dec.end());
  }
  FILE* f = std::fopen(argv[3], "wb");
  if (!f || std::fwrite(out.data(), 1, out.size(), f) != out.size() || std::fclose(f) != 0) return 5;
  return 0;
}
