"""The kernel edge of a convolution whose stored image was sampled (RAD on conv layers).

A traced convolution is ``kernels @ im2col(image)`` (:func:`minirad.array_trace.conv2d`),
and the edge from the kernels keeps the image for the kernel gradient
``adjoint @ patches^T``.  RAD (paper Sec. 4.2, Fig. 4) keeps only ``k`` sampled
entries of each row of the image (a row: one example, or one example and
channel), scaled by ``d/k``.  :class:`SampledPatches` is that edge label.

* The reference: :meth:`SampledPatches.image` is the dense estimate of the image
  (zero where nothing was drawn, repeats adding up), :meth:`SampledPatches.patches`
  its im2col patches, and the edge is multiplication by those patches, the
  :class:`~minirad.operators.InjectedMatMul` that storing them would give.
* The fast path, ``apply_transpose`` (the reverse sweep's step): a kept entry at
  pixel (h, w) of channel c meets, for kernel offset (i, j), the adjoint at output
  pixel (h + padding - i, w + padding - j).  So the kernel gradient is, summed over
  the samples, each value times the ``kh x kw`` window of the adjoint around its
  pixel: ``k`` windows gathered per row instead of the image rebuilt and its whole
  patch matrix gathered again.  The windows are gathered about a megabyte at a
  time, so they are still in cache when they are summed.

Only the kept values (and, unless the caller says otherwise, their indices) are
retained; the image and patches exist only when the reference is asked for.

>>> import numpy as np
>>> from minirad.operators import Im2Col, MatMul
>>> gather = Im2Col((1, 1, 3, 3), (2, 2), padding=1)      # one 3x3 image, 2x2 kernel
>>> op = SampledPatches(gather, picks=[[4, 4, 0]], values=[[5.0, 5.0, 1.0]], scale=3.0,
...                     variable_shape=(1, 4))             # pixel 4 drawn twice, pixel 0 once
>>> op.image()[0, 0]                                       # (d/k) x counts x value
array([[ 3.,  0.,  0.],
       [ 0., 30.,  0.],
       [ 0.,  0.,  0.]])
>>> y = np.arange(16.0).reshape(1, 1, 16)                  # an adjoint at the 4x4 outputs
>>> op.apply_transpose(y)                                  # windows of y around the samples
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

from .operators import Im2Col, MatMul, Operator, Retained, fresh_key

__all__ = ["BLOCK_BYTES", "SampledPatches"]

#: about how many bytes of adjoint windows are gathered at a time (to stay in cache)
BLOCK_BYTES = 1 << 20


def _index_bits(d: int) -> int:
    """Bits of the smallest unsigned integer that numbers d entries."""
    return next(b for b in (8, 16, 32, 64) if d <= 2 ** b)


class SampledPatches(Operator):
    """``kernels -> kernels @ patches``: a convolution's kernel edge (in_shape
    ``(F, C*kh*kw)``, out_shape ``(B, F, Ho*Wo)``) with the patches gathered by
    ``im2col`` (stride 1) from a *sampled* image.

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
        if not isinstance(im2col, Im2Col):
            raise TypeError(f"im2col must be a minirad.operators.Im2Col, not "
                            f"{type(im2col).__name__}")
        if im2col.stride != 1:
            raise ValueError(f"SampledPatches reads windows of stride 1, not stride "
                             f"{im2col.stride}")
        values, picks = np.asarray(values), np.asarray(picks)
        if values.ndim != 2 or not values.size or not np.issubdtype(values.dtype, np.floating):
            raise ValueError(f"values must be a non-empty (rows, k) float array, not "
                             f"{values.dtype} of shape {values.shape}")
        rows, k = values.shape
        size = im2col.in_size
        if size % rows:
            raise ValueError(f"{rows} rows of values do not divide the image "
                             f"{im2col.in_shape} ({size} entries) into equal rows")
        d = size // rows
        if not np.issubdtype(picks.dtype, np.integer) or picks.shape not in ((rows, k), (1, k)):
            raise ValueError(f"picks must be integer indices of shape ({rows}, {k}) or (1, {k}), "
                             f"not {picks.dtype} of shape {picks.shape}")
        if picks.min() < 0 or picks.max() >= d:
            raise ValueError(f"picks must be indices 0..{d - 1} into a row of the image; got "
                             f"values from {picks.min()} to {picks.max()}")
        scale = float(scale)
        if not math.isfinite(scale):
            raise ValueError(f"scale must be finite, not {scale}")
        b, c = im2col.in_shape[:2]
        kernel_entries = c * im2col.kernel[0] * im2col.kernel[1]
        variable_shape = tuple(int(s) for s in variable_shape)
        if len(variable_shape) != 2 or variable_shape[1] != kernel_entries:
            raise ValueError(f"the variable (the kernels) must have shape (F, {kernel_entries}) "
                             f"for patches of {im2col.out_shape}, not {variable_shape}")
        if retained is None:
            bits = values.size * values.dtype.itemsize * 8 + picks.size * _index_bits(d)
            retained = (Retained(fresh_key("sampled"), bits,
                                 what=f"{k} sampled image entries per row and their indices"),)
        out_shape = (b, variable_shape[0], im2col.out_shape[2])
        super().__init__(out_shape, variable_shape, values.dtype, retained)
        self.im2col, self.picks, self.values, self.scale = im2col, picks, values, scale
        self.method, self.k, self.d = str(method), k, d

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

    def patches(self) -> np.ndarray:
        """The im2col patches of :meth:`image`: the operand the edge multiplies by."""
        return self.im2col.apply(self.image())

    def _reference(self) -> MatMul:
        return MatMul(self.patches(), "right", self.in_shape, ())

    def _apply(self, xs):
        return self._reference()._apply(xs)

    # ----------------------------------------------------------- the fast path
    def _transpose(self, ys):
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
        order = np.argsort(channel, kind="stable")          # the samples channel by channel
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
        params = {"image_shape": list(self.im2col.in_shape), "kernel": list(self.im2col.kernel),
                  "padding": self.im2col.padding, "variable_shape": list(self.in_shape),
                  "scale": self.scale, "method": self.method,
                  "retained": [[r.key, r.nbits, r.recompute_from, r.source_bits, r.what]
                               for r in self.retained]}
        return params, {"picks": self.picks, "values": self.values}

    def label(self):
        return f"outer, {'sampled' if self.method == 'sample' else 'projected'} k={self.k}"
