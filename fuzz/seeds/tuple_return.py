# A function returning a tuple of two results.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 5), "float32"), y: R.Tensor((3, 5), "float32")
             ) -> R.Tuple(R.Tensor((3, 5), "float32"), R.Tensor((3,), "float32")):
        with R.dataflow():
            s = R.add(x, y)
            t = R.tanh(s)
            m = R.sum(t, axis=[1])
            out = (t, m)
            R.output(out)
        return out
