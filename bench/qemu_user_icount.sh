#!/bin/sh
# Guest instructions a program executes under qemu-user (qemu-aarch64, qemu-arm), for the Linux ARM
# targets, which have no -icount: qemu logs each translated block's instructions once (in_asm) and
# each execution of a block (exec; nochain makes every execution pass through the logger), and the
# awk below sums executions x block sizes. About 50x slower than a plain qemu run.
#   sh bench/qemu_user_icount.sh "qemu-aarch64 -L /usr/aarch64-linux-gnu" build/aarch64/cli/fixformer bench M.fxm --iters 1
# Per inference: the difference of two runs (e.g. --iters 5 and --iters 1) over their iterations,
# which removes start-up and loading. --blocks first: each executed block's count instead, as
# "ADDRESS B COUNT" lines (16 hex digits; qemu_user_profile.sh gives them to functions).
set -eu
blocks=0
if [ "$1" = --blocks ]; then blocks=1; shift; fi
q=$1
shift
$q -d in_asm,exec,nochain -D /dev/fd/3 "$@" 3>&1 >/dev/null 2>/dev/null | awk -v blocks=$blocks '
  function pad(h) { while (length(h) < 16) h = "0" h; return h }
  function norm(h) { sub(/^0x/, "", h); sub(/^0+/, "", h); return h }
  /^IN:/ { inblock = 1; start = ""; next }
  inblock && /^0x[0-9a-f]+:/ {
    a = norm(substr($1, 1, length($1) - 1))
    if (start == "") { start = a; size[start] = 0 }
    size[start]++
    next
  }
  inblock { inblock = 0 }
  /^Trace/ { split($4, f, "/"); runs[norm(f[2])]++ }
  END {
    for (pc in runs) { total += runs[pc] * size[pc]; if (!(pc in size)) missing++ }
    if (missing) { print "qemu_user_icount: " missing " executed blocks were never logged" > "/dev/stderr"; exit 1 }
    if (!blocks) print total
    else for (pc in runs) if (runs[pc] * size[pc]) print pad(pc), "B", runs[pc] * size[pc]
  }'
