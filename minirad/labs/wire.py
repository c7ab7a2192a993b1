"""What crosses between the grader and a student's kernel: plain data, checked on the way in.

The grader hands an exercise's cases to the kernel, and the kernel hands back
what the student's functions returned, as bytes in one format: JSON, with
numpy arrays and the few Python types JSON lacks written as tagged objects.
:func:`encode` turns a value into those bytes; :func:`decode` turns bytes
back into a value and refuses anything outside the format, before building
anything large: a size or nesting beyond the limits, an unknown tag, an
array whose data does not match its shape and dtype, a dtype other than
booleans, integers, floats and complex numbers.  Nothing is unpickled and no
class named in the data is looked up, so the worst a kernel can send is a
wrong answer.

What can travel: ``None``, ``bool``, ``int`` (any size), ``float`` (``nan``
and ``inf`` included), ``complex``, ``str``, ``bytes``, lists, tuples, dicts
(keys of those types too), numpy scalars and arrays of numbers (the dtype
kept: a float32 answer stays float32) and object arrays of those values.
Anything else, or a value past the limits, is sent as an :class:`Other`
naming its type, so that a check can say "your function returned Foo".

>>> import numpy as np
>>> value = {("x1", "v2"): np.float32(0.5), "path": [1, 2 ** 70], "J": np.eye(2)}
>>> back = decode(encode(value))
>>> back[("x1", "v2")].dtype, back["path"][1] == 2 ** 70, back["J"].tolist()
(dtype('float32'), True, [[1.0, 0.0], [0.0, 1.0]])
>>> decode(encode(object()))
Other('object')
>>> decode(b'{"$": "pickle", "data": "..."}')
Traceback (most recent call last):
...
ValueError: the data has an unknown tag 'pickle'
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["LIMITS", "Limits", "Other", "decode", "encode"]


@dataclass(frozen=True)
class Limits:
    """How large a value may be: total bytes, nesting depth, items (list entries, dict
    entries and array elements counted together), one string's length, an int's digits."""

    bytes: int = 64 * 2 ** 20
    depth: int = 40
    items: int = 20_000_000
    string: int = 1_000_000
    digits: int = 5_000


LIMITS = Limits()

_KINDS = "biufc"   # numpy dtype kinds that travel: bool, int, uint, float, complex


@dataclass(frozen=True)
class Other:
    """A value the format does not carry: its type's name (and why, when it was too large)."""

    type: str
    reason: str = ""

    def __repr__(self) -> str:
        return f"Other({self.type!r}" + (f", {self.reason!r})" if self.reason else ")")


class _Budget:
    def __init__(self, limits: Limits):
        self.limits, self.items = limits, 0

    def take(self, n: int) -> bool:
        self.items += n
        return self.items <= self.limits.items


# ------------------------------------------------------------------ encoding
def _float(x: float):
    return x if math.isfinite(x) else {"$": "float", "v": repr(x)}


def _type_name(x) -> str:
    kind = type(x)
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" \
        else kind.__qualname__


def _encode(x, depth: int, budget: _Budget):
    limits = budget.limits
    if depth > limits.depth:
        return {"$": "other", "type": _type_name(x), "reason": "nested too deeply"}
    kind = type(x)          # exact types only: a subclass may behave like anything
    if x is None or kind is bool:
        return x
    if kind is int:
        if x.bit_length() > limits.digits * 3.33:
            return {"$": "other", "type": "int", "reason": "too many digits"}
        return x if abs(x) < 2 ** 53 else {"$": "int", "v": str(x)}
    if kind is float:
        return _float(x)
    if kind is complex:
        return {"$": "complex", "v": [_float(x.real), _float(x.imag)]}
    if kind is str:
        if len(x) > limits.string:
            return {"$": "other", "type": "str", "reason": "too long"}
        return x
    if kind is bytes:
        if len(x) > limits.string:
            return {"$": "other", "type": "bytes", "reason": "too long"}
        return {"$": "bytes", "v": base64.b64encode(x).decode("ascii")}
    if kind in (list, tuple):
        if not budget.take(len(x)):
            return {"$": "other", "type": kind.__name__, "reason": "too many items"}
        items = [_encode(item, depth + 1, budget) for item in x]
        return items if kind is list else {"$": "tuple", "v": items}
    if kind is dict:
        if not budget.take(len(x)):
            return {"$": "other", "type": "dict", "reason": "too many items"}
        return {"$": "dict", "v": [[_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)]
                                    for k, v in x.items()]}
    if isinstance(x, np.generic) and kind.__module__ == "numpy":
        return _encode_array(np.asarray(x), depth, budget, scalar=True)
    if isinstance(x, np.ndarray):   # a subclass (np.matrix...) as the plain array it holds
        return _encode_array(np.asarray(x), depth, budget, scalar=False)
    return {"$": "other", "type": _type_name(x)}


def _encode_array(a: np.ndarray, depth: int, budget: _Budget, scalar: bool):
    tag = "scalar" if scalar else "array"
    if not budget.take(a.size):
        return {"$": "other", "type": "numpy.ndarray", "reason": "too many elements"}
    if a.dtype.kind in _KINDS:
        data = np.ascontiguousarray(a).tobytes()
        return {"$": tag, "dtype": a.dtype.str, "shape": list(a.shape),
                "data": base64.b64encode(data).decode("ascii")}
    if a.dtype.kind == "O":
        return {"$": tag, "dtype": "object", "shape": list(a.shape),
                "v": [_encode(item, depth + 1, budget) for item in a.reshape(-1).tolist()]}
    return {"$": "other", "type": f"numpy.ndarray of {a.dtype}"}


