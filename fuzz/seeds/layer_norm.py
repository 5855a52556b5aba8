# layer_norm over the last axis followed by a residual add.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 32), "float32"), g: R.Tensor((32,), "float32"),
             b: R.Tensor((32,), "float32")) -> R.Tensor((4, 32), "float32"):
        with R.dataflow():
            n = R.nn.layer_norm(x, g, b, axes=[-1])
            y = R.add(n, x)
            R.output(y)
        return y
