"""Checks of the vision references that do not need TVM: hand-worked cases of TOPI's
roi_align and roi_pool semantics."""
import numpy as np
import pytest

from fuzz.catalogue.vision import RoiAlign, RoiPool

ALIGN = RoiAlign("relax.vision.roi_align")
POOL = RoiPool("relax.vision.roi_pool")


def _align(x, rois, **kw):
    attrs = dict(rois=rois, rois_dtype="float32", pooled_size=[1, 1], spatial_scale=1.0,
                 sample_ratio=1, aligned=True, layout="NCHW", mode="avg")
    attrs.update(kw)
    return ALIGN.reference([x], attrs)


def test_roi_align_bilinear_and_outside():
    x = np.arange(12.0).reshape(1, 1, 3, 4)          # x[y, w] = 4y + w: bilinear is exact
    # one sample at the roi's centre (y 1.25, x 1.5) reads 4 * y + x
    out = _align(x, [[0, 1.0, 1.0, 2.0, 1.5]])       # x in [1, 2], y in [1, 1.5]
    assert out.shape == (1, 1, 1, 1)
    assert out[0, 0, 0, 0] == pytest.approx(4 * 1.25 + 1.5)
    # a sample past the last row (2) up to H = 3 is clamped onto it; past H it is 0
    assert _align(x, [[0, 0.0, 2.5, 0.0, 3.0]])[0, 0, 0, 0] == pytest.approx(8.0)
    assert _align(x, [[0, 0.0, 3.0, 0.0, 3.5]])[0, 0, 0, 0] == 0.0
    # below -1 is 0, between -1 and 0 is clamped to row 0
    assert _align(x, [[0, 1.0, -0.75, 1.0, -0.25]])[0, 0, 0, 0] == pytest.approx(1.0)
    assert _align(x, [[0, 1.0, -2.0, 1.0, -1.5]])[0, 0, 0, 0] == 0.0


def test_roi_align_grid_unaligned_and_max():
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    # unaligned: a zero-size roi is stretched to 1x1 and sampled at its grid's centres
    out = _align(x, [[0, 1.0, 1.0, 1.0, 1.0]], aligned=False, sample_ratio=2)
    ys, xs = 1 + np.array([0.25, 0.75]), 1 + np.array([0.25, 0.75])
    assert out[0, 0, 0, 0] == pytest.approx(np.mean([4 * y + w for y in ys for w in xs]))
    out = _align(x, [[0, 1.0, 1.0, 1.0, 1.0]], aligned=False, sample_ratio=2, mode="max")
    assert out[0, 0, 0, 0] == pytest.approx(4 * 1.75 + 1.75)
    # adaptive grid: ceil(roi / pooled) samples per side; NHWC is the same numbers moved
    a = _align(x, [[0, 0.0, 0.0, 3.0, 2.0]], pooled_size=[2, 1], sample_ratio=-1)
    b = _align(x.transpose(0, 2, 3, 1), [[0, 0.0, 0.0, 3.0, 2.0]], pooled_size=[2, 1],
               sample_ratio=-1, layout="NHWC")
    assert np.array_equal(a.transpose(0, 2, 3, 1), b)
    assert a[0, 0, :, 0] == pytest.approx([4 * 0.5 + 1.5, 4 * 1.5 + 1.5])


def test_roi_pool_rounding_and_empty_bins():
    x = np.arange(20.0).reshape(1, 1, 4, 5)
    attrs = dict(rois_dtype="float32", pooled_size=[1, 1], spatial_scale=1.0, layout="NCHW")
    # corners round half up (floor(v + 0.5)): 0.5 -> 1, 2.5 -> 3, -0.5 -> 0
    out = POOL.reference([x], dict(attrs, rois=[[0, 0.5, -0.5, 2.5, 0.5]]))
    assert out[0, 0, 0, 0] == x[0, 0, 0:2, 1:4].max()
    # a roi entirely past the image leaves every bin empty: 0
    out = POOL.reference([x], dict(attrs, rois=[[0, 7.0, 7.0, 9.0, 9.0]]))
    assert out[0, 0, 0, 0] == 0.0
    # bins split floor/ceil: roi height 3 in 2 bins -> rows [0, 2) and [1, 3)
    out = POOL.reference([x], dict(attrs, rois=[[0, 0.0, 0.0, 0.0, 2.0]], pooled_size=[2, 1]))
    assert out[0, 0, :, 0].tolist() == [5.0, 10.0]


def test_get_valid_counts_compacts_and_pads():
    from fuzz.catalogue.vision import GetValidCounts

    spec = GetValidCounts("relax.vision.get_valid_counts")
    # rows: [class id, score, x]; a score equal to the threshold is not valid (strict >)
    x = np.array([[[0, 0.5, 1], [-1, 0.9, 2], [1, 0.25, 3], [2, 0.75, 4]]], dtype="float32")
    attrs = {"score_threshold": 0.25, "id_index": 0, "score_index": 1}
    count, out, idx = spec.reference([x], attrs)
    assert count.tolist() == [2]
    assert idx.tolist() == [[0, 3, -1, -1]]
    assert out[0].tolist() == [[0, 0.5, 1], [2, 0.75, 4], [-1, -1, -1], [-1, -1, -1]]
    # without the class check the negative id counts
    count, _, idx = spec.reference([x], dict(attrs, id_index=-1))
    assert count.tolist() == [3] and idx.tolist() == [[0, 1, 3, -1]]