def encode(value, limits: Limits = LIMITS) -> bytes:
    """``value`` as bytes of the format (see the module's docstring); never raises for
    what the value is: a part the format cannot carry becomes an :class:`Other`."""
    return json.dumps(_encode(value, 0, _Budget(limits)), separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


# ------------------------------------------------------------------ decoding
def _fail(what: str):
    raise ValueError(what)


def _number(v, where: str) -> float:
    if type(v) in (int, float) and type(v) is not bool:
        return float(v)
    if type(v) is dict and v.get("$") == "float" and v.get("v") in ("nan", "inf", "-inf"):
        return float(v["v"])
    _fail(f"the data has a malformed number in {where}")


def _decode(x, depth: int, budget: _Budget):
    limits = budget.limits
    if depth > limits.depth + 2:
        _fail("the data is nested too deeply")
    kind = type(x)
    if x is None or kind in (bool, int, float):
        return x
    if kind is str:
        if len(x) > limits.string:
            _fail("the data holds a string that is too long")
        return x
    if kind is list:
        if not budget.take(len(x)):
            _fail("the data holds too many items")
        return [_decode(item, depth + 1, budget) for item in x]
    if kind is not dict or type(x.get("$")) is not str:
        _fail("the data holds an object without a tag")
    tag = x["$"]
    if tag == "float":
        return _number(x, "a float")
    if tag == "int":
        text = x.get("v")
        if type(text) is not str or len(text) > limits.digits + 1 or not text.lstrip(
                "-").isdigit():
            _fail("the data has a malformed int")
        return int(text)
    if tag == "complex":
        parts = x.get("v")
        if type(parts) is not list or len(parts) != 2:
            _fail("the data has a malformed complex number")
        return complex(_number(parts[0], "a complex"), _number(parts[1], "a complex"))
    if tag == "bytes":
        text = x.get("v")
        if type(text) is not str or len(text) > limits.string * 2:
            _fail("the data has malformed bytes")
        return base64.b64decode(text, validate=True)
    if tag == "tuple":
        items = x.get("v")
        if type(items) is not list or not budget.take(len(items)):
            _fail("the data has a malformed tuple")
        return tuple(_decode(item, depth + 1, budget) for item in items)
    if tag == "dict":
        pairs = x.get("v")
        if type(pairs) is not list or not budget.take(len(pairs)):
            _fail("the data has a malformed dict")
        out = {}
        for pair in pairs:
            if type(pair) is not list or len(pair) != 2:
                _fail("the data has a malformed dict entry")
            key = _decode(pair[0], depth + 1, budget)
            try:
                hash(key)
            except TypeError:
                _fail("the data has a dict key that cannot be a key")
            out[key] = _decode(pair[1], depth + 1, budget)
        return out
    if tag in ("array", "scalar"):
        return _decode_array(x, tag, depth, budget)
    if tag == "other":
        name, reason = x.get("type"), x.get("reason", "")
        if type(name) is not str or type(reason) is not str or len(name) > 300 or len(
                reason) > 300:
            _fail("the data has a malformed description of a value")
        return Other(name, reason)
    _fail(f"the data has an unknown tag {tag!r:.40}")


def _decode_array(x: dict, tag: str, depth: int, budget: _Budget):
    shape = x.get("shape")
    if type(shape) is not list or len(shape) > 32 or not all(
            type(n) is int and 0 <= n < 2 ** 40 for n in shape):
        _fail("the data has an array with a malformed shape")
    size = math.prod(shape)
    if tag == "scalar" and shape:
        _fail("the data has a scalar with a shape")
    if not budget.take(size):
        _fail("the data holds an array with too many elements")
    dtype_name = x.get("dtype")
    if dtype_name == "object":
        items = x.get("v")
        if type(items) is not list or len(items) != size:
            _fail("the data has an object array whose entries do not match its shape")
        out = np.empty(size, dtype=object)
        for i, item in enumerate(items):
            out[i] = _decode(item, depth + 1, budget)
        out = out.reshape(shape)
        return out[()] if tag == "scalar" else out
    if type(dtype_name) is not str or len(dtype_name) > 8:
        _fail("the data has an array with a malformed dtype")
    try:
        dtype = np.dtype(dtype_name)
    except TypeError:
        _fail(f"the data has an array of an unknown dtype {dtype_name!r}")
    if dtype.kind not in _KINDS or dtype.itemsize > 32:
        _fail(f"the data has an array of dtype {dtype}, which does not travel")
    text = x.get("data")
    if type(text) is not str or len(text) != 4 * math.ceil(size * dtype.itemsize / 3):
        _fail("the data has an array whose bytes do not match its shape and dtype")
    raw = base64.b64decode(text, validate=True)
    array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return array[()] if tag == "scalar" else array


def decode(data: bytes, limits: Limits = LIMITS):
    """The value ``data`` encodes; ``ValueError`` naming what is wrong when it is not
    of the format or passes ``limits`` (checked before anything large is built)."""
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"decode takes bytes, not {type(data).__name__}")
    if len(data) > limits.bytes:
        raise ValueError(f"the data is {len(data):,} bytes, more than the limit of "
                         f"{limits.bytes:,}")
    try:
        tree = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"the data is not of the format: {type(error).__name__}") from None
    try:
        return _decode(tree, 0, _Budget(limits))
    except RecursionError:
        raise ValueError("the data is nested too deeply") from None
