# strided_slice and a transpose.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((6, 8), "float32")) -> R.Tensor((4, 3), "float32"):
        with R.dataflow():
            s = R.strided_slice(x, axes=[0, 1], begin=[0, 1], end=[6, 5], strides=[2, 1])
            t = R.permute_dims(s, axes=[1, 0])
            y = R.tanh(t)
            R.output(y)
        return y
