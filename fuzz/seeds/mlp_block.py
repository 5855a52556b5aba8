# A two-layer MLP block: matmul + bias + relu, then matmul + bias.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w1: R.Tensor((16, 32), "float32"),
             b1: R.Tensor((32,), "float32"), w2: R.Tensor((32, 8), "float32"),
             b2: R.Tensor((8,), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            h = R.matmul(x, w1)
            h1 = R.add(h, b1)
            a = R.nn.relu(h1)
            o = R.matmul(a, w2)
            y = R.add(o, b2)
            R.output(y)
        return y
