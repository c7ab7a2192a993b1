"""The kernel's side of grading: run the student's definitions on an exercise's cases.

The grader's kernel (:mod:`minirad.labs.kernel`) runs the submission's cells,
then one cell per exercise that calls :func:`probe`.  :func:`probe` asks the
kernel's watch for the exercise's cases (they reach the kernel encrypted and
are opened only once the watch on the exercise's reference is on), runs the
exercise's probe on each case (:func:`answer`), and hands every answer back
as data through the watch's channel.  Nothing here judges: the comparison
with minirad's own answer, the points and the messages are the grader's, in
its own process (:mod:`minirad.labs.grading`).  Patching anything in the
kernel therefore changes only what the student's functions answered.

:func:`answer` is also what the grader's tests use to answer a case in one
process, without a kernel.

>>> from minirad.labs.exercise import EXERCISES
>>> spec = EXERCISES["1.1"]
>>> case = spec.cases(None)[0]
>>> answer(spec, (lambda f, x, h: 1 / 0,), case)["error"]
'raised'
>>> answer(spec, (lambda f, x, h: 0.5,), case)
{'value': 0.5}
"""

from __future__ import annotations

import sys
import time

from . import wire
from .checking import CheckFailed, time_limit
from .exercise import EXERCISES, UsedReference

__all__ = ["answer", "case_seconds", "probe"]


def case_seconds(limit: float, n_cases: int) -> float:
    """The time one case may take: twice its share of the exercise's limit (``limit``
    seconds for all ``n_cases``), at least 2 s."""
    return max(2.0, 2 * limit / max(n_cases, 1))


def answer(spec, fns, case, seconds: float | None = None) -> dict:
    """What the student's definitions ``fns`` answered on ``case``: ``{"value": ...}`` (what
    the exercise's probe returned) or ``{"error": status, "message": ...}`` when they
    raised, ran out of time, entered the reference or were not written yet."""
    where = spec.where(case)
    try:
        with time_limit(seconds, where, " (the grader's limit for this case)"):
            return {"value": spec.probe(fns, case, where)}
    except NotImplementedError as error:
        return {"error": "not implemented", "message": f"{where}: {error}"}
    except CheckFailed as failure:
        return {"error": failure.reason, "message": str(failure)}
    except UsedReference as used:
        return {"error": "used the reference",
                "message": f"{where}: your function called minirad's {used.name}"}
    except KeyboardInterrupt:
        return {"error": "timed out", "message": f"{where}: stopped"}
    except BaseException as error:  # noqa: BLE001  (SystemExit and the like: the student's)
        return {"error": "raised", "message": f"{where}: your code raised "
                                              f"{type(error).__name__}: {error}"[:2000]}


def _namespace() -> dict:
    """The notebook's variables: IPython's user namespace in a kernel, else __main__'s."""
    shell_module = sys.modules.get("IPython")
    shell = shell_module.get_ipython() if shell_module is not None else None
    if shell is not None:
        return shell.user_ns
    return vars(sys.modules["__main__"])


def probe(number: str, payload: bytes, seconds: float | None = None) -> None:
    """Run exercise ``number`` on the cases in ``payload``, in the grader's kernel: open
    the exercise's window (the watch takes ``payload`` and gives back the cases), answer
    each case (within ``seconds`` together, default the exercise's limit), send each
    answer as a frame, close the window."""
    spec = EXERCISES[number]
    limit = spec.seconds if seconds is None else float(seconds)
    box: list = []
    sys.audit("minirad.open", number, payload, box)
    if not box:
        raise RuntimeError("the grader's watch is not installed in this kernel")
    cases = wire.decode(box[0])
    namespace = _namespace()
    try:
        missing = [name for name in spec.takes if name not in namespace]
        fns = tuple(namespace.get(name) for name in spec.takes)
        budget = time.monotonic() + limit
        for index, case in enumerate(cases):
            if missing:
                result = {"error": "missing", "message": f"{spec.label}: your notebook defines "
                                                         f"no {missing[0]!r}, which the check "
                                                         f"takes"}
            else:
                left = budget - time.monotonic()
                if left <= 0:
                    result = {"error": "timed out",
                              "message": f"{spec.where(case)}: not run, the exercise's "
                                         f"{limit:g} s were used up"}
                else:
                    result = answer(spec, fns, case,
                                    min(left, case_seconds(limit, len(cases))))
            frame = wire.encode({"exercise": number, "case": index, "answer": result})
            sys.audit("minirad.frame", frame)
    finally:
        sys.audit("minirad.close", number)
