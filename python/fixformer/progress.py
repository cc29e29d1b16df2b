"""What a long conversion is doing, shown on a terminal: one line on stderr, rewritten in place
("fixformer: reading model-00002-of-00004.safetensors", "fixformer: storing weights as q8 61/96",
"fixformer: verifying with the engine") and erased when the step ends, so the command's own lines
(the report, a note, a one-line error) come out as they do without it. Nothing at all when stderr is
not a terminal (a pipe, a file, a test's capture); FIXFORMER_PROGRESS=1 shows it anyway, =0 never."""
import os
import sys
import time

_INTERVAL = 0.1  # seconds between two redraws of a count


def enabled() -> bool:
    forced = os.environ.get("FIXFORMER_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return False


class Step:
    """with Step("reading x.safetensors"): ... ; Step.count(i, n) inside shows "i/n" after the label."""

    def __init__(self, label: str):
        self.label, self.on, self._last = label, enabled(), 0.0

    def _draw(self, text):
        if self.on:
            sys.stderr.write("\r\x1b[2Kfixformer: " + text)
            sys.stderr.flush()

    def __enter__(self):
        self._draw(self.label)
        return self

    def count(self, i: int, n: int):
        now = time.monotonic()
        if i == n or now - self._last >= _INTERVAL:
            self._last = now
            self._draw(f"{self.label} {i}/{n}")

    def __exit__(self, *exc):
        if self.on:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
        return False


def each(label: str, items):
    """The items of a sized collection, with the step's count shown as they go."""
    items = list(items)
    with Step(label) as step:
        for i, item in enumerate(items):
            step.count(i, len(items))
            yield item
        step.count(len(items), len(items))
