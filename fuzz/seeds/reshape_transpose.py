# A reshape/transpose chain (head split and merge).
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 6, 8), "float32")) -> R.Tensor((2, 6, 8), "float32"):
        with R.dataflow():
            a = R.reshape(x, R.shape([2, 6, 2, 4]))
            b = R.permute_dims(a, axes=[0, 2, 1, 3])
            c = R.multiply(b, R.const(2.0, "float32"))
            d = R.permute_dims(c, axes=[0, 2, 1, 3])
            y = R.reshape(d, R.shape([2, 6, 8]))
            R.output(y)
        return y
