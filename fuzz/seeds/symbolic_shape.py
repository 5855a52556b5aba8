# Symbolic batch dim: elementwise ops and a reduction over a static axis.
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((8,), "float32")
             ) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        with R.dataflow():
            a = R.multiply(x, w)
            b = R.exp(R.negative(R.abs(a)))
            c = R.sum(b, axis=[1])
            R.output(c)
        return c
