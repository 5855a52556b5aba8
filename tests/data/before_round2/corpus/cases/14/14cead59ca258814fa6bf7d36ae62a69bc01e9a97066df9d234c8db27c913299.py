from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def main(p0: T.Buffer((10,), "float16"), p1_handle: T.handle):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    p1 = T.match_buffer(p1_handle, (4, 12), "int64", elem_offset=0)
    w1 = T.decl_buffer((4, 2), "float16", data=p0.data, strides=(2, 1), elem_offset=0, offset_factor=4)
    for i2 in T.parallel(4):
        for i3 in T.vectorized(12):
            if T.Not((T.Cast("float32", w1[T.floormod((i2 + T.int32(1)), T.int32(4)), T.int32(0)]) < T.Cast("float32", p0[i2]))):
                p1[i2, i3] = (T.Cast("int64", T.if_then_else((i3 < T.int32(10)), p0[i3], T.float16(0.0))) + T.int64(-3))
            else:
                p1[i2, i3] = (T.Cast("int64", w1[i2, T.min(i2, T.int32(1))]) * p1[i2, i3])
    for i4 in T.parallel(4):
        for i5 in T.serial(12):
            if T.Cast("bool", p0[i4]):
                p1[i4, i5] = T.Cast("int64", w1[i4, T.floormod((i4 + T.int32(5)), T.int32(2))])
