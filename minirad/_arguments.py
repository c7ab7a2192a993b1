"""Argument checks shared by several modules."""

import os

import numpy as np

from .exact.result import format_count


def number_of_estimates(n) -> int:
    """``n``, the number of estimates to draw, as an int >= 1.

    >>> number_of_estimates(3)
    3
    >>> number_of_estimates(0)
    Traceback (most recent call last):
    ...
    ValueError: n (the number of estimates) must be at least 1, got 0
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n (the number of estimates) must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n (the number of estimates) must be at least 1, got {n}")
    return int(n)


def memory_available() -> int | None:
    """Bytes this process may still allocate, as far as the system tells: Linux's
    estimate ``MemAvailable`` (free memory plus caches it can drop), else the
    physical memory; lowered to the address-space limit (``ulimit -v``) if one is set.
    ``None`` where the system tells nothing (then :func:`check_memory` refuses nothing).
    """
    limits = []
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            limits += [int(line.split()[1]) * 1024 for line in meminfo
                       if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    if not limits:
        try:
            limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (AttributeError, ValueError, OSError):
            pass
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except (ImportError, OSError, ValueError):
        pass
    return min(limits) if limits else None


def format_number(n: int) -> str:
    """A count with thousands separators; past 100 digits as ``~m.me<exponent>``.

    >>> format_number(10 ** 11), format_number(10 ** 5000)
    ('100,000,000,000', '~1.0e5000')
    """
    return f"{n:,}" if abs(n) < 10**100 else format_count(n)


def format_bytes(n: int) -> str:
    """A number of bytes in binary units.

    >>> format_bytes(512), format_bytes(3 * 2**29), format_bytes(10 ** 30), format_bytes(10 ** 400)
    ('512 B', '1.5 GiB', '8.67e+11 EiB', '~8.7e381 EiB')
    """
    n = int(n)
    for power, unit in enumerate(("B", "KiB", "MiB", "GiB", "TiB", "PiB")):
        if n < 1024 ** (power + 1):
            return f"{n} B" if power == 0 else f"{n / 1024 ** power:.3g} {unit}"
    exbibytes = n >> 60
    return f"{format_count(exbibytes) if exbibytes > 10**300 else f'{n / 2**60:.3g}'} EiB"


#: smaller needs are not checked: asking the system costs more than such an allocation
CHECKED_FROM = 1 << 26  # 64 MiB


def check_memory(needed: int, what: str, advice=None) -> None:
    """Refuse, before allocating, what memory cannot hold: a ``ValueError`` saying
    how much ``what`` would need and how much there is; ``advice(available)``, if
    given, adds what would fit (needs up to :data:`CHECKED_FROM` bytes pass
    unchecked).  Counts a user types (samples, draws, steps) go
    through here, so that a typo of a few zeros is one clear line, not numpy's
    ``MemoryError`` or minutes of swapping.

    >>> check_memory(10 ** 30, "a table of 10**30 entries")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: a table of 10**30 entries would need 8.67e+11 EiB of memory, more than ...
    """
    if needed <= CHECKED_FROM:
        return
    available = memory_available()
    if available is not None and needed > available:
        more = advice(available) if advice is not None else ""
        raise ValueError(f"{what} would need {format_bytes(needed)} of memory, more than the "
                         f"{format_bytes(available)} available{more}")
