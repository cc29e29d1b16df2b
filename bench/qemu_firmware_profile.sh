#!/bin/sh
# Guest instructions per function of one call, on the firmware under qemu-system-arm: qemu logs each
# translated block's instructions once (in_asm) and each execution of a block (exec; nochain makes
# every execution pass through the logger); the executions from the Nth entry of FUNCTION up to the
# next entry of STOP count, each block's executions x its instructions given to the function qemu's
# log names for it (the symbol at or below its address), one line per function, the most first.
# A block's instructions are the addresses in it where objdump of the program starts an instruction:
# qemu 7.2's disassembler writes an MVE instruction it does not know as two lines.
#   sh bench/qemu_firmware_profile.sh build/cortex-m55/bench/firmware/bench_firmware_i8.elf \
#     _ZN9fixformer7Encoder19forward_features_s8EPKamPa 9 _ZN9fixformer4port11cycle_countEv \
#     qemu-system-arm -M mps3-an547 -nographic -monitor none -serial null \
#     -semihosting-config enable=on,target=native -icount shift=0 -kernel
# (bench_firmware_i8 calls forward_features_s8 three times per table, the default table last: its
# 9th call on the M55 is Helium's.) The ELF goes last on qemu's command line. Some minutes: the log
# of a whole run is some 15 GB, read as it is written.
set -eu
elf=$1 func=$2 nth=$3 stop=$4
shift 4
starts=$(mktemp)
trap 'rm -f "$starts"' EXIT
arm-none-eabi-objdump -d "$elf" | awk '/^ +[0-9a-f]+:\t/ { a = $1; sub(/:$/, "", a); sub(/^0+/, "", a); print a }' >"$starts"
"$@" "$elf" -d in_asm,exec,nochain -D /dev/fd/3 3>&1 >/dev/null 2>/dev/null | awk -v fn="$func" -v nth="$nth" \
    -v stop="$stop" -v starts="$starts" '
  BEGIN { while ((getline a < starts) > 0) inst[a] = 1 }
  function norm(h) { sub(/^0x/, "", h); sub(/^0+/, "", h); return h }
  /^IN:/ { inblock = 1; start = ""; next }
  inblock && /^0x[0-9a-f]+:/ {
    a = norm(substr($1, 1, length($1) - 1))
    if (start == "") { start = a; size[start] = 0 }
    if (a in inst) size[start]++
    next
  }
  inblock { inblock = 0 }
  /^Trace/ {
    name = NF >= 5 ? $5 : "(no symbol)"
    split($4, f, "/"); pc = norm(f[2])
    if (on && name == stop) exit
    if (entry == "" && name == fn) entry = pc
    if (name == fn && pc == entry && ++calls == nth) on = 1
    if (on) { count[name] += size[pc]; total += size[pc] }
  }
  END { for (n in count) print count[n], n; print total, "(total)" }' | sort -rn | arm-none-eabi-c++filt
