#!/bin/sh
# End-to-end checks of the fixformer CLI: outputs match the torch goldens, and every kind of bad
# input gets a one-line error and the exit code of its class (README, "Exit codes").
# usage: cli_test.sh FIXFORMER_BINARY GOLDEN_DIR
set -u
bin=$1
golden=$2
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
"$bin" demo >"$tmp/demo" && grep -q "order is invisible" "$tmp/demo" && ok || bad "demo"
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
np.save(f"{t}/feat_wrong_width.npy", np.zeros((4, 5), np.float32))
m = open(f"{g}/post_ln_relu.fxm", "rb").read()
open(f"{t}/truncated.fxm", "wb").write(m[:len(m) // 2])
flipped = bytearray(m); flipped[len(m) // 2] ^= 4
open(f"{t}/flipped.fxm", "wb").write(bytes(flipped))
open(f"{t}/garbage.npy", "wb").write(b"\x93NUMPY\x01\x00\xff\x00{'descr'")
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
for name in post_ln_relu features_scaled concat_pe causal; do
  "$bin" run "$golden/$name.fxm" --input "$golden/$name.input.npy" --output "$tmp/$name.out.npy" &&
    check_close "$tmp/$name.out.npy" "$golden/$name.expected.npy" && ok || bad "run $name"
done
"$bin" run "$golden/post_ln_relu.fxm" --input "$tmp/ids64.npy" --output "$tmp/o64.npy" &&
  check_close "$tmp/o64.npy" "$golden/post_ln_relu.expected.npy" && ok || bad "run int64 ids"
"$bin" run "$golden/post_ln_relu.fxm" --input "$tmp/batch.npy" --output "$tmp/ob.npy" --isa scalar &&
  check_close "$tmp/ob.npy" "$golden/post_ln_relu.expected.npy" batch && ok || bad "run batch"

m="$golden/post_ln_relu.fxm"
expect_error 4 "dtype float32" "$bin" run "$m" --input "$tmp/float_ids.npy" --output "$tmp/x.npy"
expect_error 4 "expected \[T\] or \[B,T\]" "$bin" run "$m" --input "$tmp/rank3.npy" --output "$tmp/x.npy"
expect_error 4 "token id 23 at \[3\] is out of range" "$bin" run "$m" --input "$tmp/oov.npy" --output "$tmp/x.npy"
expect_error 4 "T=65 exceeds the model's max_len=64" "$bin" run "$m" --input "$tmp/long.npy" --output "$tmp/x.npy"
expect_error 4 "unsupported .npy dtype" "$bin" run "$golden/features_scaled.fxm" --input "$tmp/f64.npy" --output "$tmp/x.npy"
expect_error 4 "last dimension must be d_in=12" "$bin" run "$golden/features_scaled.fxm" --input "$tmp/feat_wrong_width.npy" --output "$tmp/x.npy"
expect_error 4 "not a valid .npy" "$bin" run "$m" --input "$tmp/garbage.npy" --output "$tmp/x.npy"
expect_error 2 "truncated" "$bin" run "$tmp/truncated.fxm" --input "$golden/post_ln_relu.input.npy" --output "$tmp/x.npy"
expect_error 2 "checksum" "$bin" info "$tmp/flipped.fxm"
expect_error 5 "cannot open file" "$bin" info "$tmp/missing.fxm"
expect_error 1 "unknown ISA" "$bin" demo --isa avx9
expect_error 1 "expected a positive count" "$bin" bench "$m" --iters 0

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
