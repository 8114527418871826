"""Loop-IR programs (as script text) that exercise each lowering rule."""

MM_RELU = '''
@T.prim_func
def mm_relu(A: T.Buffer((16, 12), "float32"), B: T.Buffer((12, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    Y = T.alloc_buffer((16, 8), "float32")
    for i, j, k in T.grid(16, 8, 12):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
'''

# k outside j: the init cannot go in front of the reduce loop, it is guarded
MM_REORDERED = '''
@T.prim_func
def mm(A: T.Buffer((6, 5), "float32"), B: T.Buffer((5, 7), "float32"), C: T.Buffer((6, 7), "float32")):
    for i, k, j in T.grid(6, 5, 7):
        with T.block("C"):
            vi = T.axis.spatial(6, i)
            vj = T.axis.spatial(7, j)
            vk = T.axis.reduce(5, k)
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''

# k split in two innermost loops: the init is hoisted in front of both
MM_SPLIT_K = '''
@T.prim_func
def mm(A: T.Buffer((6, 12), "float32"), B: T.Buffer((12, 7), "float32"), C: T.Buffer((6, 7), "float32")):
    for i, j, ko, ki in T.grid(6, 7, 3, 4):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            vk = T.axis.reduce(12, ko * 4 + ki)
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''

# a split of 10 by 4 that does not divide: the predicate becomes an `if`
SPLIT_PREDICATE = '''
@T.prim_func
def add_one(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    for io, ii in T.grid(3, 4):
        with T.block("B"):
            vi = T.axis.spatial(10, io * 4 + ii)
            T.where(io * 4 + ii < 10)
            B[vi] = A[vi] + T.float32(1)
'''

# the reduce loop split unevenly: predicate on the reduce loops, init guarded
SUM_SPLIT_PREDICATE = '''
@T.prim_func
def row_sum(A: T.Buffer((5, 10), "float32"), B: T.Buffer((5,), "float32")):
    for i, ko, ki in T.grid(5, 3, 4):
        with T.block("B"):
            vi = T.axis.spatial(5, i)
            vk = T.axis.reduce(10, ko * 4 + ki)
            T.where(ko * 4 + ki < 10)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
'''

# a block allocating its own scratch buffer inside a loop, and nested blocks
NESTED_ALLOC = '''
@T.prim_func
def scale_rows(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    for i in range(4):
        with T.block("row"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi, 0:8])
            T.writes(B[vi, 0:8])
            tmp = T.alloc_buffer((8,), "float32")
            for j in range(8):
                with T.block("copy"):
                    vr = T.axis.spatial(4, vi)
                    vj = T.axis.spatial(8, j)
                    tmp[vj] = A[vr, vj] * T.float32(2)
            for j in range(8):
                with T.block("out"):
                    vr = T.axis.spatial(4, vi)
                    vj = T.axis.spatial(8, j)
                    B[vr, vj] = tmp[vj] + T.float32(1)
'''

# a block with no reduce variable but an init: it always runs
INIT_NO_REDUCE = '''
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            with T.init():
                B[vi] = T.float32(1)
            B[vi] = B[vi] + A[vi]
'''

# the reduction visited backwards: its first iteration is not vk == 0, so no hoisting
SUM_REVERSED = '''
@T.prim_func
def rsum(A: T.Buffer((3, 6), "float32"), B: T.Buffer((3,), "float32")):
    for i, k in T.grid(3, 6):
        with T.block("B"):
            vi = T.axis.spatial(3, i)
            vk = T.axis.reduce(6, 5 - k)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] * T.float32(0.5) + A[vi, vk]
'''

ALL = {"mm_relu": MM_RELU, "mm_reordered": MM_REORDERED, "mm_split_k": MM_SPLIT_K,
       "split_predicate": SPLIT_PREDICATE, "sum_split_predicate": SUM_SPLIT_PREDICATE,
       "nested_alloc": NESTED_ALLOC, "init_no_reduce": INIT_NO_REDUCE,
       "sum_reversed": SUM_REVERSED}
