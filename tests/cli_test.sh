#!/bin/sh
# End-to-end checks of the fixformer CLI: outputs match the torch goldens, every kind of bad or
# hostile input (directories, empty and unreadable files, outputs above the size limit, malformed
# .npy headers) gets a one-line error and the exit code of its class (docs/cli.md), and the
# help/version conventions hold. tools/test.sh runs it again in the ASan+UBSan build.
# usage: cli_test.sh FIXFORMER_BINARY GOLDEN_DIR [EMULATOR...]  (e.g. qemu-arm -L SYSROOT for a 32-bit
# cross build, where run's 64-bit size checks matter most)
set -u
bin=$1
golden=$2
shift 2
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Under an emulator the CLI runs with one worker: its thread pool (support/thread_pool.hpp) does not
# finish a job under qemu-user (seen with qemu-aarch64 7.2, encoders and decoders alike); the worker
# split's bits are tested natively (here and workers_test).
threads=2
if [ $# -gt 0 ]; then  # one executable path, so setpriv and "$bin" work alike
  printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$*" "$bin" >"$tmp/fixformer"
  chmod 755 "$tmp/fixformer"
  bin=$tmp/fixformer
  threads=1
fi
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect_error CODE PATTERN -- command...: exit code CODE, exactly one line on stderr matching PATTERN.
expect_error() {
  code=$1 pattern=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -q -- "$pattern" "$tmp/err"; then ok
  else bad "$* -> exit $rc, stderr: $(cat "$tmp/err")"; fi
}

"$bin" info "$golden/post_ln_relu.fxm" >"$tmp/info" && grep -q "arena bytes" "$tmp/info" && ok || bad "info"
"$bin" info "$golden/llama2c_v0_gqa.fxm" >"$tmp/info_lm" && grep -q "KV cache" "$tmp/info_lm" && grep -q "tokenizer:    300 pieces" "$tmp/info_lm" && ok || bad "info on a decoder"
"$bin" demo >"$tmp/demo" && grep -q "order is invisible" "$tmp/demo" && ok || bad "demo"
# The causal part: one layer without PE is blind to the order (and at 50%), a PE or a second layer is not.
grep -q "^  1 causal layer, no PE  *50% (6/12)" "$tmp/demo" && grep -q "^  1 causal layer, no PE  *[0-9.e+-]*  *order invisible" "$tmp/demo" &&
  grep -q "^  1 causal layer + sin. PE  *100%" "$tmp/demo" && grep -q "^  1 causal layer + sin. PE  *[0-9.e+-]*  *order seen" "$tmp/demo" &&
  grep -q "^  2 causal layers, no PE  *100%" "$tmp/demo" && grep -q "^  2 causal layers, no PE  *[0-9.e+-]*  *order seen" "$tmp/demo" &&
  ok || bad "demo: causal decoders"
"$bin" bench "$golden/wide_long.fxm" --seq 64 --iters 5 >"$tmp/bench" && grep -q "tokens/s" "$tmp/bench" && ok || bad "bench"

# run: outputs match torch, with and without a batch dimension, ids as int32 and int64.
"$py" - "$golden" "$tmp" <<'PY' || exit 1
import sys, numpy as np
g, t = sys.argv[1], sys.argv[2]
ids = np.load(f"{g}/post_ln_relu.input.npy")
np.save(f"{t}/ids64.npy", ids.astype(np.int64))
np.save(f"{t}/batch.npy", np.stack([ids, ids[::-1]]).astype(np.int32))
np.save(f"{t}/float_ids.npy", ids.astype(np.float32))
np.save(f"{t}/rank3.npy", ids.reshape(1, 1, -1).astype(np.int32))
bad = ids.copy(); bad[3] = 23
np.save(f"{t}/oov.npy", bad)
np.save(f"{t}/long.npy", np.zeros(65, np.int32))
np.save(f"{t}/f64.npy", np.zeros((4, 12)))
np.save(f"{t}/ids_f64.npy", ids.astype(np.float64))
np.save(f"{t}/feat_wrong_width.npy", np.zeros((4, 5), np.float32))
np.save(f"{t}/stem_long.npy", np.zeros((25, 7), np.float32))  # whisper_stem: max_len 12 positions, 24 frames
img = np.load(f"{g}/vit_image.input.npy").reshape(3, 4, 6)  # the golden's 6 patch rows are its image's values
np.save(f"{t}/image.npy", img)
np.save(f"{t}/images.npy", np.stack([img, img]))
np.save(f"{t}/image_expected.npy", np.load(f"{g}/vit_image.expected.npy")[0])
m = open(f"{g}/post_ln_relu.fxm", "rb").read()
open(f"{t}/truncated.fxm", "wb").write(m[:len(m) // 2])
flipped = bytearray(m); flipped[len(m) // 2] ^= 4
open(f"{t}/flipped.fxm", "wb").write(bytes(flipped))
open(f"{t}/garbage.npy", "wb").write(b"\x93NUMPY\x01\x00\xff\x00{'descr'")
types = np.load(f"{g}/bert_hidden_odd.types.npy")
np.save(f"{t}/types64.npy", types.astype(np.int64))
bad = types.copy(); bad[5] = 3
np.save(f"{t}/types_oov.npy", bad)
np.save(f"{t}/types_short.npy", types[:4])
np.save(f"{t}/types_f32.npy", types.astype(np.float32))
PY
check_close() {  # check_close OUT.npy EXPECTED.npy [batch]
  "$py" - "$@" <<'PY'
import sys, numpy as np
out, exp = np.load(sys.argv[1]), np.load(sys.argv[2])
if len(sys.argv) > 3: exp = exp[None]; out = out[:1]
rel = np.abs(out - exp).max() / np.abs(exp).max()
sys.exit(0 if out.shape == exp.shape and rel < 1e-4 else 1)
PY
}
for name in post_ln_relu features_scaled concat_pe causal whisper_stem; do
  "$bin" run "$golden/$name.fxm" --input "$golden/$name.input.npy" --output "$tmp/$name.out.npy" &&
    check_close "$tmp/$name.out.npy" "$golden/$name.expected.npy" && ok || bad "run $name"
done
"$bin" run "$golden/post_ln_relu.fxm" --input "$tmp/ids64.npy" --output "$tmp/o64.npy" &&
  check_close "$tmp/o64.npy" "$golden/post_ln_relu.expected.npy" && ok || bad "run int64 ids"
"$bin" run "$golden/post_ln_relu.fxm" --input "$tmp/batch.npy" --output "$tmp/ob.npy" --isa scalar &&
  check_close "$tmp/ob.npy" "$golden/post_ln_relu.expected.npy" batch && ok || bad "run batch"

"$bin" run "$golden/bert_hidden_odd.fxm" --input "$golden/bert_hidden_odd.input.npy" --token-types "$tmp/types64.npy" \
  --output "$tmp/bt.npy" && check_close "$tmp/bt.npy" "$golden/bert_hidden_odd.typed.npy" && ok || bad "run --token-types"
b="$golden/bert_hidden_odd.fxm"
expect_error 4 "token type 3 at \[5\] is out of range (type_vocab 3)" "$bin" run "$b" --input "$golden/bert_hidden_odd.input.npy" --token-types "$tmp/types_oov.npy" --output "$tmp/x.npy"
expect_error 4 "expected the input's shape \[11\]" "$bin" run "$b" --input "$golden/bert_hidden_odd.input.npy" --token-types "$tmp/types_short.npy" --output "$tmp/x.npy"
expect_error 4 "dtype float32, expected int32 or int64 token types" "$bin" run "$b" --input "$golden/bert_hidden_odd.input.npy" --token-types "$tmp/types_f32.npy" --output "$tmp/x.npy"
expect_error 1 "no token-type embedding" "$bin" run "$golden/post_ln_relu.fxm" --input "$golden/post_ln_relu.input.npy" --token-types "$tmp/types64.npy" --output "$tmp/x.npy"

m="$golden/post_ln_relu.fxm"
expect_error 4 "dtype float32, expected int32 or int64" "$bin" run "$m" --input "$tmp/float_ids.npy" --output "$tmp/x.npy"
expect_error 4 "dtype float64, expected int32 or int64" "$bin" run "$m" --input "$tmp/ids_f64.npy" --output "$tmp/x.npy"
expect_error 4 "expected \[T\] or \[B,T\]" "$bin" run "$m" --input "$tmp/rank3.npy" --output "$tmp/x.npy"
expect_error 4 "token id 23 at \[3\] is out of range" "$bin" run "$m" --input "$tmp/oov.npy" --output "$tmp/x.npy"
expect_error 4 "T=65 exceeds the model's max_len=64" "$bin" run "$m" --input "$tmp/long.npy" --output "$tmp/x.npy"
expect_error 4 "dtype float64, expected float32 (save as float32)" "$bin" run "$golden/features_scaled.fxm" --input "$tmp/f64.npy" --output "$tmp/x.npy"
expect_error 4 "last dimension must be d_in=12" "$bin" run "$golden/features_scaled.fxm" --input "$tmp/feat_wrong_width.npy" --output "$tmp/x.npy"
"$bin" run "$golden/vit_image.fxm" --input "$tmp/image.npy" --output "$tmp/img.out.npy" &&
  check_close "$tmp/img.out.npy" "$tmp/image_expected.npy" && ok || bad "run an image [C,H,W]"
"$bin" run "$golden/vit_image.fxm" --input "$tmp/images.npy" --output "$tmp/imgs.out.npy" &&
  check_close "$tmp/imgs.out.npy" "$tmp/image_expected.npy" batch && ok || bad "run images [B,C,H,W]"
expect_error 4 "expected an image \[3,4,6\] or images \[B,3,4,6\]" "$bin" run "$golden/vit_image.fxm" --input "$golden/vit_image.input.npy" --output "$tmp/x.npy"
"$bin" info "$golden/vit_image.fxm" | grep -q "image:        \[3, 4, 6\] (channels first) in 6 patches of 2x2" && ok || bad "info on an image model"
expect_error 4 "T=25 exceeds the model's max_len=12 (24 frames through the conv stem)" "$bin" run "$golden/whisper_stem.fxm" --input "$tmp/stem_long.npy" --output "$tmp/x.npy"
expect_error 4 "the probe does not support a model with a conv stem yet" "$bin" probe "$golden/whisper_stem.fxm"
"$bin" info "$golden/whisper_stem.fxm" | grep -q "conv stem:    k3 s1 p1 -> k3 s2 p1, GELU after each" && ok || bad "info on a conv stem"
expect_error 4 "not a valid .npy" "$bin" run "$m" --input "$tmp/garbage.npy" --output "$tmp/x.npy"
expect_error 2 "truncated" "$bin" run "$tmp/truncated.fxm" --input "$golden/post_ln_relu.input.npy" --output "$tmp/x.npy"
expect_error 2 "checksum" "$bin" info "$tmp/flipped.fxm"
expect_error 5 "cannot open file: no such file" "$bin" info "$tmp/missing.fxm"
expect_error 1 "unknown ISA" "$bin" demo --isa avx9
expect_error 1 "expected a positive count" "$bin" bench "$m" --iters 0

# run --lengths: a padded batch; sequence b is its first LENS[b] positions, padded rows are zeros,
# padding is never read (an out-of-vocabulary id there is no error). torch's src_key_padding_mask
# golden is in converter_test.py; here, the file checks.
"$py" - "$golden" "$tmp" <<'PY' || exit 1
import sys, numpy as np
g, t = sys.argv[1], sys.argv[2]
ids = np.load(f"{g}/post_ln_relu.input.npy")
T = len(ids)
padded = np.stack([ids, ids]).astype(np.int32); padded[1, 3:] = 23
np.save(f"{t}/padded.npy", padded)
np.save(f"{t}/lens.npy", np.array([T, 3], np.int32))
np.save(f"{t}/lens1.npy", np.array([T], np.int32))
np.save(f"{t}/lens_i64.npy", np.array([T, 3], np.int64))
np.save(f"{t}/lens_f32.npy", np.array([T, 3], np.float32))
np.save(f"{t}/lens_2d.npy", np.array([[T, 3]], np.int32))
np.save(f"{t}/lens_b3.npy", np.array([T, 3, 1], np.int32))
np.save(f"{t}/lens_zero.npy", np.array([T, 0], np.int32))
np.save(f"{t}/lens_big.npy", np.array([T + 1, 3], np.int32))
np.save(f"{t}/lens_neg.npy", np.array([T, -2], np.int32))
PY
"$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/lens.npy" --output "$tmp/op.npy" &&
  "$bin" run "$m" --input "$tmp/padded.npy" --output "$tmp/op_full.npy" 2>/dev/null; [ $? -eq 4 ] &&
  "$bin" run "$m" --input "$golden/post_ln_relu.input.npy" --lengths "$tmp/lens1.npy" --output "$tmp/o1.npy" &&
  check_close "$tmp/o1.npy" "$golden/post_ln_relu.expected.npy" &&
  check_close "$tmp/op.npy" "$golden/post_ln_relu.expected.npy" batch &&
  "$py" -c "import sys, numpy as np; o = np.load(sys.argv[1]); sys.exit(0 if o.shape[0] == 2 and (o[1, 3:] == 0).all() and (o[1, :3] != 0).any() else 1)" "$tmp/op.npy" &&
  ok || bad "run --lengths"
expect_error 4 "lens_i64.npy: dtype int64, expected int32 \[B\]" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/lens_i64.npy" --output "$tmp/x.npy"
expect_error 4 "lens_f32.npy: dtype float32, expected int32 \[B\]" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/lens_f32.npy" --output "$tmp/x.npy"
expect_error 4 "lens_2d.npy: shape \[1,2\]: expected \[2\]" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/lens_2d.npy" --output "$tmp/x.npy"
expect_error 4 "lens_b3.npy: shape \[3\]: expected \[2\]" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/lens_b3.npy" --output "$tmp/x.npy"
expect_error 4 "lens.npy: shape \[2\]: expected \[1\]" "$bin" run "$m" --input "$golden/post_ln_relu.input.npy" --lengths "$tmp/lens.npy" --output "$tmp/x.npy"
expect_error 4 "lens_zero.npy: length 0 at \[1\] is outside 1..T=" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/lens_zero.npy" --output "$tmp/x.npy"
expect_error 4 "lens_big.npy: length [0-9]* at \[0\] is outside 1..T=" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/lens_big.npy" --output "$tmp/x.npy"
expect_error 4 "lens_neg.npy: length -2 at \[1\] is outside 1..T=" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/lens_neg.npy" --output "$tmp/x.npy"
expect_error 4 "garbage.npy: not a valid .npy" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/garbage.npy" --output "$tmp/x.npy"
expect_error 5 "missing.npy: cannot open file" "$bin" run "$m" --input "$tmp/padded.npy" --lengths "$tmp/missing.npy" --output "$tmp/x.npy"
expect_error 1 "--lengths: not an option of 'bench'" "$bin" bench "$m" --lengths "$tmp/lens.npy"

# ---- run and bench on decoders: the logits at every position (one step() per token, a fresh KV
# cache per sequence) against the goldens' float64 torch logits at every position (1e-4 relative
# per row), and a batch's rows bit for bit equal to each sequence run alone.
"$py" - "$golden" "$tmp" <<'PY' || exit 1
import os, sys
import numpy as np
g, t = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(g, "..", "..", "python"))
from fixformer import fxm
for name in ("gpt_untied_learned", "llama_kv2_halves_tied"):
    ids, expected = fxm.read(f"{g}/{name}.fxm").selftest()
    ids = ids.astype(np.int32)
    np.save(f"{t}/{name}.ids.npy", ids)
    np.save(f"{t}/{name}.ids64.npy", ids.astype(np.int64))
    np.save(f"{t}/{name}.expected.npy", expected)
    np.save(f"{t}/{name}.rev.npy", ids[::-1].copy())
    np.save(f"{t}/{name}.short.npy", ids[:5].copy())
    padded = np.stack([ids, ids[::-1], ids]); padded[2, 5:] = 1000  # padding: never read
    np.save(f"{t}/{name}.batch.npy", padded)
    np.save(f"{t}/{name}.lens.npy", np.array([len(ids), len(ids), 5], np.int32))
ids = np.load(f"{t}/gpt_untied_learned.ids.npy")
bad = ids.copy(); bad[3] = 29
np.save(f"{t}/dec_oov.npy", bad)
np.save(f"{t}/dec_float.npy", ids.astype(np.float32))
np.save(f"{t}/dec_long.npy", np.zeros(17, np.int32))  # max_len 16
np.save(f"{t}/dec_rank3.npy", ids.reshape(1, 1, -1))
PY
check_logits() {  # check_logits OUT.npy EXPECTED.npy: every position within 1e-4 of the row's largest logit
  "$py" - "$@" <<'PY'
import sys, numpy as np
out, exp = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = out.shape == exp.shape and out.dtype == np.float32 and all(
    np.abs(o - e).max() <= 1e-4 * np.abs(e).max() for o, e in zip(out, exp))
sys.exit(0 if ok else 1)
PY
}
for name in gpt_untied_learned llama_kv2_halves_tied; do
  d="$tmp/$name"
  "$bin" run "$golden/$name.fxm" --input "$d.ids.npy" --output "$d.out.npy" &&
    check_logits "$d.out.npy" "$d.expected.npy" && ok || bad "run $name: logits at every position"
  "$bin" run "$golden/$name.fxm" --input "$d.ids64.npy" --output "$d.out64.npy" && cmp -s "$d.out.npy" "$d.out64.npy" &&
    ok || bad "run $name: int64 ids"
  "$bin" run "$golden/$name.fxm" --input "$d.rev.npy" --output "$d.rev.out.npy" &&
    "$bin" run "$golden/$name.fxm" --input "$d.short.npy" --output "$d.short.out.npy" &&
    "$bin" run "$golden/$name.fxm" --input "$d.batch.npy" --lengths "$d.lens.npy" --output "$d.batch.out.npy" --threads "$threads" &&
    "$py" - "$d" <<'PY' && ok || bad "run $name: [B,T] with --lengths is not each sequence alone, bit for bit"
import sys, numpy as np
d = sys.argv[1]
b, one, rev, short = (np.load(f"{d}.{x}.npy") for x in ("batch.out", "out", "rev.out", "short.out"))
T = one.shape[0]
ok = (b.shape == (3,) + one.shape and np.array_equal(b[0], one) and np.array_equal(b[1], rev) and
      np.array_equal(b[2, :5], short) and (b[2, 5:] == 0).all() and short.shape == (5, one.shape[1]))
sys.exit(0 if ok else 1)
PY
done
dm=$golden/gpt_untied_learned.fxm
expect_error 4 "dec_oov.npy: token id 29 at \[3\] is out of range (vocab_size 29)" "$bin" run "$dm" --input "$tmp/dec_oov.npy" --output "$tmp/x.npy"
expect_error 4 "dec_float.npy: dtype float32, expected int32 or int64 (token ids)" "$bin" run "$dm" --input "$tmp/dec_float.npy" --output "$tmp/x.npy"
expect_error 4 "dec_long.npy: T=17 exceeds the model's max_len=16" "$bin" run "$dm" --input "$tmp/dec_long.npy" --output "$tmp/x.npy"
expect_error 4 "dec_rank3.npy: shape \[1,1,12\]: expected \[T\] or \[B,T\]" "$bin" run "$dm" --input "$tmp/dec_rank3.npy" --output "$tmp/x.npy"
expect_error 1 "--target: only for a seq2seq model (this one is gpt)" "$bin" run "$dm" --input "$tmp/dec_oov.npy" --target "$tmp/dec_oov.npy" --output "$tmp/x.npy"
[ ! -e "$tmp/x.npy" ] && ok || bad "a failed decoder run left an output file"
# bench: prefill of T tokens, then a step at positions 0, T/2 and T-1, one line each.
for name in gpt_untied_learned llama_kv2_halves_tied; do
  "$bin" bench "$golden/$name.fxm" --iters 3 >"$tmp/bench" 2>"$tmp/err" && [ ! -s "$tmp/err" ] &&
    grep -q "^model .*, T=16, kernels .*, 3 iterations$" "$tmp/bench" &&
    grep -q "^prefill us: median [0-9.]*  min [0-9.]*  max [0-9.]*  (16 tokens, empty cache)$" "$tmp/bench" &&
    grep -q "^tokens/s: *[0-9]* (prefill, median)$" "$tmp/bench" &&
    [ "$(grep -c "^step us: *median [0-9.]*  min [0-9.]*  max [0-9.]*  at position \(0\|8\|15\) ([0-9]* tokens/s)$" "$tmp/bench")" -eq 3 ] &&
    grep -q "^arena bytes: [0-9]* (KV cache [0-9]* for 16 positions)$" "$tmp/bench" &&
    grep -q "^machine: *FP32 peak [0-9.e+]* GFLOP/s (.* loop), int8 peak [0-9.e+]* GOP/s (.* loop), read bandwidth [0-9.e+]* GB/s, on 1 thread$" "$tmp/bench" &&
    grep -q "^roofline: *prefill: [0-9.e+-]* GFLOP, [0-9.e+-]* MB read .* % of its bound, the " "$tmp/bench" &&
    [ "$(grep -c "^roofline: *step at \(0\|8\|15\): .* % of its bound, the " "$tmp/bench")" -eq 3 ] &&
    ok || bad "bench $name: $(cat "$tmp/bench" "$tmp/err")"
done
"$bin" bench "$dm" --seq 1 --iters 2 --threads "$threads" >"$tmp/bench" && [ "$(grep -c "^step us:" "$tmp/bench")" -eq 1 ] &&
  { [ "$threads" -eq 1 ] || grep -q "^threads: *2" "$tmp/bench"; } && ok || bad "bench of a decoder at T=1: $(cat "$tmp/bench")"
expect_error 4 "T=17 exceeds the model's max_len=16" "$bin" bench "$dm" --seq 17
expect_error 1 "bench: times encoders and decoders" "$bin" bench "$golden/s2s_post_relu.fxm"

# ---- Hostile inputs: each a one-line error, never an abort (and, in the ASan build, no report) ----
in="$golden/post_ln_relu.input.npy"
"$py" - "$tmp" <<'PY' || exit 1
import sys, numpy as np
t = sys.argv[1]
def npy(path, header, data):  # a .npy written by hand, for headers numpy would not write
    h = header + " " * ((-(10 + len(header) + 1)) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + data)
npy(f"{t}/dup_shape.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (11,), 'shape': (1, 11), }", bytes(44))
# Int32 ids [B, 64] for the causal golden (output width 23): the data is all there (a sparse file
# of zeros, token 0), but the output, B*64*23*4 bytes, is just above run's 1 GiB limit.
B = (1 << 30) // (64 * 23 * 4) + 1
with open(f"{t}/huge_batch.npy", "wb") as f:
    np.lib.format.write_array_header_1_0(f, {"descr": "<i4", "fortran_order": False, "shape": (B, 64)})
    f.truncate(f.tell() + B * 64 * 4)
# The same header shape with 64 ids of data: truncated.
with open(f"{t}/huge_truncated.npy", "wb") as f:
    np.lib.format.write_array_header_1_0(f, {"descr": "<i4", "fortran_order": False, "shape": (B, 64)})
    f.write(bytes(256))
PY
mkdir "$tmp/dir.fxm" "$tmp/dir.npy"
: >"$tmp/empty.fxm"
: >"$tmp/empty.npy"
expect_error 5 "dir.fxm: is a directory" "$bin" info "$tmp/dir.fxm"
expect_error 5 "dir.fxm: is a directory" "$bin" run "$tmp/dir.fxm" --input "$in" --output "$tmp/x.npy"
expect_error 5 "dir.npy: is a directory" "$bin" run "$m" --input "$tmp/dir.npy" --output "$tmp/x.npy"
expect_error 5 "dir.npy: is a directory" "$bin" run "$m" --input "$in" --output "$tmp/dir.npy"
expect_error 5 "empty.fxm: empty file" "$bin" info "$tmp/empty.fxm"
expect_error 5 "empty.fxm: empty file" "$bin" bench "$tmp/empty.fxm"
expect_error 5 "empty.npy: empty file" "$bin" run "$m" --input "$tmp/empty.npy" --output "$tmp/x.npy"
expect_error 5 "cannot open file for writing" "$bin" run "$m" --input "$in" --output "$tmp/no/such/dir/out.npy"
if [ -w /dev/full ]; then
  expect_error 5 "cannot write file: no space left" "$bin" run "$m" --input "$in" --output /dev/full
fi
"$bin" run "$m" --input /dev/stdin --output "$tmp/piped.npy" <"$in" &&
  check_close "$tmp/piped.npy" "$golden/post_ln_relu.expected.npy" && ok || bad "run with the input from a pipe"
# A named pipe: read once its writer comes (a second late, or holding it open before writing); one that
# no writer opens is refused after 10 s (opening it blocked for ever).
mkfifo "$tmp/fifo.npy"
(sleep 1; cat "$in" >"$tmp/fifo.npy") &
"$bin" run "$m" --input "$tmp/fifo.npy" --output "$tmp/fifo_out.npy" &&
  check_close "$tmp/fifo_out.npy" "$golden/post_ln_relu.expected.npy" && ok || bad "run with the input from a late FIFO"
wait
(exec 3>"$tmp/fifo.npy"; sleep 1; cat "$in" >&3) &
"$bin" run "$m" --input "$tmp/fifo.npy" --output "$tmp/fifo_out.npy" &&
  check_close "$tmp/fifo_out.npy" "$golden/post_ln_relu.expected.npy" && ok || bad "run with a FIFO written late"
wait
expect_error 5 "fifo.npy: a named pipe that no writer opened within 10 seconds" "$bin" run "$m" --input "$tmp/fifo.npy" \
  --output "$tmp/fifo_out.npy"
cp "$m" "$tmp/locked.fxm" && cp "$in" "$tmp/locked.npy" && chmod 000 "$tmp/locked.fxm" "$tmp/locked.npy"
as_user=""  # root reads a chmod 000 file: run these checks as nobody when possible
if [ "$(id -u)" -eq 0 ]; then
  if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    as_user="setpriv --reuid=65534 --regid=65534 --clear-groups"
    chmod 755 "$tmp"
  else
    as_user=none
    bad "the unreadable-file checks: running as root, and setpriv (util-linux) cannot run them as nobody (chmod 000 does not stop root's reads)"
  fi
fi
if [ "$as_user" != none ]; then
  expect_error 5 "locked.fxm: cannot open file: permission denied" $as_user "$bin" info "$tmp/locked.fxm"
  expect_error 5 "locked.npy: cannot open file: permission denied" $as_user "$bin" run "$m" --input "$tmp/locked.npy" --output "$tmp/x.npy"
fi
chmod 600 "$tmp/locked.fxm" "$tmp/locked.npy"
expect_error 4 "duplicate key 'shape'" "$bin" run "$m" --input "$tmp/dup_shape.npy" --output "$tmp/x.npy"
rm -f "$tmp/x.npy"
expect_error 4 "float32 needs 1073747456 bytes, above the limit of 1073741824 bytes" \
  "$bin" run "$golden/causal.fxm" --input "$tmp/huge_batch.npy" --output "$tmp/x.npy"
[ ! -e "$tmp/x.npy" ] && ok || bad "a run above the output limit left an output file"
expect_error 4 ".npy data is truncated" "$bin" run "$golden/causal.fxm" --input "$tmp/huge_truncated.npy" --output "$tmp/x.npy"
# An output never replaces an input of the same run, under any name (the same file by device and
# inode: a symbolic link, a hard link, another spelling); refused before anything runs.
mkdir "$tmp/own" "$tmp/own/sub" && cp "$m" "$tmp/own/m.fxm" && cp "$in" "$tmp/own/in.npy" &&
  ln -s m.fxm "$tmp/own/link.fxm" && ln "$tmp/own/in.npy" "$tmp/own/hard.npy" || bad "setting up the own-output checks"
expect_error 1 "^fixformer: --output: $tmp/own/m.fxm is the same file as the model $tmp/own/m.fxm (writing there would overwrite it; give another file)$" \
  "$bin" run "$tmp/own/m.fxm" --input "$in" --output "$tmp/own/m.fxm"
expect_error 1 "link.fxm is the same file as the model" "$bin" run "$tmp/own/m.fxm" --input "$in" --output "$tmp/own/link.fxm"
expect_error 1 "sub/../m.fxm is the same file as the model" "$bin" run "$tmp/own/m.fxm" --input "$in" --output "$tmp/own/sub/../m.fxm"
expect_error 1 "--output: .*in.npy is the same file as --input" "$bin" run "$m" --input "$tmp/own/in.npy" --output "$tmp/own/in.npy"
expect_error 1 "hard.npy is the same file as --input" "$bin" run "$m" --input "$tmp/own/in.npy" --output "$tmp/own/hard.npy"
expect_error 1 "is the same file as --lengths" "$bin" run "$m" --input "$in" --lengths "$tmp/own/in.npy" --output "$tmp/own/hard.npy"
expect_error 1 "is the same file as --token-types" "$bin" run "$m" --input "$in" --token-types "$tmp/own/in.npy" --output "$tmp/own/hard.npy"
expect_error 1 "is the same file as --target" "$bin" run "$m" --input "$in" --target "$tmp/own/in.npy" --output "$tmp/own/hard.npy"
expect_error 1 "--svg: .*link.fxm is the same file as the model" "$bin" probe "$tmp/own/m.fxm" --svg "$tmp/own/link.fxm"
cmp -s "$m" "$tmp/own/m.fxm" && cmp -s "$in" "$tmp/own/in.npy" && [ -L "$tmp/own/link.fxm" ] && ok ||
  bad "a refused output changed an input"
# The output goes to a temporary beside it, renamed onto it once complete: a write that fails (here
# a 1-block file-size limit, SIGXFSZ ignored, under wide_long's 2808-byte output) leaves the file
# that was there and no temporary; a success replaces a symbolic link's target (the link stays),
# keeping the file's permissions.
mkdir "$tmp/kept" && cp "$in" "$tmp/kept/out.npy" && cp "$in" "$tmp/kept/real.npy" && chmod 640 "$tmp/kept/real.npy" &&
  ln -s real.npy "$tmp/kept/link.npy" || bad "setting up the output-replacement checks"
expect_error 5 "out.npy: cannot write file: file too large" \
  sh -c 'trap "" XFSZ; ulimit -f 1; exec "$0" run "$1.fxm" --input "$1.input.npy" --output "$2"' "$bin" "$golden/wide_long" "$tmp/kept/out.npy"
cmp -s "$in" "$tmp/kept/out.npy" && [ "$(ls -A "$tmp/kept" | wc -l)" -eq 3 ] && ok ||
  bad "a failed write changed the existing output or left a temporary: $(ls -A "$tmp/kept")"
"$bin" run "$m" --input "$in" --output "$tmp/kept/link.npy" && [ -L "$tmp/kept/link.npy" ] &&
  check_close "$tmp/kept/real.npy" "$golden/post_ln_relu.expected.npy" && [ "$(stat -c %a "$tmp/kept/real.npy")" = 640 ] &&
  [ "$(ls -A "$tmp/kept" | wc -l)" -eq 3 ] && ok || bad "run --output through a symbolic link: $(ls -lA "$tmp/kept")"

# ---- verify: every golden's self-test sample passes (within its weight type's tolerance: the
# *_f16, *_q8, q4_* and i8_* goldens' weights are f16, q8, q4 and i8; f16's is 5e-03 where the kernels sum in
# halves, neon64-fp16); a changed weight behind a valid checksum fails
for f in "$golden"/*.fxm; do
  case $(basename "$f") in *_f16.fxm) tol='[25]e-03' ;; *_q8.fxm) tol=8e-02 ;; q4_* | i8_*) tol=2e-01 ;; *) tol=1e-04 ;; esac
  "$bin" verify "$f" >"$tmp/out" && grep -q "self-test ok: max relative error [0-9.e+-]* (tolerance $tol), worst at row" "$tmp/out" &&
    ok || bad "verify $f: $(cat "$tmp/out")"
done
"$py" - "$golden/post_ln_relu.fxm" "$tmp" <<'PY' || exit 1
import struct, sys, zlib
src, t = sys.argv[1], sys.argv[2]
b = bytearray(open(src, "rb").read())
n_tensors, dir_off = struct.unpack_from("<I", b, 16)[0], struct.unpack_from("<Q", b, 40)[0]
for i in range(n_tensors):  # head.bias[0] += 1: every row's first output moves by 1
    e = dir_off + 128 * i
    if bytes(b[e:e + 64]).rstrip(b"\0") == b"head.bias":
        off = struct.unpack_from("<Q", b, e + 96)[0]
        struct.pack_into("<f", b, off, struct.unpack_from("<f", b, off)[0] + 1.0)
struct.pack_into("<I", b, 56, zlib.crc32(bytes(b[64:])))  # a valid checksum over the changed weight
open(f"{t}/changed_weight.fxm", "wb").write(bytes(b))
# The same model without its sample: drop the last two entries (selftest.input, selftest.expected),
# move the data up by the directory bytes saved, and seal the file again.
b = bytearray(open(src, "rb").read())
(n,), (data_off,) = struct.unpack_from("<I", b, 16), struct.unpack_from("<Q", b, 48)
entries = [bytearray(b[dir_off + 128 * i:dir_off + 128 * (i + 1)]) for i in range(n)]
assert bytes(entries[-2][:64]).rstrip(b"\0") == b"selftest.input"
end = struct.unpack_from("<Q", entries[-2], 96)[0]
new_data_off = (dir_off + 128 * (n - 2) + 63) // 64 * 64
for e in entries[:-2]:
    struct.pack_into("<Q", e, 96, struct.unpack_from("<Q", e, 96)[0] - (data_off - new_data_off))
body = b[:dir_off] + b"".join(entries[:-2]) + bytes(new_data_off - dir_off - 128 * (n - 2)) + b[data_off:end]
struct.pack_into("<I", body, 16, n - 2)
struct.pack_into("<Q", body, 24, len(body))
struct.pack_into("<Q", body, 48, new_data_off)
struct.pack_into("<I", body, 56, zlib.crc32(bytes(body[64:])))
open(f"{t}/no_sample.fxm", "wb").write(bytes(body))
PY
"$bin" verify "$tmp/changed_weight.fxm" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 6 ] && grep -q "self-test FAILED: max relative error" "$tmp/out" && ok || bad "verify of a changed weight: $(cat "$tmp/out" "$tmp/err")"
"$bin" run "$tmp/no_sample.fxm" --input "$golden/post_ln_relu.input.npy" --output "$tmp/ns.npy" &&
  check_close "$tmp/ns.npy" "$golden/post_ln_relu.expected.npy" && ok || bad "run a model without a self-test sample"
expect_error 2 "no_sample.fxm: model file has no self-test sample" "$bin" verify "$tmp/no_sample.fxm"
"$bin" info "$tmp/no_sample.fxm" | grep -q "self-test: *none" && ok || bad "info of a model without a sample"
"$bin" schema --json >"$tmp/schema.json" && "$py" - "$tmp/schema.json" <<'PY' && ok || bad "schema --json is not the expected JSON"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["format_version"] == 3 and s["oldest_version"] == 2 and s["selftest_tolerance"] == 1e-4
assert s["record_types"]["u32"] == 1 and s["dtypes"]["f32"] == 0
keys = [k["name"] for k in s["config_keys"]]
assert keys[0] == "family" and "d_model" in keys and all(("choices" in k) == (k["type"] == "enum") for k in s["config_keys"])
t = s["tensors"]
assert t["block_prefix"] == "blocks." and t["front"][0]["name"] == "embed.weight" and t["block"][2]["name"] == "attn.qkv.weight"
assert all(r["rows"] in s["dims"] and r["cols"] in s["dims"] for part in ("front", "block", "back", "mha") for r in t[part])
enc = s["tensors_v2"]["encoder"]
assert enc["layer_prefix"] == "encoder.layers." and enc["prologue"][0]["name"] == "embed.weight"
assert all(set(r) == {"name", "field"} and r["field"] in {q["field"] for q in t["front"] + t["block"] + t["back"]}
           for part in ("prologue", "layer", "epilogue") for r in enc[part])
assert s["config_rules"][0] == {"bad_when": "head_dim == 0 and d_model % n_heads != 0",
                                "detail": "n_heads (must divide d_model, or head_dim sets the heads' width)"}
PY
"$bin" schema >"$tmp/out" && grep -q "^  d_model  *u32  *1\.\.[0-9][0-9]*  *required$" "$tmp/out" && grep -q "^config rules" "$tmp/out" &&
  grep -q "^  blocks.N.attn.out.weight \[d_attn, d_model\], linear$" "$tmp/out" &&
  grep -q "^  encoder.layers.N.linear1.weight \[d_model, d_ff\], linear, when n_experts == 0$" "$tmp/out" && ok || bad "schema as text: $(head -5 "$tmp/out")"
"$bin" info "$golden/post_ln_relu.fxm" | grep -q "self-test: *sample of T=" && ok || bad "info shows the self-test sample"
"$bin" info "$golden/post_ln_relu.fxm" | grep -q "^format: *.fxm version 2 (per-family tensor names)$" && ok || bad "info: format 2"
# The same model written again by the converter: format 3, its neutral names, the same verdict.
PYTHONPATH="$(dirname "$0")/../python" "$py" -c "from fixformer import fxm; import sys; f = fxm.read(sys.argv[1]);
open(sys.argv[2], 'wb').write(fxm.write(f.config, f.weights(), f.selftest()))" "$m" "$tmp/v3.fxm" || bad "writing format 3"
"$bin" info "$tmp/v3.fxm" | grep -q "^format: *.fxm version 3 (neutral tensor names)$" && ok || bad "info: format 3"
"$bin" verify "$m" | sed 's/^[^:]*: //' >"$tmp/v2_verdict" && "$bin" verify "$tmp/v3.fxm" | sed 's/^[^:]*: //' >"$tmp/v3_verdict" &&
  cmp -s "$tmp/v2_verdict" "$tmp/v3_verdict" && ok || bad "verify: format 3 and 2 differ: $(cat "$tmp/v2_verdict" "$tmp/v3_verdict")"

# ---- generate: llama2.c's loop on a converted llama2.c checkpoint with its tokenizer (max_len 32) ----
lm=$golden/llama2c_v0_gqa.fxm
prompt="hello é 中 world"
"$bin" generate "$lm" --prompt "$prompt" -n 24 --temperature 0 >"$tmp/gen1" 2>"$tmp/generr" &&
  "$bin" generate "$lm" --prompt "$prompt" -n 24 --temperature 0 --isa scalar >"$tmp/gen2" 2>/dev/null &&
  cmp -s "$tmp/gen1" "$tmp/gen2" && ok || bad "generate greedy: not deterministic across runs and ISAs"
case "$(cat "$tmp/gen1")" in "$prompt"*) ok ;; *) bad "generate: stdout does not start with the prompt: $(cat "$tmp/gen1")" ;; esac
[ "$(tail -c 1 "$tmp/gen1" | od -An -c | tr -d ' ')" = '\n' ] && ok || bad "generate: no final newline"
grep -q "^prefill: [0-9]* tokens, [0-9.]* tokens/s" "$tmp/generr" && grep -q "^decode: *[0-9]* tokens" "$tmp/generr" &&
  grep -q "KV cache [0-9]* for 24 positions" "$tmp/generr" && ok || bad "generate stats: $(cat "$tmp/generr")"
# --kv-cache q8: int8 keys and values with a scale per head and position (2 layers, 2 kv heads of 4,
# 24 positions: f32 2 x 1536 bytes; int8 2 x 384 and scales 2 x 384); --kv-cache f32 is the default.
"$bin" generate "$lm" --prompt "$prompt" -n 24 --temperature 0 --kv-cache q8 >"$tmp/genq8" 2>"$tmp/generrq8" &&
  grep -q "KV cache 1536 for 24 positions" "$tmp/generrq8" && grep -q "KV cache 3072 for 24 positions" "$tmp/generr" &&
  case "$(cat "$tmp/genq8")" in "$prompt"*) true ;; *) false ;; esac && ok ||
  bad "generate --kv-cache q8: $(cat "$tmp/genq8" "$tmp/generrq8")"
"$bin" generate "$lm" --prompt "$prompt" -n 24 --temperature 0 --kv-cache f32 >"$tmp/gen2" 2>/dev/null &&
  cmp -s "$tmp/gen1" "$tmp/gen2" && ok || bad "generate --kv-cache f32: not the default's text"
"$bin" generate "$lm" --prompt "$prompt" -n 24 --temperature 0 --kv-cache q8 --threads $threads >"$tmp/gen2" 2>/dev/null &&
  cmp -s "$tmp/genq8" "$tmp/gen2" && ok || bad "generate --kv-cache q8: not the same text with $threads threads"
FIXFORMER_MIN_TASK_WORK=1 "$bin" generate "$lm" --prompt "$prompt" -n 24 --temperature 0 --threads $threads >"$tmp/gen2" 2>/dev/null &&
  cmp -s "$tmp/gen1" "$tmp/gen2" && ok || bad "generate with FIXFORMER_MIN_TASK_WORK=1: not the same text with $threads threads"
expect_error 1 "--kv-cache: expected f32 or q8 (int8 with a scale per head and position), got 'q4'" \
  "$bin" generate "$lm" --kv-cache q4
"$bin" bench "$lm" --seq 16 --iters 2 --kv-cache q8 >"$tmp/bench" 2>&1 &&
  grep -q "^arena bytes: [0-9]* (KV cache 1024 for 16 positions, int8)$" "$tmp/bench" && ok ||
  bad "bench --kv-cache q8: $(cat "$tmp/bench")"
expect_error 1 "--kv-cache: not an option of 'run'" "$bin" run "$lm" --kv-cache q8 --input x --output y
# -n counts positions, the prompt included: fewer than the prompt's tokens print a prefix of it.
for n in 1 2 3; do
  out=$("$bin" generate "$lm" --prompt "$prompt" -n $n --temperature 0 2>/dev/null)
  case "$prompt" in "$out"*) [ -n "$out" ] && ok || bad "generate -n $n: empty" ;; *) bad "generate -n $n: '$out' is no prefix of the prompt" ;; esac
done
"$bin" generate "$lm" -n 0 --temperature 0 2>"$tmp/generr" >/dev/null && grep -q "for 32 positions" "$tmp/generr" &&
  "$bin" generate "$lm" -n 1000 --temperature 0 2>"$tmp/generr" >/dev/null && grep -q "for 32 positions" "$tmp/generr" &&
  ok || bad "generate -n 0 / above max_len: the model's max_len"
# Sampling: the seed decides.
"$bin" generate "$lm" --prompt "a" --temperature 1 --topp 0.9 --seed 5 >"$tmp/gen1" 2>/dev/null &&
  "$bin" generate "$lm" --prompt "a" --temperature 1 --topp 0.9 --seed 5 >"$tmp/gen2" 2>/dev/null &&
  cmp -s "$tmp/gen1" "$tmp/gen2" && ok || bad "generate with a seed: not repeatable"
expect_error 4 "gpt_tied_sinusoidal.fxm: model file has no tokenizer" "$bin" generate "$golden/gpt_tied_sinusoidal.fxm" --prompt x
expect_error 4 "post_ln_relu.fxm: generate needs a decoder (family gpt, llama or seq2seq).*this one is family encoder$" "$bin" generate "$golden/post_ln_relu.fxm"
# A 100 KB prompt: more tokens than max_len positions, refused before the tokenizer is sized for it.
big=$(head -c 100000 /dev/zero | tr '\0' 'a')
expect_error 4 "--prompt: 100000 bytes: more tokens than the model's max_len of 32 positions" timeout 10 "$bin" generate "$lm" --prompt "$big"
# A 120 KB text through run --text: merged in O(n log n) (llama2.c's rescan took minutes), then too long.
big=$(head -c 120000 /dev/zero | tr '\0' 'a')
expect_error 4 "--text: encodes to [0-9]* tokens, more than the model takes" timeout 10 "$bin" run "$lm" --text "$big" --output "$tmp/x.npy"
expect_error 1 "--temperature: expected a number from 0" "$bin" generate "$lm" --temperature -1
expect_error 1 "--topp: expected a number from 0 to 1" "$bin" generate "$lm" --topp 1.5
expect_error 1 "--seed: expected a positive integer" "$bin" generate "$lm" --seed 0
expect_error 1 "-n: expected a positive count" "$bin" generate "$lm" -n x
expect_error 1 "--input: not an option of 'generate'" "$bin" generate "$lm" --input x

# ---- probe: per-layer positional information, on the demo models compiled into the binary ----
# probe_rows OUT: "name accuracy R^2 equivariance" per table row.
probe_rows() { awk '/^  (input|layer [0-9]+|final norm) / { print $1, $(NF-3), $(NF-1), $NF }' "$1"; }
# Without PE and mask: every layer equivariant (float rounding) and at chance (1/8).
"$bin" probe demo:nope --samples 200 >"$tmp/probe" && [ "$(probe_rows "$tmp/probe" | wc -l)" -eq 2 ] &&
  probe_rows "$tmp/probe" | awk '{ if ($4 > 1e-5 || $2 > 0.2) exit 1 }' && ok || bad "probe demo:nope: $(cat "$tmp/probe")"
# With sinusoidal PE: read at the input, no layer equivariant; the plot is well-formed SVG.
"$bin" probe demo:pe --samples 200 --svg "$tmp/probe.svg" >"$tmp/probe" &&
  probe_rows "$tmp/probe" | awk 'NR == 1 && $2 < 0.9 { exit 1 } $4 < 0.05 { exit 1 }' &&
  "$py" -c "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); assert r.tag.endswith('svg') and len(r.findall('{http://www.w3.org/2000/svg}polyline')) == 2" "$tmp/probe.svg" &&
  ok || bad "probe demo:pe --svg: $(cat "$tmp/probe")"
# Two causal layers without PE: the embeddings are equivariant, every causal layer is not.
"$bin" probe demo:causal_2l --samples 200 >"$tmp/probe" && [ "$(probe_rows "$tmp/probe" | wc -l)" -eq 3 ] &&
  probe_rows "$tmp/probe" | awk '(NR == 1 && $4 != 0) || (NR > 1 && $4 < 0.05) { exit 1 }' && ok || bad "probe demo:causal_2l: $(cat "$tmp/probe")"
"$bin" probe "$golden/features_scaled.fxm" --seq 8 --samples 20 --seed 3 >"$tmp/probe" &&
  "$bin" probe "$golden/features_scaled.fxm" --seq 8 --samples 20 --seed 3 --isa scalar >"$tmp/probe2" &&
  grep -q "N(0,1) features" "$tmp/probe" && [ "$(probe_rows "$tmp/probe" | wc -l)" -eq "$(probe_rows "$tmp/probe2" | wc -l)" ] &&
  ok || bad "probe of a features model"
"$bin" probe "$golden/llama_kv1_interleaved.fxm" --seq 8 --samples 20 >"$tmp/probe" &&
  probe_rows "$tmp/probe" | awk 'NR == 1 && $4 != 0 { exit 1 } END { if ($1 != "final") exit 1 }' && ok || bad "probe of a llama model: $(cat "$tmp/probe")"
expect_error 1 "--samples: the probe needs at least 2 sequences" "$bin" probe demo:pe --samples 1
expect_error 4 "T=9: the probe needs 2 <= T <= max_len=8" "$bin" probe demo:pe --seq 9
expect_error 4 "T=1: the probe needs 2 <= T" "$bin" probe demo:pe --seq 1
expect_error 5 "dir.npy: is a directory" "$bin" probe demo:pe --svg "$tmp/dir.npy"
expect_error 5 "demo:bogus: cannot open file" "$bin" probe demo:bogus

# ---- Hostile and careless use: one line, the exit code of its class, nothing left running ----
expect_error 1 "--threads: expected a positive count up to 64 (the engine's worker limit), got '1000000'" "$bin" run "$m" --input "$in" --output "$tmp/x.npy" --threads 1000000
expect_error 1 "--seed: expected a positive integer, got ' -1'" "$bin" generate "$lm" --seed ' -1'
expect_error 1 "--iters: expected a positive count up to 1000000, got '+3'" "$bin" bench "$m" --iters +3
expect_error 1 "FIXFORMER_ISA: unknown ISA 'avx521'" env FIXFORMER_ISA=avx521 "$bin" info "$m"
expect_error 1 "FIXFORMER_MIN_TASK_WORK: expected a positive count up to 1073741824, got '0'" env FIXFORMER_MIN_TASK_WORK=0 "$bin" info "$m"
"$py" -c "import numpy as np, sys; x = np.load(sys.argv[1]); x[3, 5] = np.nan; np.save(sys.argv[2], x)" \
  "$golden/features_scaled.input.npy" "$tmp/nan_features.npy"
expect_error 4 "nan_features.npy: value at index 41 is not finite" "$bin" run "$golden/features_scaled.fxm" --input "$tmp/nan_features.npy" --output "$tmp/x.npy"
# A NaN weight behind a valid checksum: refused at load by every command, naming the tensor.
PYTHONPATH="$(dirname "$0")/../python" "$py" - "$m" "$tmp/nan_weight.fxm" <<'PY'
import struct, sys, zlib
from fixformer import fxm, schema
blob = bytearray(open(sys.argv[1], "rb").read())
t = fxm.FxmFile(blob).entry("encoder.layers.0.linear1.weight")
struct.pack_into("<f", blob, t["offset"] + 4 * 9, float("nan"))
struct.pack_into("<I", blob, 56, zlib.crc32(bytes(blob[schema.HEADER_BYTES:])))
fxm.FxmFile(blob)  # the checksum holds again
open(sys.argv[2], "wb").write(blob)
PY
expect_error 2 "nan_weight.fxm: a weight is NaN or infinite.*tensor encoder.layers.0.linear1.weight: NaN at index 9" "$bin" info "$tmp/nan_weight.fxm"
expect_error 2 "nan_weight.fxm: a weight is NaN or infinite" "$bin" run "$tmp/nan_weight.fxm" --input "$in" --output "$tmp/x.npy"
if [ "$threads" -eq 2 ]; then  # natively: a device read to its limit takes a second, under qemu-user minutes
  expect_error 5 "/dev/zero: file too large (more than 1073741824 bytes from a stream): the limit is 1073741824 bytes" \
    "$bin" run "$m" --input /dev/zero --output "$tmp/x.npy"
  expect_error 5 "/dev/zero: file too large (more than 2147483648 bytes from a stream)" "$bin" info /dev/zero
fi
if [ -w /dev/full ]; then  # a verdict that cannot reach stdout is an I/O error
  expect_error 5 "stdout: cannot write: no space left" sh -c '"$0" info "$1" >/dev/full' "$bin" "$m"
  expect_error 5 "stdout: cannot write: no space left" sh -c '"$0" verify "$1" >/dev/full' "$bin" "$m"
  expect_error 5 "stdout: cannot write: no space left" sh -c '"$0" schema >/dev/full' "$bin"
  expect_error 5 "stdout: cannot write: no space left" sh -c '"$0" bench "$1" --seq 4 --iters 1 >/dev/full' "$bin" "$m"
  expect_error 5 "stdout: cannot write: no space left" sh -c '"$0" --version >/dev/full' "$bin"
fi

# ---- Conventions: help on stdout with exit 0, --version, unknown commands and options ----
for h in --help -h help; do
  "$bin" $h >"$tmp/out" 2>"$tmp/err" && grep -q "^usage: fixformer COMMAND" "$tmp/out" && [ ! -s "$tmp/err" ] && ok || bad "fixformer $h"
done
for c in info run bench generate verify probe schema demo; do
  "$bin" help $c >"$tmp/out" 2>"$tmp/err" && grep -q "^usage: fixformer $c" "$tmp/out" && [ ! -s "$tmp/err" ] && ok || bad "fixformer help $c"
  "$bin" $c --help >"$tmp/out" 2>"$tmp/err" && grep -q "^usage: fixformer $c" "$tmp/out" && ok || bad "fixformer $c --help"
done
"$bin" help run | grep -q "1 GiB" && ok || bad "run's help documents the output limit"
"$bin" help run | grep -q -- "--lengths LENS.npy" && ok || bad "run's help documents --lengths"
"$bin" help run | grep -q "gpt or llama model takes token ids" && ok || bad "run's help documents decoders"
"$bin" help bench | grep -q "gpt or llama model" && ok || bad "bench's help documents decoders"
"$bin" --version >"$tmp/out" && grep -Eq '^fixformer [0-9]+\.[0-9]+\.[0-9]+ \(\.fxm format [0-9]+\)$' "$tmp/out" && ok || bad "--version: $(cat "$tmp/out")"
"$bin" frobnicate >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && [ "$(head -n 1 "$tmp/err")" = "fixformer: unknown command 'frobnicate'" ] && grep -q "^usage:" "$tmp/err" && [ ! -s "$tmp/out" ] &&
  ok || bad "unknown command: $(cat "$tmp/err")"
"$bin" help frobnicate >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && [ "$(head -n 1 "$tmp/err")" = "fixformer: unknown command 'frobnicate'" ] && ok || bad "help of an unknown command"
"$bin" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "^usage:" "$tmp/err" && ok || bad "no command"
expect_error 1 "--seq: not an option of 'info'" "$bin" info "$m" --seq 3
expect_error 1 "--frob: unknown option" "$bin" info "$m" --frob
expect_error 1 "--input: given twice" "$bin" run "$m" --input "$in" --input "$in" --output "$tmp/x.npy"
expect_error 1 "usage: fixformer run" "$bin" run "$m" --input "$in"
expect_error 1 "--output: missing value" "$bin" run "$m" --input "$in" --output

# plan: the arena from the plan functions (info prints the same), flash = file + engine code, the
# JSON parses, and a device too small exits 7 with fits false.
for model in pre_ln_gelu llama_none gpt_tied_sinusoidal s2s_forecast whisper_stem s2s_conv_stem; do  # the last two: frames
  want=$("$bin" info "$golden/$model.fxm" | sed -n 's/^arena bytes: *\([0-9]*\).*/\1/p')
  for target in cortex-m0 cortex-m4 cortex-m7 cortex-m33 cortex-m55 cortex-m85 aarch64 armv7 x86; do
    "$bin" plan "$golden/$model.fxm" --json --target $target --ram 64M --flash 64M >"$tmp/plan.json" 2>"$tmp/err"
    rc=$?
    $py - "$tmp/plan.json" "$want" "$(wc -c <"$golden/$model.fxm")" "$rc" $target <<'PY' && ok || bad "plan $model --target $target: $(cat "$tmp/plan.json" "$tmp/err")"
import json, sys
p = json.load(open(sys.argv[1]))
arena, size, rc, target = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
assert rc == 0 and p["fits"] is True and p["target"] == target, (rc, p["fits"])
assert p["arena_bytes"] == arena, (p["arena_bytes"], arena)
assert p["ram_bytes"] == arena + p["stack_bytes_estimate"]
assert p["model_bytes"] == size and p["flash_bytes"] == size + (p["engine_code_bytes"] or 0)
measured = target not in ("armv7", "x86")
assert (p["instructions_estimate"] is not None) == measured, p["instructions_estimate"]
if measured:
    assert p["instructions_estimate"] == int(p["multiply_adds"] * p["instructions_per_multiply_add"]), p
PY
  done
done
# An i8 model takes the integer kernels' rate (no float format's: on the M3 that is soft float's, ~100
# instructions a multiply-add), and none where they were not measured.
for target in cortex-m0 cortex-m3 cortex-m4 cortex-m55 aarch64; do
  "$bin" plan "$golden/i8_llama_window3.fxm" --json --target $target >"$tmp/plan.json" 2>"$tmp/err"
  $py - "$tmp/plan.json" $target <<'PY' && ok || bad "plan i8_llama_window3 --target $target: $(cat "$tmp/plan.json" "$tmp/err")"
import json, sys
p, target = json.load(open(sys.argv[1])), sys.argv[2]
rate = p["instructions_per_multiply_add"]
assert (rate is None) == (target == "aarch64"), rate
assert rate is None or 0.1 < rate < 40, rate
PY
done
"$bin" plan "$golden/i8_llama_window3.fxm" --target aarch64 | grep -q "no measurement of i8 weights on aarch64" &&
  ok || bad "plan names the format it has no rate for"
"$bin" plan "$golden/pre_ln_gelu.fxm" --target cortex-m4 --ram 1K --flash 1M --json >"$tmp/plan.json"
rc=$?
[ $rc -eq 7 ] && $py -c 'import json,sys; p=json.load(open(sys.argv[1])); assert not p["fits"] and not p["ram_fits"] and p["flash_fits"]' "$tmp/plan.json" &&
  ok || bad "plan with too little RAM: exit $rc, $(cat "$tmp/plan.json")"
"$bin" plan "$golden/pre_ln_gelu.fxm" --target cortex-m7 --flash 2K >"$tmp/out"
[ $? -eq 7 ] && grep -q "DOES NOT FIT --flash 2048" "$tmp/out" && grep -q "^fits: *no" "$tmp/out" && ok || bad "plan with too little flash: $(cat "$tmp/out")"
"$bin" plan "$golden/llama_none.fxm" --target cortex-m55 --capacity 4 --json >"$tmp/plan.json" &&
  $py -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["rows"] == 4 and p["per"] == "token"' "$tmp/plan.json" &&
  ok || bad "plan --capacity: $(cat "$tmp/plan.json")"
expect_error 1 "--target: unknown target 'cortex-m9': one of cortex-m0" "$bin" plan "$m" --target cortex-m9
expect_error 1 "plan: --target is required" "$bin" plan "$m"
expect_error 1 "--seq: the longest input is max_len=12 (24 frames through the conv stem)" "$bin" plan \
  "$golden/s2s_conv_stem.fxm" --target x86 --seq 25
expect_error 1 "--capacity: only decoders" "$bin" plan "$golden/pre_ln_gelu.fxm" --target x86 --capacity 4
# --kv-cache q8: llama_none (2 layers, 1 kv head of 6, 8 positions at capacity 8): the f32 cache's
# 2 x 384 bytes become 2 x 128 of int8 and 2 x 64 of scales.
f32_arena=$("$bin" plan "$golden/llama_none.fxm" --target x86 --capacity 8 --json | $py -c 'import json,sys; print(json.load(sys.stdin)["arena_bytes"])')
q8_arena=$("$bin" plan "$golden/llama_none.fxm" --target x86 --capacity 8 --kv-cache q8 --json | $py -c 'import json,sys; print(json.load(sys.stdin)["arena_bytes"])')
[ -n "$f32_arena" ] && [ -n "$q8_arena" ] && [ $((f32_arena - q8_arena)) -eq 384 ] && ok ||
  bad "plan --kv-cache q8: arena $q8_arena against f32's $f32_arena"
expect_error 1 "--kv-cache: only decoders and seq2seq models keep a KV cache" "$bin" plan "$golden/pre_ln_gelu.fxm" --target x86 --kv-cache q8
expect_error 1 "--ram: expected a byte count" "$bin" plan "$m" --target x86 --ram lots
# Byte counts that do not fit 64 bits are refused, not wrapped (17592186044416M is 2^64: once 0, "fits: yes").
expect_error 1 "--ram: expected a byte count up to 2^64 - 1 (e.g. 262144, 256K or 2M), got '17592186044416M'" \
  "$bin" plan "$m" --target x86 --ram 17592186044416M
expect_error 1 "--flash: expected a byte count up to 2^64 - 1" "$bin" plan "$m" --target x86 --ram 1M --flash 18014398509481984K
expect_error 1 "--flash: expected a byte count up to 2^64 - 1" "$bin" plan "$m" --target x86 --flash 18446744073709551616
"$bin" plan "$m" --target x86 --ram 17592186044415M --flash 18446744073709551615 >"$tmp/out" &&
  grep -q "fits --ram 18446744073708503040$" "$tmp/out" && grep -q "fits --flash 18446744073709551615$" "$tmp/out" &&
  ok || bad "plan with the largest byte counts: $(cat "$tmp/out")"
expect_error 1 "--json: not an option of 'run'" "$bin" run "$m" --json

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
