from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def main(p0: T.Buffer((16, 3), "float64"), p1_handle: T.handle):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    p1 = T.match_buffer(p1_handle, (4, 1), "int32", elem_offset=-3, offset_factor=4)
    t1 = T.alloc_buffer((12,), "float32", scope="local")
    for i2 in T.parallel(12):
        for k3 in T.serial(9):
            with T.sblock("b6"):
                v4, r5 = T.axis.remap("SR", [i2, k3])
                with T.init():
                    t1[v4] = T.float32(-64.0)
                t1[v4] = T.max(t1[v4], T.Cast("float32", p1[T.floormod(p1[T.int32(1), T.floormod(r5, T.int32(1))], T.int32(4)), T.floormod(v4, T.int32(1))]))
    for i7 in T.parallel(4):
        x8: T.let[T.float32] = T.fabs((T.Cast("float32", p1[T.floordiv(i7, T.int32(1)), T.floormod(i7, T.int32(1))]) * T.Cast("float32", i7)))
        p1[T.floordiv(i7, T.int32(1)), T.floormod(i7, T.int32(1))] = (T.Cast("int32", t1[T.floormod(i7, T.int32(1))]) + T.Cast("int32", p0[T.floordiv(i7, T.int32(1)), T.floormod(i7, T.int32(1))]))
