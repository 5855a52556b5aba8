"""Checks of the nn references that do not need TVM: identities the references must obey."""
import numpy as np
import pytest

from fuzz.catalogue import nn


@pytest.mark.parametrize("groups,strides,dil,pb,pa", [
    (1, [1, 1], [1, 1], [0, 0], [0, 0]),
    (2, [2, 3], [1, 2], [1, 0], [0, 2]),
    (4, [3, 1], [2, 1], [2, 1], [1, 1]),
])
def test_conv_transpose_is_adjoint_of_conv(groups, strides, dil, pb, pa):
    # <conv(x, w), y> == <x, conv_transpose(y, w)> when conv_transpose's output has x's shape
    # (output_padding makes up the rows conv's floor division dropped).
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((8, 4 // groups, 2, 3))
    y0 = nn._conv_nd(x, w, strides, pb, pa, dil, groups)
    y = rng.standard_normal(y0.shape)
    # conv's weight (O, C/groups, ...) is read as conv_transpose's (in=O, out/groups=C/groups).
    opad = [n + p0 + p1 - ((o - 1) * s + d * (k - 1) + 1)
            for n, p0, p1, o, s, d, k in zip(x.shape[2:], pb, pa, y.shape[2:], strides, dil,
                                             w.shape[2:])]
    assert all(0 <= o < s for o, s in zip(opad, strides))
    xt = nn._conv_transpose_nd(y, w, strides, pb, pa, dil, groups, opad)
    assert xt.shape == x.shape
    assert np.isclose((y0 * y).sum(), (x * xt).sum())


def test_pool_ceil_mode_and_divisors():
    x = np.arange(1.0, 6.0).reshape(1, 1, 5)
    # ceil mode: windows [0,1] [2,3] [4,(5)]; a fourth would start in the padding only.
    assert nn._pool_out(5, 2, 2, 1, 0, 1, True) == 3
    avg = nn._pool_nd(x, "avg", [2], [2], [1], [0], [1], True, True)
    assert avg.tolist() == [[[1.5, 3.5, 2.5]]]     # padding counted, ceil's extra tail not
    avg = nn._pool_nd(x, "avg", [2], [2], [1], [0], [0], True, True)
    assert avg.tolist() == [[[1.5, 3.5, 5.0]]]
    avg = nn._pool_nd(x, "avg", [3], [1], [1], [1], [1], False, False)
    assert avg.tolist() == [[[1.5, 2.0, 3.0, 4.0, 4.5]]]
    mx = nn._pool_nd(x, "max", [2], [1], [2], [1], [1], False, False)
    assert mx.tolist() == [[[2.0, 3.0, 4.0, 5.0, 4.0]]]
