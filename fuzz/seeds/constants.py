# Constant-only subexpressions next to a computation (FoldConstant material).
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        with R.dataflow():
            c = R.add(R.const(1.5, "float32"), R.const(0.5, "float32"))
            d = R.multiply(c, R.const(0.25, "float32"))
            y = R.multiply(x, d)
            z = R.subtract(y, c)
            R.output(z)
        return z
