# A dataflow block followed by plain bindings.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32")) -> R.Tensor((2, 4), "float32"):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.max(a, axis=[1])
            R.output(b)
        c = R.add(b, R.const(1.0, "float32"))
        d = R.cos(c)
        return d
