"""Checks of the grad references that do not need TVM: each backward op is the adjoint of
its forward op's reference."""
import numpy as np
import pytest

from fuzz.catalogue.grad import NLLLossBackward
from fuzz.catalogue.nn import NLLLoss


@pytest.mark.parametrize("pshape", [(5,), (3, 5), (2, 5, 3), (2, 5, 2, 3)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [-100, 2])
def test_nll_loss_backward_is_gradient_of_nll_loss(pshape, reduction, weighted, ignore):
    # nll_loss is linear in the predictions, so <g, nll_loss(p)> == <backward(g), p> exactly.
    rng = np.random.default_rng(0)
    C = pshape[1] if len(pshape) > 1 else pshape[0]
    p = rng.standard_normal(pshape)
    tshape = (pshape[0],) + pshape[2:] if len(pshape) > 1 else ()
    t = rng.integers(0, C, size=tshape)
    if ignore >= 0 and reduction == "mean":
        t.reshape(-1)[0] = (ignore + 1) % C   # a mean over at least one target
    xs = [p, t] + ([rng.uniform(0.5, 2.0, C)] if weighted else [])
    attrs = {"reduction": reduction, "ignore_index": ignore}
    fwd = NLLLoss("relax.nn.nll_loss", dtypes=("float64",)).reference(xs, attrs)
    g = rng.standard_normal(np.shape(fwd))
    bwd = NLLLossBackward("relax.grad.nll_loss_backward").reference([g] + xs, attrs)
    assert bwd.shape == p.shape
    assert np.isclose((g * fwd).sum(), (bwd * p).sum())
    # only the target class of each sample gets a gradient
    nz = np.count_nonzero(bwd)
    assert nz <= max(1, int(np.prod(tshape)))
