# max_pool2d and adaptive average pooling, then flatten.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), "float32")) -> R.Tensor((1, 3), "float32"):
        with R.dataflow():
            p = R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2])
            a = R.nn.adaptive_avg_pool2d(p, output_size=[1, 1])
            y = R.reshape(a, R.shape([1, 3]))
            R.output(y)
        return y
