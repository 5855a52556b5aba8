# main calls a helper Relax function of the module.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def gelu_block(x: R.Tensor((4, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            y = R.nn.gelu(x)
            z = R.multiply(y, x)
            R.output(z)
        return z

    @R.function
    def main(x: R.Tensor((4, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        cls = Module
        with R.dataflow():
            a = R.sigmoid(x)
            R.output(a)
        b = cls.gelu_block(a)
        return b
