# conv + relu + conv with a residual connection.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 6, 6), "float32"), w1: R.Tensor((4, 4, 3, 3), "float32"),
             w2: R.Tensor((4, 4, 3, 3), "float32")) -> R.Tensor((1, 4, 6, 6), "float32"):
        with R.dataflow():
            a = R.nn.conv2d(x, w1, padding=[1, 1, 1, 1])
            b = R.nn.relu(a)
            c = R.nn.conv2d(b, w2, padding=[1, 1, 1, 1])
            d = R.add(c, x)
            y = R.nn.relu(d)
            R.output(y)
        return y
