# Comparison and where with broadcasting.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 5), "float32"), y: R.Tensor((5,), "float32")
             ) -> R.Tensor((4, 5), "float32"):
        with R.dataflow():
            c = R.greater(x, y)
            z = R.where(c, x, R.multiply(y, R.const(0.5, "float32")))
            R.output(z)
        return z
