# A float16 linear layer with a float32 accumulation by cast.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float16"), w: R.Tensor((8, 8), "float16")
             ) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            h = R.matmul(x, w, out_dtype="float32")
            a = R.nn.silu(h)
            R.output(a)
        return a
