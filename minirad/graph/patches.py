"""The kernel edge of a convolution whose stored image was sampled or projected (RAD on
conv layers).

A traced convolution is ``kernels @ im2col(image)`` (:func:`minirad.tracing.rules.conv2d`),
and the edge from the kernels keeps the image for the kernel gradient
``adjoint @ patches^T``.  RAD (paper Sec. 4.2, Fig. 4) keeps only ``k`` numbers
per row of the image (a row: one example, or one example and channel):
:class:`SampledPatches` keeps ``k`` sampled entries, scaled by ``d/k``;
:class:`ProjectedPatches` keeps ``k`` Rademacher projections.

* The reference, for both: :meth:`~SampledPatches.image` is the dense estimate of
  the image, :meth:`~SampledPatches.patches` its im2col patches, and the edge is
  multiplication by those patches, the :class:`~minirad.graph.operators.InjectedMatMul`
  that storing them would give.
* The fast paths, ``apply_transpose`` (the reverse sweep's step), never gather
  those patches, which are ``kh * kw`` times the image.  A projected image is
  rebuilt (``kept R^T / k``), a sampled one scattered, and the kernel gradient is
  ``kh * kw`` matrix products of the adjoint with shifted views of the flat padded
  images (the patch entry at offset (i, j) of output pixel t is the image entry at
  t + i * (padded width) + j).  With few samples (below :data:`WINDOWS_BELOW` of
  the padded image) the sampled edge instead reads windows: a kept entry at pixel
  (h, w) meets, for kernel offset (i, j), the adjoint at output pixel
  (h + padding - i, w + padding - j), so the kernel gradient is, summed over the
  samples, each value times the ``kh x kw`` window of the adjoint around its
  pixel.  Both work on half a megabyte at a time, so what they read is still in
  cache when it is summed.

Only the kept values (and, unless the caller says otherwise, their indices) are
retained; the image and patches exist only when the reference is asked for.

>>> import numpy as np
>>> from minirad.graph.operators import Im2Col, MatMul
>>> gather = Im2Col((1, 1, 3, 3), (2, 2), padding=1)      # one 3x3 image, 2x2 kernel
>>> op = SampledPatches(gather, picks=[[4, 4, 0]], values=[[5.0, 5.0, 1.0]], scale=3.0,
...                     variable_shape=(1, 4))             # pixel 4 drawn twice, pixel 0 once
>>> op.image()[0, 0]                                       # (d/k) x counts x value
array([[ 3.,  0.,  0.],
       [ 0., 30.,  0.],
       [ 0.,  0.,  0.]])
>>> y = np.arange(16.0).reshape(1, 1, 16)                  # an adjoint at the 4x4 outputs
>>> op.apply_transpose(y)                                  # the fast path
array([[315., 282., 183., 150.]])
>>> MatMul(op.patches(), "right", (1, 4)).apply_transpose(y)   # the reference
array([[315., 282., 183., 150.]])
>>> op.retained_bytes                                      # 3 floats, 3 one-byte indices
27.0
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .operators import Im2Col, MatMul, Operator, Retained, fresh_key, index_bits, retained_spec

__all__ = ["BLOCK_BYTES", "ProjectedPatches", "SampledPatches", "WINDOWS_BELOW"]

#: SampledPatches gathers windows when its samples are fewer than this fraction of the
#: padded image's entries, and otherwise scatters them into the image and runs the
#: shifted products (on the ConvNet the windows took 0.7x the products' time at a
#: fraction f = 0.05 of each row sampled, 1.2x at f = 0.1, 3x at f = 0.3)
WINDOWS_BELOW = 0.05

#: about how many bytes the fast paths work on at a time, to stay in cache (the 2-core
#: test machine, 2 MB of L2 per core: the ConvNet's kernel gradients took least time
#: between 256 kB and 1 MB, and twice as long at 2 MB)
BLOCK_BYTES = 1 << 19


def _shifted_products(im2col: Im2Col, image: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """The kernel gradients ``ys @ im2col(image)^T`` (n, F, C*kh*kw) of a stack of n
    adjoints ``ys`` (n, B, F, Ho*Wo), without forming the patches: with the images padded
    and laid end to end, the patch entry at kernel offset (i, j) of output pixel t is the
    image entry at t + i * (padded width) + j, so each offset is one matrix product of
    the adjoint with a shifted slice (a view) of the flat images."""
    n = len(ys)
    b, c, h, w = im2col.in_shape
    (kh, kw), pad = im2col.kernel, im2col.padding
    ho, wo = im2col.pixels
    f = ys.shape[2]
    dtype = np.result_type(ys.dtype, image.dtype)
    hp, wp = h + 2 * pad, w + 2 * pad
    pixels = hp * wp                     # per padded image; ho <= hp and wo <= wp
    # the padded images, channel by channel, laid end to end (C, B * hp * wp), with
    # room after the last image for the largest shift
    reach = (kh - 1) * wp + kw - 1
    flat = np.zeros((c, b * pixels + reach), dtype)
    flat[:, :b * pixels].reshape(c, b, hp, wp)[:, :, pad:pad + h, pad:pad + w] = (
        image.transpose(1, 0, 2, 3))
    # the adjoint on the same grid, zero outside the ho x wo outputs of each image, so
    # that shifted products never mix two images
    adjoint = np.zeros((n * f, b, hp, wp), dtype)
    adjoint[:, :, :ho, :wo] = ys.reshape(n, b, f, ho, wo).transpose(0, 2, 1, 3, 4).reshape(
        n * f, b, ho, wo)
    adjoint = adjoint.reshape(n * f, -1)
    out = np.zeros((kh, kw, n * f, c), dtype)
    step = max(1, BLOCK_BYTES // ((n * f + c) * pixels * flat.itemsize)) * pixels
    for lo in range(0, b * pixels, step):
        hi = min(lo + step, b * pixels)
        block = adjoint[:, lo:hi]
        for i in range(kh):
            for j in range(kw):
                shift = lo + i * wp + j
                out[i, j] += block @ flat[:, shift:shift + hi - lo].T
    # (kh, kw, n*F, C) -> (n, F, C*kh*kw)
    return out.reshape(kh, kw, n, f, c).transpose(2, 3, 4, 0, 1).reshape(n, f, -1)


class _ReducedPatches(Operator):
    """What the two edge labels share: the kernel edge ``kernels -> kernels @ patches``
    of a stride-1 convolution (in_shape ``(F, C*kh*kw)``, out_shape ``(B, F, Ho*Wo)``),
    the image seen as ``rows`` rows of ``d`` entries, the reference (:meth:`image`,
    :meth:`patches`, and ``apply`` by them)."""

    def __init__(self, im2col, rows: int, variable_shape, dtype, retained):
        if not isinstance(im2col, Im2Col):
            raise TypeError(f"im2col must be a minirad.graph.operators.Im2Col, not "
                            f"{type(im2col).__name__}")
        if im2col.stride != 1:
            raise ValueError(f"{type(self).__name__} stands for stride-1 convolutions, not "
                             f"stride {im2col.stride}")
        size = im2col.in_size
        if size % rows:
            raise ValueError(f"{rows} rows do not divide the image {im2col.in_shape} "
                             f"({size} entries) into equal rows")
        b, c = im2col.in_shape[:2]
        kernel_entries = c * im2col.kernel[0] * im2col.kernel[1]
        variable_shape = tuple(int(s) for s in variable_shape)
        if len(variable_shape) != 2 or variable_shape[1] != kernel_entries:
            raise ValueError(f"the variable (the kernels) must have shape (F, {kernel_entries}) "
                             f"for patches of {im2col.out_shape}, not {variable_shape}")
        super().__init__((b, variable_shape[0], im2col.out_shape[2]), variable_shape, dtype,
                         retained)
        self.im2col, self.d = im2col, size // rows

    def image(self) -> np.ndarray:
        """The dense estimate of the image (B, C, H, W) that the edge stands for."""
        raise NotImplementedError

    def patches(self) -> np.ndarray:
        """The im2col patches of :meth:`image`: the operand the edge multiplies by."""
        return self.im2col.apply(self.image())

    def _apply(self, xs):
        # the reference: multiplication by the patches (the forward direction is not the
        # reverse sweep's, so it is not worth a fast path)
        return MatMul(self.patches(), "right", self.in_shape, ())._apply(xs)

    def _common_spec(self) -> dict:
        return {"image_shape": list(self.im2col.in_shape), "kernel": list(self.im2col.kernel),
                "padding": self.im2col.padding, "variable_shape": list(self.in_shape),
                "scale": self.scale, "method": self.method, "retained": retained_spec(self)}

    def label(self):
        return f"outer, {'sampled' if self.method == 'sample' else 'projected'} k={self.k}"


def _rows_by_k(array, name: str) -> np.ndarray:
    """``array`` as the non-empty (rows, k) float array an edge keeps, or ValueError."""
    array = np.asarray(array)
    if array.ndim != 2 or not array.size or not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"{name} must be a non-empty (rows, k) float array, not "
                         f"{array.dtype} of shape {array.shape}")
    return array


def _checked_scale(scale) -> float:
    scale = float(scale)
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite, not {scale}")
    return scale


class SampledPatches(_ReducedPatches):
    """The kernel edge of a stride-1 convolution (``im2col``) whose image was *sampled*.

    The image (B, C, H, W) is seen as ``rows`` rows of ``d`` entries (``rows = B*C``
    samples per example and channel, ``rows = B`` per example); ``picks`` (rows, k),
    or (1, k) shared by every row, are the drawn indices into a row (with
    replacement), ``values`` (rows, k) the image entries there, ``scale`` the
    factor ``d/k``.  ``method`` names the injection for labels and files.
    ``retained`` defaults to the values and their indices.
    """

    kind = "sampled_patches"

    def __init__(self, im2col, picks, values, scale, variable_shape, method: str = "sample",
                 retained=None):
        values, picks = _rows_by_k(values, "values"), np.asarray(picks)
        rows, k = values.shape
        super().__init__(im2col, rows, variable_shape, values.dtype, ())
        d = self.d     # the retained record (below) needs d for the width of an index
        if not np.issubdtype(picks.dtype, np.integer) or picks.shape not in ((rows, k), (1, k)):
            raise ValueError(f"picks must be integer indices of shape ({rows}, {k}) or (1, {k}), "
                             f"not {picks.dtype} of shape {picks.shape}")
        if picks.min() < 0 or picks.max() >= d:
            raise ValueError(f"picks must be indices 0..{d - 1} into a row of the image; got "
                             f"values from {picks.min()} to {picks.max()}")
        if retained is None:
            bits = values.size * values.dtype.itemsize * 8 + picks.size * index_bits(d)
            retained = (Retained(fresh_key("sampled"), bits,
                                 what=f"{k} sampled image entries per row and their indices"),)
        self._retained = tuple(retained)
        self.picks, self.values, self.scale = picks, values, _checked_scale(scale)
        self.method, self.k = str(method), k

    @property
    def flops(self):
        kh, kw = self.im2col.kernel
        return self.values.size * kh * kw * self.in_shape[0]

    # ---------------------------------------------------------- the reference
    def _flat(self) -> np.ndarray:
        """The flat image index of every sample, in row order (rows, k)."""
        rows = len(self.values)
        return np.arange(rows)[:, None] * self.d + np.broadcast_to(self.picks, self.values.shape)

    def image(self) -> np.ndarray:
        """The dense estimate of the image: ``scale x count x value`` where drawn, else 0."""
        flat = self._flat().ravel()
        size = self.im2col.in_size
        image = np.zeros(size, self.dtype)
        image[flat] = self.values.ravel()
        counts = np.bincount(flat, minlength=size)
        return (image * (counts * self.scale).astype(self.dtype)).reshape(self.im2col.in_shape)

    # ---------------------------------------------------------- the fast paths
    def _transpose(self, ys):
        b, c, h, w = self.im2col.in_shape
        pad = self.im2col.padding
        if self.values.size < WINDOWS_BELOW * b * c * (h + 2 * pad) * (w + 2 * pad):
            return self._windows(ys)
        return _shifted_products(self.im2col, self.image(), ys)

    def _windows(self, ys):
        """The kernel gradients, each sample's value times its window of the adjoint."""
        n = len(ys)
        b, c, h, w = self.im2col.in_shape
        (kh, kw), pad = self.im2col.kernel, self.im2col.padding
        ho, wo = self.im2col.pixels
        f = self.in_shape[0]
        dtype = np.result_type(ys.dtype, self.dtype)
        # the adjoint as (B, Hb, Wb, n*F), with kh-1 (kw-1) zero rows (columns) on each side
        # so that every window a sample reads lies inside; the n*F numbers of a pixel together
        hb, wb, width = ho + 2 * (kh - 1), wo + 2 * (kw - 1), n * f
        big = np.zeros((b, hb, wb, width), dtype)
        big[:, kh - 1:kh - 1 + ho, kw - 1:kw - 1 + wo] = (
            ys.reshape(n, b, f, ho, wo).transpose(1, 3, 4, 0, 2).reshape(b, ho, wo, width))
        # run t: the kw pixels t, t+1, ..., t+kw-1 of a row of ``big``, contiguous
        runs = as_strided(big, shape=(big.size // width - kw + 1, kw * width),
                          strides=(width * big.itemsize, big.itemsize), writeable=False)
        # a sample at (b, y, x) meets offset (i, j) at output pixel (y + pad - i, x + pad - j):
        # row y + pad + kh-1 - i of big, the run starting at x + pad, read backwards in j
        flat = self._flat().ravel()
        batch, rest = np.divmod(flat, c * h * w)
        channel, pixel = np.divmod(rest, h * w)
        y, x = np.divmod(pixel, w)
        # the samples channel by channel (C passes: cheaper than a sort for a few channels)
        order = np.concatenate([np.flatnonzero(channel == ch) for ch in range(c)])
        first = ((batch * hb + y + pad + kh - 1) * wb + x + pad)[order]
        starts = first[:, None] - np.arange(kh) * wb           # (samples, kh): one run per i
        weights = (self.values.ravel() * self.values.dtype.type(self.scale))[order]
        bounds = np.searchsorted(channel[order], np.arange(c + 1))
        out = np.zeros((c, kh * kw * width), dtype)
        block = max(1, BLOCK_BYTES // (kh * kw * width * big.itemsize))
        for ch in range(c):
            for lo in range(bounds[ch], bounds[ch + 1], block):
                hi = min(lo + block, bounds[ch + 1])
                windows = runs[starts[lo:hi]].reshape(hi - lo, -1)
                out[ch] += weights[lo:hi] @ windows
        # (C, kh, kw reversed, n, F) -> (n, F, C*kh*kw)
        out = out.reshape(c, kh, kw, n, f)[:, :, ::-1]
        return out.transpose(3, 4, 0, 1, 2).reshape(n, f, -1)

    # ---------------------------------------------------------------- saving
    def spec(self):
        return self._common_spec(), {"picks": self.picks, "values": self.values}


class ProjectedPatches(_ReducedPatches):
    """The kernel edge of a stride-1 convolution (``im2col``) whose image was *projected*:
    each of its ``rows`` rows of ``d`` entries replaced by ``x R R^T scale`` with one
    (d, k) matrix ``R`` (Rademacher signs, ``scale = 1/k``), keeping only ``kept = x R``
    (rows, k).  ``R`` is held for speed but, as in the paper, counts nothing: it is
    regenerated from a seed.  ``retained`` defaults to ``kept``.

    A projected row is dense, so the reverse step rebuilds the image (``kept R^T scale``,
    1/25 of a 5x5 kernel's patches) but not its patches (:func:`_shifted_products`).

    >>> from minirad.graph.operators import MatMul
    >>> gather = Im2Col((1, 1, 3, 3), (2, 2), padding=1)
    >>> image = np.arange(9.0).reshape(1, 1, 3, 3)
    >>> R = np.array([[1.0, -1.0]] * 4 + [[1.0, 1.0]] * 5)   # (9, 2): one row of 9, k = 2
    >>> op = ProjectedPatches.project(gather, image, R, 1 / 2, (1, 4))
    >>> op.kept, op.retained_bytes                          # image R: two floats kept
    (array([[36., 24.]]), 16.0)
    >>> y = np.arange(16.0).reshape(1, 1, 16)
    >>> op.apply_transpose(y), MatMul(op.patches(), "right", (1, 4)).apply_transpose(y)
    (array([[2052., 1878., 1356., 1182.]]), array([[2052., 1878., 1356., 1182.]]))
    """

    kind = "projected_patches"

    def __init__(self, im2col, kept, R, scale, variable_shape, method: str = "rademacher",
                 retained=None):
        kept, R = _rows_by_k(kept, "kept"), np.asarray(R)
        rows, k = kept.shape
        if retained is None:
            retained = (Retained(fresh_key("projected"), kept.size * kept.dtype.itemsize * 8,
                                 what=f"{k} projections of each image row"),)
        super().__init__(im2col, rows, variable_shape, kept.dtype, retained)
        if R.shape != (self.d, k) or not np.issubdtype(R.dtype, np.floating):
            raise ValueError(f"R must be a ({self.d}, {k}) float matrix (a row's length by "
                             f"kept's width), not {R.dtype} of shape {R.shape}")
        self.kept, self.R = kept, R.astype(kept.dtype, copy=False)
        self.scale, self.method, self.k = _checked_scale(scale), str(method), k

    @classmethod
    def project(cls, im2col, image, R, scale, variable_shape, method: str = "rademacher",
                retained=None):
        """The operator for ``image`` (B, C, H, W) projected row by row: its rows are
        ``R.shape[0]`` entries long; computes ``kept = rows @ R`` in the image's type."""
        image, R = np.asarray(image), np.asarray(R)
        if R.ndim != 2 or image.size % max(R.shape[0], 1):
            raise ValueError(f"R must be (d, k) with d dividing the image's {image.size} "
                             f"entries into rows, not of shape {R.shape}")
        R = R.astype(image.dtype)
        return cls(im2col, image.reshape(-1, R.shape[0]) @ R, R, scale, variable_shape, method,
                   retained)

    @property
    def flops(self):
        # the image rebuilt (rows x d x k), then F x C x kh x kw per padded output pixel
        b, c, h, w = self.im2col.in_shape
        kh, kw = self.im2col.kernel
        p = self.im2col.padding
        return (self.kept.size * self.d
                + self.in_shape[0] * c * kh * kw * b * (h + 2 * p) * (w + 2 * p))

    def image(self) -> np.ndarray:
        """The dense estimate ``kept R^T scale``, row by row, as an image."""
        rows = self.kept @ self.R.T
        return (rows * rows.dtype.type(self.scale)).reshape(self.im2col.in_shape)

    def _transpose(self, ys):
        return _shifted_products(self.im2col, self.image(), ys)

    def spec(self):
        return self._common_spec(), {"kept": self.kept, "R": self.R}
