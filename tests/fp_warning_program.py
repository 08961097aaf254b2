"""A program that meets every floating-point condition on arrays large enough to be lazy.

``python fp_warning_program.py MODE FILTER`` prints one line per warning shown (category,
message, file, line) and per exception caught (type, message, line); the tests run it under
NumPy and under ``python -m shoal`` and compare the lines. MODE sets NumPy's error state
(``np.seterr`` for the whole program, or ``np.errstate`` around the recording only, read back
after it); FILTER is the warnings filter's action.
"""

import contextlib
import os
import sys
import warnings

import numpy as np

N = 1 << 19
mode, action = sys.argv[1], sys.argv[2]


def show(message, category, filename, lineno, file=None, line=None):
    print("W", category.__name__, message, os.path.basename(filename), lineno, flush=True)


warnings.showwarning = show
warnings.simplefilter(action)


def attempt(case):
    try:
        return case()
    except (FloatingPointError, RuntimeWarning) as error:
        line = error.__traceback__.tb_next.tb_lineno
        print("E", type(error).__name__, error, line, flush=True)
        return None


SETERR = {
    "seterr-all-warn": {"all": "warn"},
    "seterr-divide-ignore": {"divide": "ignore"},
    "seterr-under-warn": {"under": "warn"},
    "seterr-over-raise": {"over": "raise"},
}
ERRSTATE = {
    "errstate-all-ignore": {"all": "ignore"},
    "errstate-invalid-ignore": {"invalid": "ignore"},
    "errstate-under-warn": {"under": "warn"},
    "errstate-all-raise": {"all": "raise"},
}
np.seterr(**SETERR.get(mode, {}))
recording = np.errstate(**ERRSTATE[mode]) if mode in ERRSTATE else contextlib.nullcontext()

zeros, ones, big, huge = np.zeros(N), np.ones(N), np.full(N, 1e300), np.full(N, 1e303)
tiny, nans, ints = np.full(N, 1e-300), np.full(N, np.nan), np.arange(N)
kept = []
with recording:
    kept.append(attempt(lambda: np.log(zeros)))  # divide by zero in log
    kept.append(attempt(lambda: zeros / zeros))  # invalid value in divide
    kept.append(attempt(lambda: np.exp(big)))  # overflow in exp
    kept.append(attempt(lambda: tiny * tiny))  # underflow in multiply
    kept.append(attempt(lambda: np.log(ones + zeros) + ones / zeros))  # only the division
    kept.append(attempt(lambda: np.sqrt(-ones) * 2.0 + np.log(ones)))  # only the square root
    kept.append(attempt(lambda: ints // (ints * 0)))  # integer division by zero
    kept.append(attempt(lambda: ints % 0))  # integer remainder by zero
    kept.append(attempt(lambda: big.astype(np.float32)))  # overflow in cast
    kept.append(attempt(lambda: nans.astype(np.int64)))  # invalid value in cast
    kept.append(attempt(lambda: np.add.reduce(huge * 10.0)))  # overflow in the sum of a product
    kept.append(attempt(lambda: np.cumsum(huge, axis=0)[-1:] + 0.0))  # overflow in accumulate
    kept.append(attempt(lambda: (huge * 10.0).sum() + np.mean(huge) + huge.mean()))  # NumPy's lines
    kept.append(attempt(lambda: np.add.accumulate(huge)))  # overflow in accumulate, at this line
    in_place = np.zeros(N)
    attempt(lambda: np.divide(in_place, 0.0, out=in_place))  # in place: invalid value in divide
    kept.append(attempt(lambda: np.log(ones) + np.exp(ones)))  # nothing
    for _ in range(3):
        kept.append(attempt(lambda: ones / zeros))  # the same line three times
    for _ in range(3):
        read = attempt(lambda: np.log(zeros + 0.0))  # the same line, each time read (flushed)
        kept.append(None if read is None else read[:2] + 0.0)
total = 0.0
for value in kept:
    if value is not None:
        total += int(np.isfinite(value).sum())
print("checksum", total)
