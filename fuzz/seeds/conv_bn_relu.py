# conv2d + batch_norm (inference) + relu, NCHW.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((8, 4, 3, 3), "float32"),
             gamma: R.Tensor((8,), "float32"), beta: R.Tensor((8,), "float32"),
             mean: R.Tensor((8,), "float32"), var: R.Tensor((8,), "float32")
             ) -> R.Tensor((1, 8, 8, 8), "float32"):
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            bn = R.nn.batch_norm(c, gamma, beta, mean, R.abs(var), axis=1, epsilon=1e-5,
                                 training=False)
            y0 = bn[0]
            y = R.nn.relu(y0)
            R.output(y)
        return y
