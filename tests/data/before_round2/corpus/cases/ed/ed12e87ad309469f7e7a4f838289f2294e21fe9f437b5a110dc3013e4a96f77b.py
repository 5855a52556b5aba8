from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def main(p0: T.Buffer((4, 4), "uint8")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    t1 = T.decl_buffer((12,), "int8")
    for i2 in T.parallel(12):
        with T.sblock("b5"):
            v3 = T.axis.remap("S", [i2])
            x4: T.float32 = T.log((T.fabs(T.Select(T.Cast("bool", p0[T.min(v3, T.int32(3)), T.int32(1)]), (T.Cast("float32", p0[T.floormod(T.Cast("int32", p0[T.floordiv(v3, T.int32(3)), T.int32(3)]), T.int32(4)), T.floormod(v3, T.int32(4))]) + T.float32(1.0)), (T.Cast("float32", v3) + T.float32(-1.0)))) + T.float32(0.5)))
            t1[v3] = T.Select(T.And(T.And(T.Cast("bool", p0[T.min(v3, T.int32(3)), T.floormod((v3 + T.int32(5)), T.int32(4))]), T.Cast("bool", p0[T.floormod(T.floordiv(v3, T.int32(2)), T.int32(4)), T.min(v3, T.int32(3))])), T.And(T.Cast("bool", p0[T.int32(2), T.int32(3)]), T.Cast("bool", p0[T.floormod(v3, T.int32(4)), T.floormod(v3, T.int32(4))]))), T.int8(-3), T.Select(T.And(T.Cast("bool", p0[T.floormod(v3, T.int32(4)), T.floormod(T.Cast("int32", p0[T.min(v3, T.int32(3)), T.floormod(v3, T.int32(4))]), T.int32(4))]), T.Cast("bool", p0[T.floormod(v3, T.int32(4)), T.int32(2)])), (T.Cast("int8", p0[T.min(v3, T.int32(3)), T.floormod(v3, T.int32(4))]) - T.Cast("int8", p0[T.floordiv(v3, T.int32(4)), T.int32(0)])), (T.Cast("int8", p0[T.floormod((v3 + T.int32(4)), T.int32(4)), T.floormod(v3, T.int32(4))]) * T.Cast("int8", p0[T.int32(2), T.int32(3)]))))
    for i6 in T.parallel(16):
        p0[T.floordiv(i6, T.int32(4)), T.floormod(i6, T.int32(4))] = T.Cast("uint8", T.Cast("int32", p0[T.floordiv(i6, T.int32(4)), T.floormod(i6, T.int32(4))]))
    for i7 in T.parallel(16):
        p0[T.floordiv(i7, T.int32(4)), T.floormod(i7, T.int32(4))] = ((p0[T.floordiv(i7, T.int32(4)), T.floormod(i7, T.int32(4))] * T.Cast("uint8", T.floormod(i7, T.int32(4)))) + T.Cast("uint8", i7))
