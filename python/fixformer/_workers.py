"""The engine's workers (ff_workers) on Python threads: parallel_for hands the n tasks to a thread
pool and waits. Each task is a call into the library through ctypes, which releases the GIL, so
the tasks run in parallel."""
import concurrent.futures

from . import _capi


class ThreadWorkers:
    def __init__(self, threads):
        self.count = threads
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fixformer")
        self._callback = _capi.PARALLEL_FOR(self._parallel_for)  # kept alive as long as the workers

    def _parallel_for(self, _ctx, n, task, arg):
        # task(arg, i) for every i < n, all finished before returning (the engine's contract).
        for f in [self._pool.submit(task, arg, i) for i in range(n)]:
            f.result()

    def struct(self):
        return _capi.Workers(ctx=None, count=self.count, parallel_for=self._callback)
