from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def main(p0_handle: T.handle, p1: T.Buffer((1,), "float32"), p2_handle: T.handle, p3_handle: T.handle):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    p0 = T.match_buffer(p0_handle, (8,), "int32", strides=(1,))
    p2_s0 = T.int32()
    p2_s1 = T.int32()
    p2_elem_offset = T.int32()
    p2 = T.match_buffer(p2_handle, (16, 4), "float32", strides=(p2_s0, p2_s1), elem_offset=p2_elem_offset)
    p3_s0 = T.int32()
    p3_s1 = T.int32()
    p3 = T.match_buffer(p3_handle, (7, 1), "float64", strides=(p3_s0, p3_s1), elem_offset=0, offset_factor=2)
    for i1 in T.serial(16):
        for i2 in T.vectorized(4):
            x3: T.uint8 = (T.Cast("uint8", i1) * T.Cast("uint8", p2[i1, i2]))
            p2[i1, i2] = T.Cast("float32", x3)
    for i4 in T.serial(7):
        for i5 in T.serial(1):
            for k6 in T.serial(13):
                with T.sblock("b10"):
                    v7, v8, r9 = T.axis.remap("SSR", [i4, i5, k6])
                    with T.init():
                        p3[v7, v8] = (T.float64(2.75) / T.float64(1.5))
                    p3[v7, v8] = T.max(p3[v7, v8], T.Cast("float64", v7))
