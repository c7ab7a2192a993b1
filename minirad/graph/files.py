"""Saving and loading an LCG: :func:`save_graph` writes one file, :func:`load_graph` reads it.

A file takes one of two forms, chosen by what the graph holds:

* **JSON text** for a graph of numbers: ``{"format": "minirad.lcg", "version": 1, ...}``,
  the columns ``names``, ``ops``, ``values`` (``null`` where unknown), ``inputs``,
  ``outputs`` and ``edges`` (``source``, ``target``, ``partial``).  It is the file of
  minirad 0.1, readable and diffable, and floats round-trip exactly.  A graph that
  records injected random matrices, or whose numbers are not float64, is written as
  version 2: version 1 and the optional columns ``injections`` and ``dtypes``.
* **an .npz archive** (numpy's zip of ``.npy`` arrays) for a graph with array
  vertices, or any graph saved under a name ending in ``.npz``: the member
  ``manifest`` holds JSON (format ``"minirad.vector_lcg"``, version 1: every vertex's
  name, op, shape and dtype; every edge's endpoints and its Jacobian block as an
  operator kind with parameters and the names of its arrays), the other members the
  arrays it names.  An array that several operators hold (the LU factors the two
  edges of a linear solve share) is written once.

:func:`load_graph` tells the two apart by the file's first bytes, not its name.
It reads no pickle and evaluates nothing, and it checks everything before it
builds anything: a damaged or hostile file raises ``ValueError`` saying what is
wrong, and nothing else.  Sizes are checked before memory is taken: the zip
directory's member sizes (and their compression ratio, against zip bombs), every
declared shape and the integer arrays operators are built from against ``max_bytes``,
each ``.npy`` header against its member's size.
Writes are atomic (:func:`write_atomically`): a failed save leaves no partial file.

>>> import os, tempfile
>>> from minirad import examples
>>> folder = tempfile.mkdtemp()
>>> path = save_graph(examples.figure1(), os.path.join(folder, "figure1.json"))
>>> open(path).read(40)
'{"format":"minirad.lcg","version":1,"nam'
>>> load_graph(path).same_as(examples.figure1())
True

A graph of arrays, with a linear solve whose two edges share one LU factorisation:

>>> import numpy as np
>>> from minirad import retained_memory, trace
>>> g = trace(lambda A, b: (np.linalg.solve(A, b) ** 2).sum(),
...                  np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0]))
>>> h = load_graph(save_graph(g, os.path.join(folder, "solve.npz")))
>>> h.same_as(g), retained_memory(h).per_edge == retained_memory(g).per_edge   # the LU kept once
(True, True)
"""

from __future__ import annotations

import json
import math
import os
import stat
import struct
import sys
import tempfile
import zipfile
import zlib

import numpy as np

from . import operators as O
from .einsum import MAX_OPERANDS, Einsum
from .labels import FLOATS
from .lcg import LCG, takes_graph_or_function, value_key
from .patches import ProjectedPatches, SampledPatches

__all__ = ["ARRAY_COST", "INDEX_COST", "MAX_BYTES", "TEXT_COST", "load_graph", "save_graph",
           "write_atomically"]

TEXT_FORMAT = "minirad.lcg"
TEXT_VERSIONS = (1, 2)  # 2: version 1 with the optional columns "injections" and "dtypes"
ARCHIVE_FORMAT = "minirad.vector_lcg"
ARCHIVE_VERSION = 1

#: the most bytes of work :func:`load_graph` takes on (see :data:`TEXT_COST` and
#: :data:`ARRAY_COST`) unless told
MAX_BYTES = 2**30
#: parsed JSON (a text file, an archive's manifest) takes about 8 times its size in Python
#: objects (measured), so each of its bytes counts this many against max_bytes
TEXT_COST = 8
#: each array of an archive counts at least this many bytes against max_bytes: reading one
#: takes 0.2 to 0.4 ms whatever its size (its zip entry, its header, its Python objects;
#: measured), so a million arrays of a few bytes are no small file; the default budget
#: reads about 16,000 arrays, a few seconds
ARRAY_COST = 2**16
#: each entry of an integer array (positions, indices) counts this many bytes against
#: max_bytes, whatever its dtype: the operators built from it keep int64 copies and sort
#: them (measured: 33 to 40 bytes an entry, int8 to int64), so its bytes on file say little
INDEX_COST = 40
#: a zip member may expand at most this many times (numpy writes them uncompressed)
MAX_RATIO = 100
#: dimensions of a declared shape, as numpy allows
MAX_DIMENSIONS = 32
#: digits of an integer in a file (Python refuses to print beyond 4300)
MAX_DIGITS = 4000
#: operators nested inside one another (composed of, added from) in an archive
MAX_NESTING = 20

_DTYPES = ("float16", "float32", "float64", "bool", "int32", "int64")
_ARRAY_KINDS = "biuf"    # what a member may hold: no objects (pickle), strings or records
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a member first, or an empty archive
_JSON_STARTS = {bytes([c]) for c in b'{["-0123456789tfn'} | {b""}   # a JSON value's first byte


