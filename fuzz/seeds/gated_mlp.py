# A gated MLP (SwiGLU-like): silu(x w1) * (x w2), then w3.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 8), "float32"), w1: R.Tensor((8, 16), "float32"),
             w2: R.Tensor((8, 16), "float32"), w3: R.Tensor((16, 8), "float32")
             ) -> R.Tensor((2, 8), "float32"):
        with R.dataflow():
            g = R.nn.silu(R.matmul(x, w1))
            u = R.matmul(x, w2)
            h = R.multiply(g, u)
            y = R.matmul(h, w3)
            R.output(y)
        return y
