# Symbolic rows through a linear layer and softmax.
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("m", 16), "float32"), w: R.Tensor((16, 4), "float32")
             ) -> R.Tensor(("m", 4), "float32"):
        m = T.int64()
        with R.dataflow():
            h = R.matmul(x, w)
            y = R.nn.softmax(h, axis=1)
            R.output(y)
        return y
