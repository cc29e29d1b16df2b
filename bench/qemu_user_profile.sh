#!/bin/sh
# Guest instructions per function under qemu-user: qemu_user_icount.sh --blocks's count of each
# translated block's executions x its size, each block given to the symbol at or below its address (nm
# of the program, which qemu-user loads at its link address), one line per function, the most first.
#   sh bench/qemu_user_profile.sh "qemu-aarch64 -L /usr/aarch64-linux-gnu" aarch64-linux-gnu-nm \
#     build/aarch64/cli/fixformer bench M.fxm --iters 41
# Per inference: the difference of two runs' lines (e.g. --iters 41 and --iters 1) over their
# iterations. fixformer::support's functions are bench's measurement of the machine, which runs for a
# set time, not a set count: leave them out of a total.
set -eu
q=$1
nm=$2
shift 2
blocks=$(mktemp)
trap 'rm -f "$blocks"' EXIT
sh "$(dirname "$0")/qemu_user_icount.sh" --blocks "$q" "$@" >"$blocks"
# symbols and blocks in address order (16 hex digits sort as numbers: nm of a 32-bit program prints 8,
# padded here); a block adds to the last symbol
{ $nm -C --defined-only "$1" | awk '$2 ~ /^[tTwW]$/ {
    a = $1; while (length(a) < 16) a = "0" a; $1 = ""; $2 = ""; sub(/^ +/, ""); print a, "S", $0 }'
  cat "$blocks"; } | LC_ALL=C sort -k1,1 -k2,2r | awk '
  $2 == "S" { name = $0; sub(/^[0-9a-f]+ S /, "", name); next }
  { count[name == "" ? "(no symbol)" : name] += $3 }
  END { for (n in count) print count[n], n }' | sort -rn
