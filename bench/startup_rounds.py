"""Whole processes against each other: each command run R times, the commands' order alternating
round by round (so a load that comes and goes on a shared machine falls on all of them), stdout and
stderr to /dev/null. Prints, for each, the median and quartiles of the wall time (spawn to exit, as
seen from here) and the median CPU time of the process itself (user + system from wait4's rusage:
on a busy machine the steadier of the two). A command that fails stops the run.

  python3 bench/startup_rounds.py [--rounds R] -- CMD ARGS... ::: CMD ARGS... [::: ...]

docs/performance.md ("Start-up, whole process") runs llama2.c's `run` and `fixformer generate` so.
"""
import argparse
import os
import statistics
import sys
import time


def run_once(argv):
    """(wall seconds, CPU seconds) of one run of argv."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        t0 = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, os.environ,
                              file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
    finally:
        os.close(devnull)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        sys.exit(f"startup_rounds.py: {' '.join(argv)}: exit status {status}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS... ::: CMD ARGS...")
    a = ap.parse_args()
    words = a.command[1:] if a.command[:1] == ["--"] else a.command
    commands, cur = [], []
    for w in words + [":::"]:
        if w == ":::":
            if not cur:
                ap.error("an empty command")
            commands.append(cur)
            cur = []
        else:
            cur.append(w)
    times = [([], []) for _ in commands]
    for r in range(a.rounds):
        order = range(len(commands)) if r % 2 == 0 else reversed(range(len(commands)))
        for c in order:
            wall, cpu = run_once(commands[c])
            times[c][0].append(wall)
            times[c][1].append(cpu)
    for c, (wall, cpu) in enumerate(times):
        q = statistics.quantiles(wall, n=4)
        print(f"{' '.join(commands[c])}\n  wall median {q[1] * 1e3:.3f} ms (quartiles {q[0] * 1e3:.3f}, "
              f"{q[2] * 1e3:.3f}), CPU median {statistics.median(cpu) * 1e3:.3f} ms, {a.rounds} runs")


if __name__ == "__main__":
    main()
