"""A Megatron-LM training log as a measured run: the step time it printed, and its timers.

Megatron's ``training_log`` prints one line per logging interval with ``elapsed time per iteration
(ms): X`` (the interval's mean step) beside the iteration number, and, with ``--timing-log-level``
1 or 2, its timers as ``timers.log`` writes them (megatron/core/timers.py)::

    (min, max) time across ranks (ms):
        forward-backward ...............................: (1234.56, 1240.12)
        optimizer ......................................: (20.01, 21.33)

(or ``max time across ranks (ms):`` with one number a timer), each the interval's mean per
iteration. Lines may carry a logger's prefix (``INFO:megatron.core.timers:``, a timestamp); the
reader looks for the phrases, not for line starts. The measured step is the median of the
intervals' elapsed times after the first (which holds the warm-up and the first iteration's
compilation and allocation).
"""
import re
from dataclasses import dataclass

import numpy as np

from simcore.errors import ScenarioError

# Each pattern is matched once a line, on lines of at most MAX_LINE_CHARS, and none can backtrack over more
# than a bounded stretch: a log is read in time proportional to its length. Numbers are decimals of at most
# 12 digits before and after the point (a millisecond time, an iteration count).
NUMBER = r"(\d{1,12}(?:\.\d{1,12})?)"
ELAPSED = re.compile(r"elapsed time per iteration \(ms\):\s{0,8}" + NUMBER + r"(?![\d.])")
ITERATION = re.compile(r"iteration\s{1,8}(\d{1,12})\s{0,8}/\s{0,8}\d{1,12}\s{0,8}\|")
TIMER_HEADER = re.compile(r"(\(min, max\) time|max time) across ranks \(ms\):")
TIMER_LINE = re.compile(r"^\s{0,64}(?:[^\s:]{1,128}:)?\s{0,64}([A-Za-z0-9_/-][A-Za-z0-9_/ -]{0,127}?) \.{1,512}: \(?"
                        + NUMBER + r"(?:, " + NUMBER + r"\))?\s*$")
MAX_LINES = 2_000_000  # a log read line by line, at most this many lines
MAX_LINE_CHARS = 4096  # longer lines are not Megatron's own (its longest prints a few hundred characters)
MAX_STEP_MS = 1e9  # an interval's mean step or a timer: at most about 11.6 days
# The timers that run once an iteration (the rest: set-up, checkpoints, evaluation) and the engine's
# step parts they sit beside (docs/traces.md, "A Megatron log").
STEP_TIMERS = {"forward-backward": "forward and backward of every micro-batch, the pipeline's bubble and the "
                                   "communication inside them",
               "forward-compute": "forward", "backward-compute": "backward (and its recomputation)",
               "all-grads-sync": "the data-parallel gradient reduction left exposed",
               "params-all-gather": "the distributed optimizer's parameter gather",
               "optimizer": "the optimizer step"}


@dataclass(frozen=True)
class MegatronLog:
    iterations: list[int]  # the last iteration of each logged interval
    elapsed_ms: list[float]  # each interval's mean step
    timers_ms: dict[str, list[float]]  # a per-iteration timer's maximum across ranks, one value per report

    def step_time_s(self) -> float:
        """The median step after the first logged interval (the first alone when there is one)."""
        kept = self.elapsed_ms[1:] or self.elapsed_ms
        return float(np.median(kept)) / 1e3

    def timer_means_ms(self) -> dict[str, float]:
        """Each per-iteration timer's median after its first report, as :meth:`step_time_s`."""
        return {name: float(np.median(values[1:] or values)) for name, values in self.timers_ms.items()}


def parse_megatron_log(text: str) -> MegatronLog:
    """The intervals and timers of a Megatron-LM log; refused naming why when it has no iteration
    line (``elapsed time per iteration (ms)``)."""
    iterations, elapsed, timers = [], [], {}
    in_timers = False
    for number, line in enumerate(text.splitlines(), 1):
        if number > MAX_LINES:
            raise ScenarioError("megatron_log", f"over {MAX_LINES:,} lines: give the log of the steps you mean")
        if len(line) > MAX_LINE_CHARS:
            in_timers = False
            continue
        found = _interval(line, number)
        if found:
            iterations.append(found[0])
            elapsed.append(found[1])
            in_timers = False
            continue
        if TIMER_HEADER.search(line):
            in_timers = True
            continue
        timer = TIMER_LINE.match(line) if in_timers else None
        if timer is None:
            in_timers = False
            continue
        name = timer.group(1).strip()
        if name in STEP_TIMERS:
            timers.setdefault(name, []).append(_milliseconds(timer.group(3) or timer.group(2), number))
    if not elapsed:
        raise ScenarioError("megatron_log", "no 'iteration N/M | ... | elapsed time per iteration (ms): X' line: "
                                            "give the training log Megatron-LM printed")
    return MegatronLog(iterations, elapsed, timers)


def _interval(line: str, number: int) -> tuple[int, float] | None:
    """(the iteration, its interval's mean step in ms) of a ``training_log`` line, None for another line:
    the elapsed time found by its phrase, the iteration the last ``iteration N/M |`` before it."""
    elapsed = ELAPSED.search(line)
    if elapsed is None:
        return None
    iteration = next(reversed(list(ITERATION.finditer(line, 0, elapsed.start()))), None)
    if iteration is None:
        return None
    return int(iteration.group(1)), _milliseconds(elapsed.group(1), number)


def _milliseconds(text: str, number: int) -> float:
    value = float(text)
    if not 0 < value <= MAX_STEP_MS:
        raise ScenarioError("megatron_log", f"line {number:,}: {text} ms is not a step's time (0 to {MAX_STEP_MS:g})")
    return value