# ------------------------------------------------------------------ writing
def _new_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0o666 less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path, write) -> None:
    """Call ``write(f)`` on a temporary binary file beside ``path``, then rename it.

    An ``OSError`` names ``path``, never the temporary file (which the user
    did not ask for and which is gone by then).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "note.txt")
    >>> write_atomically(path, lambda f: f.write(b"hello"))
    >>> open(path).read()
    'hello'
    >>> write_atomically(os.path.dirname(path), lambda f: f.write(b"hello"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    IsADirectoryError: [Errno 21] Is a directory: '/...'
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save {path}: the folder {folder} does not exist")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".minirad-", suffix=os.path.splitext(path)[1],
                                   dir=folder)
        with os.fdopen(fd, "wb") as f:
            write(f)
        # mkstemp makes the file private (0o600); what we save is an ordinary file
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, path)
    except BaseException as error:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(error, OSError) and error.errno is not None and tmp in (
                error.filename, error.filename2):
            raise type(error)(error.errno, error.strerror, path) from error
        raise


@takes_graph_or_function
def save_graph(g: LCG, path) -> str:
    """Write an LCG to one file, atomically: JSON text, or an ``.npz`` archive for arrays.

    Parameters
    ----------
    g : LCG
        The graph (or a function, followed by its point, to trace first).
    path : str or os.PathLike
        Where to write: a name ending in ``.npz`` gets the archive form (the
        arrays and a JSON manifest, no pickle), any other name JSON text,
        which holds graphs of numbers only.

    Returns
    -------
    str
        The path written.

    Raises
    ------
    ValueError
        When a graph with array vertices is to be written as JSON text.
    OSError
        When the file cannot be written; nothing half-written is left behind.

    See Also
    --------
    load_graph : Read it back, checked.
    minirad.save_drawing : Save a picture of the graph instead.

    Notes
    -----
    The JSON text is the versioned schema of minirad 0.1 (floats round-trip
    exactly); the file is written to a temporary name beside ``path`` and
    renamed, so a failed save leaves no partial file.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from minirad import examples, load_graph, trace
    >>> folder = tempfile.mkdtemp()
    >>> path = save_graph(examples.lab(), os.path.join(folder, "lab.json"))
    >>> load_graph(path).same_as(examples.lab())
    True
    >>> g = trace(lambda x: (x * x).sum(), np.ones(3))
    >>> save_graph(g, os.path.join(folder, "g.json"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: LCG(3 vertices: ...) has array vertices: save it as an .npz archive (a path \
ending in .npz), not as JSON text ('.../g.json')
    """
    path = os.fspath(path)
    if path.lower().endswith(".npz"):
        arrays = _archive(g)
        write_atomically(path, lambda f: np.savez(f, **arrays))
        return path
    if g.algebra is not FLOATS:
        raise ValueError(f"{g!r} has array vertices: save it as an .npz archive (a path ending "
                         f"in .npz), not as JSON text ({path!r})")
    text = json.dumps(_text_document(g), allow_nan=False, separators=(",", ":"))
    write_atomically(path, lambda f: f.write(text.encode("utf-8")))
    return path


def _text_document(g: LCG) -> dict:
    """The JSON document of a graph of numbers: version 1 unless it needs version 2."""
    doc = {"format": TEXT_FORMAT, "version": 1, "names": list(g.names), "ops": list(g.ops),
           "values": [None if math.isnan(x) else x for x in g.values.tolist()],
           "inputs": list(g.inputs), "outputs": list(g.outputs),
           "edges": {"source": g.sources.tolist(), "target": g.targets.tolist(),
                     "partial": g.labels.tolist()}}
    if g.injections:
        doc["injections"] = [dict(record) for record in g.injections]
    if any(dtype != np.float64 for dtype in g.dtypes):
        doc["dtypes"] = [np.dtype(dtype).name for dtype in g.dtypes]
    if len(doc) > 8:
        doc["version"] = 2
    return doc


def _archive(g: LCG) -> dict[str, np.ndarray]:
    """The arrays of the archive form, the manifest among them."""
    if g.values is None:
        raise ValueError(f"{g!r} has no values; an archive holds every vertex's value")
    arrays: dict[str, np.ndarray] = {}
    vertices = []
    for v in range(g.n_vertices):
        arrays[f"value/{v}"] = np.asarray(g.values[v], dtype=g.dtype(v))
        vertices.append({"name": g.names[v], "op": g.ops[v], "shape": list(g.shape(v)),
                         "dtype": np.dtype(g.dtype(v)).name})
    written: dict = {}
    edges = [{"source": int(u), "target": int(v),
              "operator": _operator_spec(label, f"edge/{e}", arrays, written)}
             for e, (u, v, label) in enumerate(g.edges())]
    manifest = {"format": ARCHIVE_FORMAT, "version": ARCHIVE_VERSION, "vertices": vertices,
                "inputs": list(g.inputs), "outputs": list(g.outputs), "edges": edges,
                "injections": [dict(record) for record in g.injections]}
    text = json.dumps(manifest, allow_nan=False)
    arrays["manifest"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    return arrays


def _operator_spec(op, prefix: str, arrays: dict, written: dict) -> dict:
    """The manifest entry of a label; its arrays go into ``arrays``, each array object
    once (``written`` maps id -> (array, name) and keeps the array alive, so that an
    id is not reused for another array during one save)."""
    if isinstance(op, (float, int, np.floating)):  # the label of an edge between two numbers
        return {"kind": "number", "params": {"value": float(op)}, "arrays": {}}
    if isinstance(op, O.Composed):
        return {"kind": "composed", "parts": [_operator_spec(p, f"{prefix}.{i}", arrays, written)
                                              for i, p in enumerate(op.parts)]}
    if isinstance(op, O.Added):
        return {"kind": "added", "terms": [_operator_spec(t, f"{prefix}.{i}", arrays, written)
                                           for i, t in enumerate(op.terms)]}
    params, data = op.spec()
    extra = {}
    if isinstance(op, O.MatMul) and op.gathered is not None:
        # the rearrangement that rebuilds the stored operand from its source
        extra["gathered"] = _operator_spec(op.gathered[1], f"{prefix}.gather", arrays, written)
    names = {}
    for key, array in data.items():
        if id(array) not in written:
            written[id(array)] = (array, f"{prefix}/{key}")
            arrays[f"{prefix}/{key}"] = np.asarray(array)
        names[key] = written[id(array)][1]
    return {"kind": op.kind, "params": params, "arrays": names, **extra}


# ------------------------------------------------------------------ reading
def load_graph(path, max_bytes: int = MAX_BYTES) -> LCG:
    """Read a graph written by :func:`save_graph` (or minirad 0.1), checking everything.

    Parameters
    ----------
    path : str or os.PathLike
        A JSON text file or an ``.npz`` archive (told apart by their first bytes).
    max_bytes : int, optional
        The most work reading may take, in bytes, checked before it starts: a
        text file counts :data:`TEXT_COST` times its size (what parsing JSON
        takes); an archive its arrays as its zip directory declares them, each
        at least :data:`ARRAY_COST` (what reading one takes, however small),
        its manifest :data:`TEXT_COST` times its size, and each entry of an
        integer array (positions, indices) :data:`INDEX_COST` bytes (what the
        operator built from it takes).  Default 1 GiB.

    Returns
    -------
    LCG
        The graph, validated as :class:`~minirad.graph.lcg.LCG` validates a new one.

    Raises
    ------
    FileNotFoundError
        When there is no file at ``path``.
    ValueError
        When the file is not a saved LCG (a folder, a pipe or device, neither
        JSON nor an archive), is damaged or hostile (huge numbers, deep nesting,
        a zip bomb, a cycle), or would take more than ``max_bytes`` to read;
        the message says what is wrong.

    See Also
    --------
    save_graph : Write one.

    Examples
    --------
    >>> import os, tempfile
    >>> from minirad import examples
    >>> path = save_graph(examples.figure1(), os.path.join(tempfile.mkdtemp(), "f.json"))
    >>> load_graph(path)
    LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
    >>> load_graph(path, max_bytes=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    path = os.fspath(path)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int, not {max_bytes!r}")
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise FileNotFoundError(error.errno, error.strerror, path) from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{path} is a folder, not a saved LCG")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path} is not a regular file (a pipe, a socket or a device); a "
                         f"saved LCG is a file")
    with open(path, "rb") as f:
        head = f.read(64)
    if head[:4] in _ZIP_MAGIC:
        return _load_archive(path, max_bytes)
    first = head.lstrip(b" \t\r\n")[:1]
    if first not in _JSON_STARTS:   # NUL bytes, say: refused having read 64 bytes, not all
        raise ValueError(f"{path} is not a valid LCG file: it is neither JSON text (UTF-8) "
                         f"nor an .npz archive (it starts with {head[:8]!r})")
    return _load_text(path, max_bytes)


def _strict_json(text: str, fail):
    """Parse JSON refusing NaN and Infinity, numbers beyond float64, integers of more
    than :data:`MAX_DIGITS` digits and nesting deep enough to exhaust the stack;
    ``fail(message)`` raises."""
    def constant(token):
        fail(f"{token} is not allowed; every number must be finite")

    def finite(token):
        number = float(token)
        if not math.isfinite(number):
            fail(f"the number {token:.40} is too large for a float64 (it would read as "
                 f"infinity); every number must be finite")
        return number

    def integer(token):
        digits = len(token.lstrip("-"))
        if digits > MAX_DIGITS:
            fail(f"an integer of {digits} digits is too large for any field of an LCG file")
        return int(token)

    try:
        return json.loads(text, parse_constant=constant, parse_float=finite, parse_int=integer)
    except json.JSONDecodeError as error:
        fail(f"invalid JSON ({error.msg} at line {error.lineno}, column {error.colno})")
    except RecursionError:  # the decoder recurses once per level of nesting
        fail("its JSON is nested too deeply (an LCG file nests a few levels)")


# ------------------------------------------------------------ the text form
def _load_text(path: str, max_bytes: int) -> LCG:
    def fail(message):
        raise ValueError(f"{path} is not a valid LCG file: {message}")

    size = os.path.getsize(path)
    if TEXT_COST * size > max_bytes:
        fail(f"it holds {size:,} bytes of JSON, which take about {TEXT_COST * size:,} bytes "
             f"once parsed, more than max_bytes={max_bytes:,}; pass max_bytes="
             f"{TEXT_COST * size} to read it")
    with open(path, "rb") as f:
        raw = f.read(size + 1)
    if len(raw) > size:
        fail("it grew while it was read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        fail("it is neither JSON text (UTF-8) nor an .npz archive")
    doc = _strict_json(text, fail)
    try:
        return _from_document(doc)
    except (TypeError, ValueError) as error:
        fail(str(error))


def _is_integer(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_real(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _shown(x) -> str:
    """A JSON value for a message, cut short (a huge integer by its size)."""
    if _is_integer(x) and abs(x) >= 10**24:
        return f"an integer of about {int(abs(x).bit_length() * math.log10(2)) + 1} digits"
    text = json.dumps(x)
    return text if len(text) <= 40 else text[:37] + "..."


_COLUMN_TYPES = {"str": lambda x: isinstance(x, str), "int": _is_integer, "float": _is_real,
                 "float|null": lambda x: x is None or _is_real(x),
                 "dtype": lambda x: x in _DTYPES, "record": lambda x: isinstance(x, dict)}


def _column(doc, field: str, kind: str) -> list:
    value = doc[field] if "." not in field else doc["edges"][field.split(".")[1]]
    if not isinstance(value, list):
        raise ValueError(f"field {field!r} must be a list, not {type(value).__name__}")
    fits = _COLUMN_TYPES[kind]
    # one pass over the distinct types first: a million entries have only one or two
    if not all(fits(example) for example in {type(x): x for x in value}.values()) or \
            kind in ("dtype", "record"):
        bad = next((i for i, x in enumerate(value) if not fits(x)), None)
        if bad is not None:
            expected = f"one of {list(_DTYPES)}" if kind == "dtype" else kind
            raise ValueError(f"field {field!r}[{bad}] is {_shown(value[bad])}; expected "
                             f"{expected}")
    return value


def _from_document(doc) -> LCG:
    """The graph of a JSON document, every field checked."""
    if not isinstance(doc, dict):
        raise ValueError(f"the top level is a {type(doc).__name__}, expected an object with "
                         f"\"format\": \"{TEXT_FORMAT}\"")
    if doc.get("format") != TEXT_FORMAT:
        raise ValueError(f"\"format\" is {_shown(doc.get('format'))}, expected "
                         f"\"{TEXT_FORMAT}\"")
    version = doc.get("version")
    if not _is_integer(version) or version not in TEXT_VERSIONS:  # true == 1 and 1.0 == 1
        raise ValueError(f"unsupported schema version {_shown(version)}; this minirad reads "
                         f"versions {' and '.join(map(str, TEXT_VERSIONS))} (integers)")
    required = ("names", "ops", "values", "inputs", "outputs", "edges")
    optional = ("injections", "dtypes") if version == 2 else ()
    missing = [k for k in required if k not in doc]
    if missing:
        raise ValueError(f"missing field(s) {missing}; an LCG file has {list(required)}")
    unknown = sorted(set(doc) - set(required) - set(optional) - {"format", "version"})
    if unknown:
        raise ValueError(f"unknown field(s) {unknown}; a version {version} file has only "
                         f"\"format\", \"version\" and {list(required + optional)}")
    edges = doc["edges"]
    if not isinstance(edges, dict) or set(edges) != {"source", "target", "partial"}:
        raise ValueError("field \"edges\" must be an object with lists \"source\", \"target\" "
                         "and \"partial\"")
    names, ops = _column(doc, "names", "str"), _column(doc, "ops", "str")
    values = _column(doc, "values", "float|null")
    if not len(names) == len(ops) == len(values):
        raise ValueError(f"names, ops and values must have equal lengths; got {len(names)}, "
                         f"{len(ops)} and {len(values)}")
    dtypes = _column(doc, "dtypes", "dtype") if "dtypes" in doc else None
    if dtypes is not None and len(dtypes) != len(names):
        raise ValueError(f"dtypes must have one entry per vertex ({len(names)}); got "
                         f"{len(dtypes)}")
    return LCG(names, _column(doc, "edges.source", "int"), _column(doc, "edges.target", "int"),
               _column(doc, "edges.partial", "float"), _column(doc, "inputs", "int"),
               _column(doc, "outputs", "int"),
               values=[math.nan if x is None else x for x in values], ops=ops,
               dtypes=dtypes, injections=_column(doc, "injections", "record")
               if "injections" in doc else ())


# ---------------------------------------------------------- the archive form
class _Archive:
    """An .npz archive opened for checked reading; :meth:`fail` raises the ValueError
    that names the file, and every field is read through methods that check it."""

    def __init__(self, path: str, max_bytes: int):
        self.path, self.max_bytes = path, max_bytes
        self.keys: dict[str, str] = {}
        self.read: dict[str, np.ndarray] = {}
        declared = _declared_members(path)   # before zipfile reads the whole directory
        if declared is not None and declared * ARRAY_COST > max_bytes:
            self.fail(f"its zip directory lists about {declared:,} arrays, each counted at "
                      f"least {ARRAY_COST:,} bytes of work to read: at least "
                      f"{declared * ARRAY_COST:,} in all, more than max_bytes={max_bytes:,}; "
                      f"pass max_bytes={declared * ARRAY_COST} or more to read it")
        try:
            self.zip = zipfile.ZipFile(path)
            members = self.zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
                struct.error, NotImplementedError, OverflowError) as error:
            self.fail(f"its zip directory is damaged ({error})")
        self.members = {}
        for info in members:
            if info.filename in self.members or not info.filename.endswith(".npy"):
                self.fail(f"the member {info.filename!r} is not one .npy array")
            if info.flag_bits & 1 or info.compress_type not in (zipfile.ZIP_STORED,
                                                                 zipfile.ZIP_DEFLATED):
                self.fail(f"the member {info.filename!r} is encrypted or compressed in a way "
                          f"numpy does not write")
            if info.file_size > MAX_RATIO * info.compress_size + 2**16:
                self.fail(f"the member {info.filename!r} expands from {info.compress_size:,} "
                          f"to {info.file_size:,} bytes (a zip bomb?)")
            self.members[info.filename[:-4]] = info
        manifest = self.members.get("manifest")
        text = manifest.file_size if manifest is not None else 0
        total = sum(max(info.file_size, ARRAY_COST) for info in members) + (TEXT_COST - 1) * text
        if total > max_bytes:
            self.fail(f"its {len(members):,} arrays take {total:,} bytes of work to read (each "
                      f"counted at least {ARRAY_COST:,}, the manifest's {text:,} bytes of JSON "
                      f"{TEXT_COST} times), more than max_bytes={max_bytes:,}; pass "
                      f"max_bytes={total} to read it")
        self.work = total

    def charge(self, nbytes: int, what: str) -> None:
        """Count ``nbytes`` more work against ``max_bytes`` (what building an operator from
        an array takes beyond reading it), refused before that work when past the limit."""
        self.work += nbytes
        if self.work > self.max_bytes:
            self.fail(f"{what} takes {nbytes:,} bytes of work more to build from, "
                      f"{self.work:,} in all so far, more than max_bytes={self.max_bytes:,}; "
                      f"pass max_bytes={self.work} or more to read it")

    def fail(self, what: str):
        raise ValueError(f"{self.path} is not a valid LCG archive: {what}")

    def array(self, name, where: str) -> np.ndarray:
        """The member ``name``, its .npy header checked against its size before it is read."""
        if not isinstance(name, str) or name not in self.members:
            self.fail(f"{where} names the array {_shown(name)}, which the file does not hold")
        if name not in self.read:
            self.read[name] = self._read(self.members[name], where)
        return self.read[name]

    def _read(self, info: zipfile.ZipInfo, where: str) -> np.ndarray:
        fmt = np.lib.format
        try:
            with self.zip.open(info) as stream:
                version = fmt.read_magic(stream)
                header = (fmt.read_array_header_1_0 if version == (1, 0) else
                          fmt.read_array_header_2_0)(stream, max_header_size=10_000)
                shape, fortran, dtype = header
                start = stream.tell()
                if not (isinstance(shape, tuple) and len(shape) <= MAX_DIMENSIONS
                        and all(_is_integer(n) and n >= 0 for n in shape)):
                    self.fail(f"{where}: the array {info.filename!r} declares the shape "
                              f"{shape!r:.60}; a shape is at most {MAX_DIMENSIONS} sizes")
                if dtype.kind not in _ARRAY_KINDS or dtype.hasobject:
                    self.fail(f"{where}: the array {info.filename!r} holds {dtype}; arrays "
                              f"hold numbers or booleans")
                size = math.prod(shape) * dtype.itemsize
                if start + size != info.file_size:
                    self.fail(f"{where}: the array {info.filename!r} declares shape {shape} "
                              f"({size:,} bytes) but holds {info.file_size - start:,}")
                data, done = np.empty(math.prod(shape), dtype), 0
                view = memoryview(data.view(np.uint8))
                while done < size:   # in pieces: zipfile reads into bytes, then copies them
                    got = stream.readinto(view[done:done + 2**20])
                    if not got:
                        self.fail(f"{where}: the array {info.filename!r} is cut short")
                    done += got
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error, struct.error,
                NotImplementedError, RuntimeError, TypeError, ValueError) as error:
            if str(error).startswith(f"{self.path} is not"):
                raise
            self.fail(f"{where}: the array {info.filename!r} cannot be read ({error})")
        data.flags.writeable = False   # read-only to its memory: the LCG keeps it, no copy
        return data.reshape(shape, order="F" if fortran else "C")

    def key(self, saved: str | None) -> str | None:
        """Keys of vertex values stay, and so does the mark of an array rebuilt from the
        shapes; other keys get fresh ones (consistently within the file), so they never
        collide with arrays made in this session."""
        if saved is None or saved.startswith("value:") or saved == O.FROM_SHAPES:
            return saved
        if saved not in self.keys:
            self.keys[saved] = O.fresh_key(saved.split("#")[0])
        return self.keys[saved]

    def field(self, doc, key, kind, where):
        if not isinstance(doc, dict) or key not in doc:
            self.fail(f"{where} lacks the field {key!r}")
        value = doc[key]
        ok = _is_integer(value) if kind is int else isinstance(value, kind)
        if isinstance(value, bool) and kind is not bool:
            ok = False
        if not ok:
            self.fail(f"{where}.{key} is {_shown(value)}; it must be "
                      f"{getattr(kind, '__name__', 'a number')}")
        return value

    def shape(self, value, where) -> tuple[int, ...]:
        """A declared shape: at most 32 non-negative sizes, with fewer entries than the
        archive's byte limit (so that nothing computed from it can be huge)."""
        if not isinstance(value, list) or len(value) > MAX_DIMENSIONS or not all(
                _is_integer(s) and s >= 0 for s in value):
            self.fail(f"{where} is {_shown(value)}; a shape is a list of at most "
                      f"{MAX_DIMENSIONS} non-negative ints")
        if math.prod(value) > self.max_bytes:
            self.fail(f"{where} declares {_shown(math.prod(value))} entries, more than "
                      f"max_bytes={self.max_bytes:,} allows; pass max_bytes="
                      f"{math.prod(value)} or more to read it")
        return tuple(value)


def _declared_members(path: str) -> int | None:
    """The number of members a zip file's directory declares, read from its end records
    alone (zip64 too), or more if the directory is too large for that many (numpy's
    entries take under 256 bytes each, and zipfile reads the whole directory): None when
    the records cannot be found (zipfile then says what is wrong)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 22 - 2**16))
            tail = f.read()
            end = tail.rfind(b"PK\x05\x06")
            if end < 0 or len(tail) - end < 22:
                return None
            count, directory = struct.unpack("<HI", tail[end + 10:end + 16])
            locator = end - 20
            if (count == 0xFFFF or directory == 0xFFFFFFFF) and locator >= 0 and \
                    tail[locator:locator + 4] == b"PK\x06\x07":
                f.seek(struct.unpack("<Q", tail[locator + 8:locator + 16])[0])
                record = f.read(56)
                if len(record) == 56 and record[:4] == b"PK\x06\x06":
                    count, directory = struct.unpack("<QQ", record[32:48])
    except (OSError, struct.error, ValueError, OverflowError):
        return None
    return max(count, directory // 256)


def _load_archive(path: str, max_bytes: int) -> LCG:
    archive = _Archive(path, max_bytes)
    try:
        return _graph(archive)
    finally:
        archive.zip.close()


def _graph(r: _Archive) -> LCG:
    raw = r.array("manifest", "the file") if "manifest" in r.members else None
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        r.fail("it holds no manifest (JSON bytes under the name 'manifest')")
    try:
        text = raw.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        r.fail("its manifest is not UTF-8 text")
    doc = _strict_json(text, lambda message: r.fail(f"its manifest: {message}"))
    if not isinstance(doc, dict) or doc.get("format") != ARCHIVE_FORMAT:
        r.fail(f"its manifest's format is not {ARCHIVE_FORMAT!r}")
    if not _is_integer(doc.get("version")) or doc["version"] != ARCHIVE_VERSION:
        r.fail(f"version {_shown(doc.get('version'))} is not supported (this minirad reads "
               f"version {ARCHIVE_VERSION})")
    vertices = r.field(doc, "vertices", list, "manifest")
    names, ops, shapes, dtypes = [], [], [], []
    for v, record in enumerate(vertices):  # every shape is checked before any array is read
        where = f"vertices[{v}]"
        names.append(r.field(record, "name", str, where))
        ops.append(r.field(record, "op", str, where))
        shapes.append(r.shape(r.field(record, "shape", list, where), f"{where}.shape"))
        dtypes.append(_dtype(r, r.field(record, "dtype", str, where), f"{where}.dtype"))
    values = []
    for v, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        value = r.array(f"value/{v}", f"vertices[{v}]")
        if value.shape != shape or value.dtype != dtype:
            r.fail(f"vertices[{v}] says shape {shape} and dtype {dtype}, but its stored value "
                   f"has shape {value.shape} and dtype {value.dtype}")
        values.append(value)
    sources, targets, labels = [], [], []
    for e, record in enumerate(r.field(doc, "edges", list, "manifest")):
        where = f"edges[{e}]"
        sources.append(r.field(record, "source", int, where))
        targets.append(r.field(record, "target", int, where))
        operator = r.field(record, "operator", dict, where)
        try:
            labels.append(_operator(r, operator, f"{where}.operator"))
        except (TypeError, ValueError, IndexError, OverflowError, ZeroDivisionError) as error:
            # an operator's own check of its parameters (numpy's AxisError is an IndexError)
            if str(error).startswith(f"{r.path} is not"):
                raise
            r.fail(f"{where}: {error}")
    for e, label in enumerate(labels):
        _check_value_keys(r, label, values, f"edges[{e}].operator")
    inputs = r.field(doc, "inputs", list, "manifest")
    outputs = r.field(doc, "outputs", list, "manifest")
    injections = r.field(doc, "injections", list, "manifest")
    if not all(isinstance(x, dict) for x in injections):
        r.fail("injections must be a list of records")
    try:
        return LCG(names, sources, targets, labels, inputs, outputs, values=values, ops=ops,
                   injections=injections)
    except (TypeError, ValueError) as error:
        r.fail(str(error))


def _check_value_keys(r: _Archive, label, values: list, where: str) -> None:
    """An array kept under a vertex's value key is that vertex's value (``value:<vertex>``,
    as :func:`value_key` writes it, of the bits its stored value has) or an array made
    from it (``value:<vertex>:...``, a sample of it, say).  :func:`minirad.graph.memory.memory`
    shares and frees arrays by these keys, so a key that named no vertex
    (``value:abc``, ``value:999999``) would fail there or count other bytes."""
    for kept in getattr(label, "retained", ()):
        for key, bits in ((kept.key, kept.nbits), (kept.recompute_from, kept.source_bits)):
            if key is None or not key.startswith("value:"):
                continue
            number = key[len("value:"):].split(":")[0]
            v = int(number) if number.isascii() and number.isdigit() else -1
            if not 0 <= v < len(values) or not (key + ":").startswith(value_key(v) + ":"):
                r.fail(f"{where} keeps {_shown(key)}, which names no vertex: a vertex's "
                       f"value is kept as 'value:<vertex number>', 0..{len(values) - 1}")
            expected = values[v].size * values[v].dtype.itemsize * 8
            if key == value_key(v) and bits != expected:
                r.fail(f"{where} keeps {key} ({values[v].dtype} of shape "
                       f"{values[v].shape}, {expected:,} bits) as {bits:,} bits")


def _dtype(r: _Archive, name, where) -> np.dtype:
    if name not in _DTYPES:
        r.fail(f"{where} is {_shown(name)}; allowed: {list(_DTYPES)}")
    return np.dtype(name)


def _retained(r: _Archive, value, where) -> tuple:
    if not isinstance(value, list):
        r.fail(f"{where}.retained must be a list")
    out = []
    for i, item in enumerate(value):
        ok = (isinstance(item, list) and len(item) == 5 and isinstance(item[0], str)
              and _is_integer(item[1]) and 0 <= item[1] < 2**63
              and (item[2] is None or isinstance(item[2], str))
              and _is_integer(item[3]) and 0 <= item[3] < 2**63 and isinstance(item[4], str))
        if not ok:
            r.fail(f"{where}.retained[{i}] must be [key, bits, source key or null, source bits, "
                   f"description]")
        out.append(O.Retained(r.key(item[0]), item[1], r.key(item[2]), item[3], item[4]))
    return tuple(out)


class Fields:
    """The parameters and arrays of one operator entry, each read with its check: what a
    reader of an operator kind (:func:`register_reader`) reads its operator from.
    ``fail(message)`` refuses the file."""

    def __init__(self, r: _Archive, doc: dict, where: str):
        self.r, self.where = r, where
        self.params = r.field(doc, "params", dict, where)
        self.names = r.field(doc, "arrays", dict, where)

    def fail(self, message: str):
        self.r.fail(message)

    def key(self, key: str) -> str:
        """A retained array's key, checked."""
        return self.r.key(key)

    def param(self, key, kind):
        return self.r.field(self.params, key, kind, f"{self.where}.params")

    def number(self, key) -> float:
        value = self.param(key, (int, float))
        if abs(value) > sys.float_info.max:  # an int too large for a float64 (floats parse finite)
            self.r.fail(f"{self.where}.params.{key} is {_shown(value)}, too large for a float64")
        return float(value)

    def ints(self, key, least: int = 0) -> int:
        value = self.param(key, int)
        if not least <= value <= 2**31:
            self.r.fail(f"{self.where}.params.{key} is {_shown(value)}; it must lie in "
                        f"{least}..{2**31}")
        return value

    def axis(self, key) -> int:
        value = self.param(key, int)
        if abs(value) > MAX_DIMENSIONS:
            self.r.fail(f"{self.where}.params.{key} is {_shown(value)}; not an axis")
        return value

    def axes(self, key) -> list:
        axes = self.param(key, list)
        if len(axes) > MAX_DIMENSIONS or not all(_is_integer(a) and abs(a) <= MAX_DIMENSIONS
                                                 for a in axes):
            self.r.fail(f"{self.where}.params.{key} must be at most {MAX_DIMENSIONS} axis "
                        f"numbers")
        return axes

    def shape(self, key) -> tuple[int, ...]:
        return self.r.shape(self.param(key, list), f"{self.where}.params.{key}")

    def dtype(self) -> np.dtype:
        return _dtype(self.r, self.param("dtype", str), f"{self.where}.params.dtype")

    def retained(self) -> tuple:
        return _retained(self.r, self.param("retained", list), f"{self.where}.params")

    def array(self, key) -> np.ndarray:
        if key not in self.names:
            self.r.fail(f"{self.where} lacks the array {key!r}")
        return self.r.array(self.names[key], f"{self.where}.arrays.{key}")

    def floats(self, key) -> np.ndarray:
        x = self.array(key)
        if x.dtype.kind != "f" or not np.all(np.isfinite(x)):
            self.r.fail(f"{self.where}.{key} must be a finite float array")
        return x

    def integers(self, key) -> np.ndarray:
        """An integer array, its :data:`INDEX_COST` per entry counted before it is used."""
        x = self.array(key)
        if x.dtype.kind not in "iu":
            self.r.fail(f"{self.where}.{key} must be an integer array")
        self.r.charge(max(0, (INDEX_COST - x.dtype.itemsize) * x.size),
                      f"{self.where}.{key} ({x.size:,} {x.dtype} entries)")
        return x


def _operator(r: _Archive, doc, where: str, depth: int = 0):
    """The label an operator entry describes, built after its fields are checked."""
    if depth > MAX_NESTING:
        r.fail(f"{where} nests operators more than {MAX_NESTING} deep")
    kind = r.field(doc, "kind", str, where)
    if kind in ("composed", "added"):
        key = "parts" if kind == "composed" else "terms"
        items = r.field(doc, key, list, where)
        ops = [_operator(r, r.field({"x": d}, "x", dict, f"{where}.{key}[{i}]"),
                         f"{where}.{key}[{i}]", depth + 1) for i, d in enumerate(items)]
        return O.Composed(ops) if kind == "composed" else O.Added(ops)
    f = Fields(r, doc, where)
    build = _BUILDERS.get(kind)
    if build is None:
        r.fail(f"{where} has the unknown operator kind {_shown(kind)}; known kinds: "
               f"{sorted(_BUILDERS) + ['added', 'composed']}")
    if kind in ("matmul", "outer"):
        return build(f, doc, depth)
    return build(f)


def _number(f: Fields) -> float:
    return f.number("value")


def _matmul(f: Fields, doc: dict, depth: int):
    cls = O.MatMul if doc["kind"] == "matmul" else O.Outer
    gathered = None
    if "gathered" in doc:        # the source and the operator that gathers from it
        gathered = (f.floats("source"),
                    _operator(f.r, f.r.field(doc, "gathered", dict, f.where),
                              f"{f.where}.gathered", depth + 1))
    elif "source" in f.names:    # files written before: the source and int positions
        gathered = (f.floats("source"), f.integers("positions"))
    return cls(f.floats("stored"), f.param("side", str), f.shape("variable_shape"),
               f.retained(), gathered)


def _sparse(f: Fields):
    import scipy.sparse as sp

    shape = f.shape("shape")
    if len(shape) != 2:
        f.r.fail(f"{f.where}.params.shape must have two entries")
    A = sp.csr_array((f.floats("data"), f.integers("indices"), f.integers("indptr")),
                     shape=shape)
    A.check_format(full_check=True)
    return O.SparseMatMul(A, f.param("side", str), f.shape("variable_shape"), f.retained())


def _patches(cls):
    def build(f: Fields):
        data = f.floats("values" if cls is SampledPatches else "kept")
        gather = O.Im2Col(f.shape("image_shape"), f.shape("kernel"), 1, f.ints("padding"),
                          data.dtype)
        middle = (f.integers("picks"), data) if cls is SampledPatches else (
            data, f.floats("R"))
        return cls(gather, *middle, f.number("scale"), f.shape("variable_shape"),
                   f.param("method", str), f.retained())
    return build


def _projection(f: Fields):
    def optional_axis(key):
        value = f.params.get(key)
        if value is not None and not (_is_integer(value) and abs(value) <= MAX_DIMENSIONS):
            f.r.fail(f"{f.where}.params.{key} must be an axis number or null")
        return value
    return O.Projection(f.shape("shape"), f.floats("R"), optional_axis("axis"),
                        optional_axis("batch_axis"), f.param("method", str))


def _einsum(f: Fields):
    subscripts = f.param("subscripts", str)
    count = subscripts.count(",")
    if count >= MAX_OPERANDS:
        f.r.fail(f"{f.where}.params.subscripts names more than {MAX_OPERANDS} operands")
    return Einsum(subscripts, [f.floats(f"operand{i}") for i in range(count)],
                  f.ints("position"), f.shape("variable_shape"), f.dtype(), f.retained())


def _mask(f: Fields):
    mask = f.array("mask")
    if mask.dtype != np.bool_:
        f.r.fail(f"{f.where}.mask must be a boolean array")
    return O.Mask(mask, f.dtype(), f.retained())


_BUILDERS = {
    "number": _number,
    "identity": lambda f: O.Identity(f.shape("shape"), f.dtype()),
    "diagonal": lambda f: O.Diagonal(f.floats("d"), f.shape("shape"), f.retained()),
    "mask": _mask,
    "dense": lambda f: O.Dense(f.floats("matrix"), f.shape("out_shape"), f.shape("in_shape"),
                               f.retained()),
    "softmax": lambda f: O.Softmax(f.floats("p"), f.axis("axis"), f.retained()),
    "matmul": _matmul,
    "outer": _matmul,
    "sparse": _sparse,
    "injected": lambda f: O.InjectedMatMul(f.floats("stored"), f.param("side", str),
                                           f.shape("variable_shape"), f.ints("k", 1),
                                           f.param("method", str), f.retained()),
    "projected": lambda f: O.ProjectedMatMul(f.floats("kept"), f.floats("R"),
                                             f.param("side", str), f.shape("variable_shape"),
                                             f.number("scale"), f.param("method", str),
                                             f.retained()),
    "sampled_patches": _patches(SampledPatches),
    "projected_patches": _patches(ProjectedPatches),
    "projection": _projection,
    "sum": lambda f: O.SumAxes(f.shape("in_shape"), f.axes("axes"), f.param("keepdims", bool),
                               f.number("scale"), f.dtype()),
    "broadcast": lambda f: O.Broadcast(f.shape("in_shape"), f.shape("out_shape"), f.dtype()),
    "reshape": lambda f: O.Reshape(f.shape("in_shape"), f.shape("out_shape"), f.dtype()),
    "transpose": lambda f: O.Transpose(f.shape("in_shape"), f.axes("axes"), f.dtype()),
    "im2col": lambda f: O.Im2Col(f.shape("in_shape"), f.shape("kernel"), f.ints("stride", 1),
                                 f.ints("padding"), f.dtype()),
    "index": lambda f: O.Gather(f.shape("in_shape"), f.integers("positions"), f.dtype(),
                                f.retained() if "retained" in f.params else None),
    "cumsum": lambda f: O.CumSum(f.shape("shape"), f.axis("axis"), f.dtype()),
    "einsum": _einsum,
    "concatenate": lambda f: O.Embed(f.shape("out_shape"), f.integers("positions"), f.dtype()),
}


def register_reader(kind: str, read) -> None:
    """Say how to read an operator of ``kind`` that a module above ``graph/`` defines
    (:mod:`minirad.implicit.solves` registers its solves): ``read(fields)`` gets a
    :class:`Fields` and returns the operator.  The kinds of :mod:`minirad.graph.operators`
    are read here.  Saving needs nothing: every operator describes itself (``spec()``)."""
    if kind in _BUILDERS and _BUILDERS[kind] is not read:
        raise ValueError(f"the operator kind {kind!r} is already read otherwise")
    _BUILDERS[kind] = read
