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


def _nms(x, **kw):
    from fuzz.catalogue.vision import NMS

    attrs = dict(max_output_size=-1, iou_threshold=0.5, force_suppress=False, top_k=-1,
                 coord_start=2, score_index=1, id_index=0, return_indices=True,
                 invalid_to_bottom=False, soft_nms_sigma=0.0, score_threshold=0.0)
    attrs.update(kw)
    B, A, _ = x.shape
    vc = np.full(B, A, dtype="int32")
    ix = np.tile(np.arange(A, dtype="int32") * 10, (B, 1))
    return NMS("relax.vision.non_max_suppression").reference([x, vc, ix], attrs)


def test_nms_suppresses_by_iou_class_and_order():
    # rows: [class, score, x1, y1, x2, y2]
    x = np.array([[[0, 0.5, 0, 0, 2, 2],     # overlaps box 1 with IoU 2 / 6 = 1/3
                   [0, 0.9, 1, 0, 3, 2],
                   [1, 0.8, 0, 0, 2, 2],     # another class: not suppressed by box 1
                   [0, -0.1, 0, 0, 2, 2]]],  # score <= 0: never kept
                 dtype="float32")
    idx, cnt = _nms(x, iou_threshold=0.5)
    assert idx.tolist() == [[10, 20, 0, -1]] and cnt.tolist() == [[3]]
    # IoU 1/3 >= 0.3: box 0 is suppressed by box 1
    idx, cnt = _nms(x, iou_threshold=0.3)
    assert idx.tolist() == [[10, 20, -1, -1]] and cnt.tolist() == [[2]]
    # force_suppress ignores the class: box 2 (IoU 1/3 with box 1) goes too
    idx, _ = _nms(x, iou_threshold=0.3, force_suppress=True)
    assert idx.tolist() == [[10, -1, -1, -1]]
    # max_output_size and top_k cut in score order
    assert _nms(x, max_output_size=1)[0].tolist() == [[10, -1, -1, -1]]
    assert _nms(x, top_k=2)[0].tolist() == [[10, 20, -1, -1]]
    # the rows themselves, kept ones compacted to the top
    out = _nms(x, return_indices=False, invalid_to_bottom=True, iou_threshold=0.3)
    assert out[0, :2, 1].tolist() == [pytest.approx(0.9), pytest.approx(0.8)]
    assert (out[0, 2:] == -1).all()


def test_nms_iou_at_threshold_is_decided_exactly():
    from fuzz.catalogue.vision import _iou_at_least

    a = np.array([0, 0, 2, 2], dtype="float32")
    b = np.array([1, 0, 3, 2], dtype="float32")     # IoU exactly 1/3
    assert _iou_at_least(a, b, 0, 0.25, np.float32)
    assert not _iou_at_least(a, b, 0, 0.5, np.float32)
    # float32(1/3) rounds up: the float32 quotient equals it, so >= holds
    assert _iou_at_least(a, b, 0, float(np.float32(1 / 3)), np.float32)
    from fractions import Fraction as F

    c = np.array([0.1, 0.2, 2.3, 2.7], dtype="float32")
    ia = [F(float(v)) for v in c]
    inter = (2 - ia[0]) * (2 - ia[1])              # with [0, 0, 2, 2]
    q = inter / ((ia[2] - ia[0]) * (ia[3] - ia[1]) + 4 - inter)
    with pytest.raises(ValueError):   # inexact arithmetic, IoU at the threshold: refused
        _iou_at_least(c, np.array([0, 0, 2, 2], dtype="float32"), 0, float(q), np.float32)
    assert _iou_at_least(c, np.array([0, 0, 2, 2], dtype="float32"), 0, float(q) * 0.99,
                         np.float32)


def test_multibox_transform_loc_decodes_centre_size():
    from fuzz.catalogue.vision import MultiboxTransformLoc

    spec = MultiboxTransformLoc("relax.vision.multibox_transform_loc")
    anchor = np.array([[[0.0, 0.0, 2.0, 1.0]]])          # l, t, r, b: centre (x 1, y 0.5)
    loc = np.array([[0.5, 0.0, 0.0, np.log(2.0)]])       # x, y, w, h encodings
    cls = np.array([[[0.0], [np.log(3.0)]]])             # softmax [1/4, 3/4]
    attrs = {"clip": False, "threshold": 0.0, "variances": [1.0, 1.0, 1.0, 1.0],
             "keep_background": True, "apply_softmax": True}
    boxes, scores = spec.reference([cls, loc, anchor], attrs)
    # x centre 0.5 * 2 + 1 = 2, half width 0.5 * 1 * 2 = 1; half height 0.5 * 2 * 1 = 1
    assert boxes[0, 0].tolist() == pytest.approx([-0.5, 1.0, 1.5, 3.0])
    assert scores[0, :, 0].tolist() == pytest.approx([0.25, 0.75])
    boxes, scores = spec.reference([cls, loc, anchor], dict(
        attrs, clip=True, threshold=0.5, keep_background=False))
    assert boxes[0, 0].tolist() == pytest.approx([0.0, 1.0, 1.0, 1.0])
    assert scores[0, :, 0].tolist() == pytest.approx([0.0, 0.75])
    with pytest.raises(ValueError):   # a softmax score at the threshold: refused
        spec.reference([cls, loc, anchor], dict(attrs, threshold=0.25))


def test_all_class_nms_tensorflow_layout():
    from fuzz.catalogue.vision import AllClassNMS

    spec = AllClassNMS("relax.vision.all_class_non_max_suppression")
    boxes = np.array([[[0, 0, 2, 2], [1, 0, 3, 2], [5, 5, 6, 6]]], dtype="float32")
    scores = np.array([[[0.5, 0.9, 0.1],     # class 0: box 1, then box 0 (IoU 1/3)
                        [0.7, -0.5, 0.6]]],  # class 1: box 0, box 2; box 1 under threshold
                      dtype="float32")
    attrs = {"max_output_boxes_per_class": 1000, "iou_threshold": 0.5,
             "score_threshold": 0.0, "output_format": "tensorflow"}
    idx, sc, total = spec.reference([boxes, scores], attrs)
    assert total.tolist() == [5]
    assert idx[0, :5].tolist() == [[0, 1], [0, 0], [0, 2], [1, 0], [1, 2]]
    assert sc[0, :5].tolist() == pytest.approx([0.9, 0.5, 0.1, 0.7, 0.6])
    assert (idx[0, 5:] == 0).all() and (sc[0, 5:] == 0).all()
    # a lower IoU threshold suppresses box 0 under box 1; max 1 per class; threshold 0: none
    idx, _, total = spec.reference([boxes, scores], dict(attrs, iou_threshold=0.3))
    assert total.tolist() == [4] and idx[0, :2].tolist() == [[0, 1], [0, 2]]
    _, _, total = spec.reference([boxes, scores], dict(attrs, max_output_boxes_per_class=1))
    assert total.tolist() == [2]
    _, _, total = spec.reference([boxes, scores], dict(attrs, iou_threshold=0.0))
    assert total.tolist() == [0]
