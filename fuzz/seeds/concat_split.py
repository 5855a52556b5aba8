# concat then split, results added.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), y: R.Tensor((2, 4), "float32")
             ) -> R.Tensor((2, 4), "float32"):
        with R.dataflow():
            c = R.concat((x, y), axis=1)
            s = R.split(c, indices_or_sections=2, axis=1)
            a = s[0]
            b = s[1]
            z = R.maximum(a, b)
            R.output(z)
        return z
