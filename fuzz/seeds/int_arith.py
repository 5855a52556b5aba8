# Integer arithmetic: add, multiply, max and a cast to float.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6), "int32"), y: R.Tensor((4, 6), "int32")
             ) -> R.Tensor((4, 6), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, R.const(3, "int32"))
            c = R.maximum(b, x)
            d = R.astype(c, "float32")
            R.output(d)
        return d
