"""The percentile the evaluation scripts print: the value at rank floor(p / 100 x n) of the sorted
values (nearest rank, no interpolation), the largest for p = 100.

  from percentile import pct    (from a script in scripts/, whose folder Python puts on the path)
"""


def pct(values, p):
    """The p-th percentile (0 <= p <= 100) of a non-empty sequence of numbers."""
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]
