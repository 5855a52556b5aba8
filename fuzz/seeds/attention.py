# Attention-like: scores = softmax(q k^T / sqrt(d)), out = scores v.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 8, 16), "float32"), k: R.Tensor((2, 8, 16), "float32"),
             v: R.Tensor((2, 8, 16), "float32")) -> R.Tensor((2, 8, 16), "float32"):
        with R.dataflow():
            kt = R.permute_dims(k, axes=[0, 2, 1])
            s = R.matmul(q, kt)
            s1 = R.multiply(s, R.const(0.25, "float32"))
            p = R.nn.softmax(s1, axis=-1)
            o = R.matmul(p, v)
            R.output(o)
        return o
