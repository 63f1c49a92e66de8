#!/usr/bin/env python3
"""gen_torch_movement.py: golden data for tests/test_movement.c, from PyTorch.

Run from the repository root:  python3 tests/gen/gen_torch_movement.py
Needs torch (PyPI), numpy and ml_dtypes. Deterministic: every group draws from
np.random.default_rng(<fixed seed>), and torch only computes.

The file format is gen_ops.py's (see the top of that script); the files are
tests/goldens/torch_movement_<group>.bin. Every expected value comes from
PyTorch (torch.cat, torch.Tensor.unfold, F.pad, advanced indexing, gather,
scatter_reduce, autograd ...), except where a case says numpy: tg allows the
non-constant pad modes on any axes, where torch limits them, and numpy.pad's
reflect/edge/wrap are the same rules.

Where tg's defined behaviour differs from torch, the golden follows tg and
says so next to the case:
  * one_hot returns int32 (tinygrad's default int; torch: int64).
  * cat promotes with tinygrad's lattice (same as torch for the cases here).

Cases
  op         the name of the C function in test_movement.c's dispatch table;
  params     the op's arguments: axis, sizes, pads, mode, ... Strings (the
             rearrange pattern) are int lists of their bytes.
  index      getitem_adv / setitem: 6 ints per entry: kind, start, stop,
             step, has_start, has_stop; kind 0 int, 1 slice, 2 new axis,
             3 ellipsis, 4 tensor (start = which input holds it).
  outputs    one array per result (split/chunk/meshgrid give several).
Backward cases (param backward=1, grad = the input numbers that require
grad): the inputs are the op's inputs followed by one upstream-gradient array
w_k per forward output; the outputs are the forward outputs followed by
dL/d(input) for each input in grad, for L = sum_k sum(out_k * w_k).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_ops import Group, OUT  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.use_deterministic_algorithms(False)


class TGroup(Group):
    """gen_ops.Group writing tests/goldens/torch_movement_<name>.bin."""
    PREFIX = "torch_movement_"

    def ints_(self, shape, lo, hi, dt=np.int64):
        return self.rng.integers(lo, hi, shape, endpoint=True).astype(dt)


def T(x): return torch.from_numpy(np.array(x, copy=True))
def N(t): return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
def outs_of(r): return [N(t) for t in r] if isinstance(r, (list, tuple)) else [N(r)]
def s(string): return list(string.encode())   # a string parameter


# index entries (see the top)
def I(i): return [0, i, 0, 1, 1, 0]
def SL(a=None, b=None, st=1): return [1, 0 if a is None else a, 0 if b is None else b, st, int(a is not None), int(b is not None)]
NEW = [2, 0, 0, 1, 0, 0]
ELL = [3, 0, 0, 1, 0, 0]
def TI(k): return [4, k, 0, 1, 0, 0]


def torch_index(spec, ins):
    """The Python index tuple for a spec (list of entries) over torch inputs."""
    out = []
    for e in spec:
        k = e[0]
        if k == 0: out.append(e[1])
        elif k == 1: out.append(slice(e[1] if e[4] else None, e[2] if e[5] else None, e[3]))
        elif k == 2: out.append(None)
        elif k == 3: out.append(Ellipsis)
        else: out.append(ins[e[1]].long())   # tg (like tinygrad) reads uint8 as integers; torch as a mask
    return tuple(out)


def flat(spec): return [v for e in spec for v in e]


# ----------------------------------------------------------------- joining and splitting

def gen_join():
    g = TGroup("join", 101)
    r = g.randn
    # cat
    for label, xs, axis in [
        ("cat_2x3_axis0", [r((2, 3)), r((2, 3))], 0),
        ("cat_three_axis1", [r((2, 1, 4)), r((2, 3, 4)), r((2, 2, 4))], 1),
        ("cat_neg_axis_with_empty", [r((3, 2)), r((3, 0)), r((3, 4))], -1),
        ("cat_int8", [g.ints((2, 2), -100, 100, np.int8), g.ints((1, 2), -100, 100, np.int8)], 0),
        ("cat_bool", [g.rng.random((2, 3)) > 0.5, g.rng.random((2, 1)) > 0.5], 1),
        ("cat_single", [r((2, 3))], 1),
        ("cat_f16_1d", [r((4,), np.float16), r((5,), np.float16)], 0),
        ("cat_four_equal_axis1", [r((2, 3)) for _ in range(4)], 1),
        ("cat_all_empty", [r((0, 3)), r((0, 3))], 0),
        ("cat_int64_3d_axis2", [g.ints_((2, 2, 1), -9, 9), g.ints_((2, 2, 3), -9, 9)], 2),
    ]:
        g.add("cat", label, xs, N(torch.cat([T(x) for x in xs], axis)), axis=axis)
    xi, xf = g.ints((2, 2), -5, 5, np.int32), r((3, 2))
    g.add("cat", "cat_promote_int32_f32", [xi, xf], N(torch.cat([T(xi), T(xf)], 0)), axis=0)   # float32 in torch and tinygrad
    # stack
    for label, xs, axis in [
        ("stack_three_axis0", [r((2, 3)) for _ in range(3)], 0),
        ("stack_axis_last", [r((2, 3)) for _ in range(2)], -1),
        ("stack_1d_axis1", [r((4,)) for _ in range(3)], 1),
        ("stack_0d", [np.float32(1.5), np.float32(-2), np.float32(3)], 0),
        ("stack_empty_int64", [g.ints_((0, 2), 0, 3) for _ in range(2)], 1),
        ("stack_bool_axis2", [g.rng.random((2, 3)) > 0.5 for _ in range(2)], 2),
        ("stack_single_neg", [r((2, 2))], -3),
    ]:
        g.add("stack", label, xs, N(torch.stack([T(x) for x in xs], axis)), axis=axis)
    # split by sizes, by size; chunk
    for label, x, sizes, axis in [
        ("split_sizes_1_4", r((5, 4)), [1, 4], 0),
        ("split_sizes_with_zero", r((3, 4)), [2, 0, 2], 1),
        ("split_sizes_neg_axis", r((2, 3, 6)), [3, 3], -1),
        ("split_sizes_one_piece", g.ints((4,), 0, 9, np.int32), [4], 0),
    ]:
        g.add("split", label, [x], outs_of(torch.split(T(x), sizes, axis)), sizes=sizes, axis=axis)
    for label, x, size, axis in [
        ("split_size_uneven", r((5, 2)), 2, 0),
        ("split_size_bigger_than_axis", r((3, 2)), 10, 0),
        ("split_size_empty_axis", r((0, 3)), 2, 0),
        ("split_size_neg_axis", r((2, 7)), 3, -1),
    ]:
        g.add("split_size", label, [x], outs_of(torch.split(T(x), size, axis)), size=size, axis=axis)
    for label, x, chunks, axis in [
        ("chunk_11_by_6", np.arange(11, dtype=np.int32), 6, 0),
        ("chunk_12_by_6", np.arange(12, dtype=np.int32), 6, 0),
        ("chunk_13_by_6", np.arange(13, dtype=np.int32), 6, 0),   # ceil(13/6) = 3: 5 chunks
        ("chunk_empty_gives_all", r((0,)), 3, 0),
        ("chunk_axis1", r((4, 6)), 4, 1),
        ("chunk_one", r((2, 3)), 1, -1),
    ]:
        g.add("chunk", label, [x], outs_of(torch.chunk(T(x), chunks, axis)), chunks=chunks, axis=axis)
    # meshgrid (xy = 1)
    a, b, c = r((3,)), r((4,)), r((2,))
    for label, xs, xy in [
        ("meshgrid_ij_2", [a, b], 0), ("meshgrid_xy_2", [a, b], 1), ("meshgrid_ij_3", [a, b, c], 0),
        ("meshgrid_xy_3", [a, b, c], 1), ("meshgrid_0d_xy", [np.float32(2.5), b], 1), ("meshgrid_single", [a], 0),
        ("meshgrid_empty", [a, r((0,))], 0),
    ]:
        g.add("meshgrid", label, xs, outs_of(torch.meshgrid(*[T(x) for x in xs], indexing="xy" if xy else "ij")), xy=xy)
    return g


# ----------------------------------------------------------------- repeating and reshaping

def gen_shape():
    g = TGroup("shape", 102)
    r = g.randn
    for label, x, reps in [
        ("repeat_1d_to_2d", r((3,)), [4, 2]), ("repeat_2d", r((2, 3)), [2, 1]), ("repeat_new_axis", r((2, 3)), [1, 1, 2]),
        ("repeat_0d", np.float32(7), [3]), ("repeat_empty", r((2, 0)), [2, 3]), ("repeat_zero", r((2, 3)), [0, 2]),
        ("repeat_int8", g.ints((2, 2), -50, 50, np.int8), [3, 2]), ("repeat_ones", r((2, 3)), [1, 1]),
    ]:
        g.add("repeat", label, [x], N(T(x).repeat(*reps)), repeats=reps)
    for label, x, rep, axis in [
        ("repeat_interleave_flat", r((3,)), 2, None), ("repeat_interleave_axis1", r((2, 3)), 3, 1),
        ("repeat_interleave_neg_axis", r((2, 3)), 2, -2), ("repeat_interleave_zero", r((2, 3)), 0, 1),
        ("repeat_interleave_flat_2d", g.ints((2, 2), 0, 9, np.int32), 2, None),
    ]:
        kw = {} if axis is None else {"axis": axis}
        g.add("repeat_interleave", label, [x], N(torch.repeat_interleave(T(x), rep, dim=axis)), repeats=rep, **kw)
    for label, x, shifts, dims in [
        ("roll_1", np.arange(4, dtype=np.int32), [1], [0]), ("roll_neg", np.arange(4, dtype=np.int32), [-1], [0]),
        ("roll_flat", r((2, 3)), [1], None), ("roll_two_axes", r((3, 4)), [1, -2], [0, 1]),
        ("roll_more_than_size", r((3,)), [7], [0]), ("roll_same_axis_twice", r((4, 2)), [1, 2], [0, 0]),
        ("roll_empty", r((0, 3)), [1], [1]), ("roll_neg_axis", r((2, 5)), [3], [-1]), ("roll_flat_neg", r((2, 2)), [-3], None),
    ]:
        ref = torch.roll(T(x), shifts[0], None) if dims is None else torch.roll(T(x), shifts, dims)
        kw = {} if dims is None else {"axes": dims}
        g.add("roll", label, [x], N(ref), shifts=shifts, **kw)
    for label, x, dim, size, step in [
        ("unfold_8_2_2", np.arange(8, dtype=np.int32), 0, 2, 2), ("unfold_3d_last", r((3, 3, 3)), -1, 2, 3),
        ("unfold_overlap", r((5, 7)), 1, 3, 2), ("unfold_full", r((5, 7)), 0, 5, 1), ("unfold_size0", r((4,)), 0, 0, 1),
        ("unfold_big_step", r((2, 6)), 1, 2, 10), ("unfold_step1", r((6,)), 0, 3, 1), ("unfold_0d", np.float32(3), 0, 1, 1),
        ("unfold_mid_axis", r((2, 9, 3)), 1, 4, 3),
    ]:
        g.add("unfold", label, [x], N(T(x).unfold(dim, size, step)), axis=dim, size=size, step=step)
    for label, x, dim, sizes in [
        ("unflatten_2_2", r((3, 4, 1)), 1, [2, 2]), ("unflatten_infer", r((3, 4, 1)), 1, [-1, 2]),
        ("unflatten_many", r((5, 12, 3)), -2, [2, 2, 3, 1, 1]), ("unflatten_empty", r((2, 0)), 1, [0, 5]),
        ("unflatten_empty_infer", r((2, 0)), 1, [-1, 5]),
    ]:
        g.add("unflatten", label, [x], N(T(x).unflatten(dim, sizes)), axis=dim, sizes=sizes)
    # rearrange: the references are written out with torch's reshape/permute
    x = r((2, 3, 8))
    g.add("rearrange", "rearrange_split_group", [x], N(T(x).reshape(2, 3, 2, 4).permute(0, 2, 3, 1)), pattern=s("b c (h w) -> b h w c"), sizes=s("h=2"))
    x = r((2, 2, 3, 4))
    g.add("rearrange", "rearrange_merge_group", [x], N(T(x).reshape(2, 6, 4)), pattern=s("b h w c -> b (h w) c"))
    x = r((3, 5))
    g.add("rearrange", "rearrange_transpose", [x], N(T(x).T), pattern=s("a b -> b a"))
    x = r((2, 3, 4))
    g.add("rearrange", "rearrange_ellipsis_to_front", [x], N(T(x).permute(1, 2, 0)), pattern=s("b ... -> ... b"))
    g.add("rearrange", "rearrange_ellipsis_last", [x], N(T(x).permute(2, 0, 1)), pattern=s("... c -> c ..."))
    g.add("rearrange", "rearrange_flatten_all", [x], N(T(x).reshape(-1)), pattern=s("a b c -> (a b c)"))
    g.add("rearrange", "rearrange_ellipsis_group", [x], N(T(x).reshape(2, 12)), pattern=s("b ... -> b (...)"))
    g.add("rearrange", "rearrange_group_reorder", [x], N(T(x).permute(0, 2, 1).reshape(2, 12)), pattern=s("b c d -> b (d c)"))
    x = r((6, 4))
    g.add("rearrange", "rearrange_regroup", [x], N(T(x).reshape(2, 3, 4).reshape(2, 12)), pattern=s("(b1 b2) h -> b1 (b2 h)"), sizes=s("b1=2"))
    x = r((2, 1, 3))
    g.add("rearrange", "rearrange_drop_1", [x], N(T(x).reshape(2, 3)), pattern=s("a 1 c -> a c"))
    x = r((2, 3))
    g.add("rearrange", "rearrange_add_1", [x], N(T(x).reshape(2, 1, 3)), pattern=s("a c -> a 1 c"))
    g.add("rearrange", "rearrange_add_parens", [x], N(T(x).reshape(2, 3, 1)), pattern=s("a c -> a c ()"))
    x = r((2, 6))
    g.add("rearrange", "rearrange_both_sizes", [x], N(T(x).reshape(2, 2, 3)), pattern=s("b (h w) -> b h w"), sizes=s("h=2, w=3"))
    x = r((2, 3, 4, 5))
    g.add("rearrange", "rearrange_ellipsis_middle", [x], N(T(x).permute(3, 1, 2, 0)), pattern=s("x ... y -> y ... x"))
    x = r((4,))
    g.add("rearrange", "rearrange_ellipsis_empty", [x], N(T(x)), pattern=s("a ... -> ... a"))
    return g


# ----------------------------------------------------------------- triangles, diagonals, one-hot

def gen_tri():
    g = TGroup("tri", 103)
    r = g.randn
    for fn in ("tril", "triu"):
        for label, x, k in [
            ("square", r((4, 4)), 0), ("wide_k1", r((3, 5)), 1), ("tall_km1", r((5, 3)), -1), ("batch", r((2, 3, 4)), 0),
            ("k_big", r((3, 3)), 10), ("k_very_neg", r((3, 3)), -10), ("int32", g.ints((3, 4), -9, 9, np.int32), 2),
            ("bool", g.rng.random((3, 3)) > 0.3, 0), ("empty", r((0, 3)), 0),
        ]:
            g.add(fn, "%s_%s" % (fn, label), [x], N(getattr(torch, fn)(T(x), k)), k=k)
    for label, x, k in [
        ("1d", r((3,)), 0), ("1d_k1", r((3,)), 1), ("1d_km2", g.ints((3,), -9, 9, np.int32), -2),
        ("2d", r((3, 4)), 0), ("2d_k1", r((3, 4)), 1), ("2d_km1", r((3, 4)), -1), ("2d_beyond", r((3, 4)), 5),
        ("1d_empty", r((0,)), 0),
    ]:
        g.add("diag", "diag_" + label, [x], N(torch.diag(T(x), k)), k=k)
    for label, x, off, d1, d2 in [
        ("default", r((3, 4)), 0, 0, 1), ("offset1", r((3, 4)), 1, 0, 1), ("offset_m2", r((3, 4)), -2, 0, 1),
        ("3d_last_two", r((2, 3, 4)), 0, 1, 2), ("neg_dims_offset", r((2, 3, 4)), 1, -1, 0), ("beyond", r((3, 4)), 4, 0, 1),
        ("dims_0_2", r((4, 3, 2)), 0, 0, 2), ("swapped_dims", r((3, 4)), 1, 1, 0),
    ]:
        g.add("diagonal", "diagonal_" + label, [x], N(torch.diagonal(T(x), off, d1, d2)), offset=off, axis1=d1, axis2=d2)
    # one_hot: tg returns int32 (tinygrad); torch int64, cast here
    for label, x, n in [
        ("1d", np.array([0, 1, 3, 3, 4], np.int64), 5), ("2d_int32", g.ints((2, 3), 0, 3, np.int32), 4),
        ("infer", np.array([2, 0, 1], np.int64), -1), ("0d", np.array(2, np.int64), 3), ("empty", np.zeros((0,), np.int64), 3),
        ("uint8", np.array([1, 0], np.uint8), 2),
    ]:
        g.add("one_hot", "one_hot_" + label, [x], N(F.one_hot(T(x).long(), n)).astype(np.int32), num_classes=n)
    return g


# ----------------------------------------------------------------- padding modes

MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def gen_pad():
    g = TGroup("pad", 104)
    r = g.randn
    for label, x, pads, value in [
        ("constant_1d_pair", r((2, 3)), [1, 2], 0.0), ("constant_two_axes_value", r((2, 3)), [1, 2, 0, 1], 1.5),
        ("constant_negative", r((2, 4)), [-1, 1], 0.0), ("constant_neg_both_axes", r((3, 4)), [1, -1, -1, 2], -2.0),
        ("constant_3_axes", r((2, 2, 2)), [1, 0, 0, 1, 2, 0], 0.5), ("constant_int", g.ints((2, 2), -9, 9, np.int32), [1, 1], 7),
        ("constant_zero_pads", r((2, 2)), [0, 0], 3.0), ("constant_empty_input", r((0, 2)), [1, 1, 1, 0], 1.0),
    ]:
        g.add("pad_mode", label, [x], N(F.pad(T(x), pads, "constant", value)), pads=pads, mode=0, value=float(value))
    for mode in ("reflect", "replicate", "circular"):
        for label, shape, pads in [
            ("1axis", (1, 2, 3), [2, 1] if mode != "replicate" else [2, 3]), ("2axes", (1, 1, 3, 4), [1, 2, 2, 1]),
            ("negative", (1, 2, 3), [-1, 2]), ("3axes", (1, 1, 3, 3, 4), [1, 1, 0, 2, 2, 0]), ("batch_3d", (2, 3, 4), [3, 3] if mode != "reflect" else [3, 2]),
        ]:
            x = r(shape)
            g.add("pad_mode", "%s_%s" % (mode, label), [x], N(F.pad(T(x), pads, mode)), pads=pads, mode=MODES[mode], value=0.0)
        x = r((1, 1, 3, 4))
        if mode == "circular":
            g.add("pad_mode", "circular_full_wrap", [x], N(F.pad(T(x), [4, 4, 3, 3], mode)), pads=[4, 4, 3, 3], mode=3, value=0.0)
        # tg allows every axis (torch does not): numpy.pad is the reference
        x = r((3,)) if mode != "replicate" else g.ints((3,), -9, 9, np.int32)
        g.add("pad_mode", "%s_1d_numpy" % mode, [x], np.pad(x, [(1, 2)], NP_MODE[mode]), pads=[1, 2], mode=MODES[mode], value=0.0)
        x = r((2, 3, 3))
        g.add("pad_mode", "%s_all_axes_numpy" % mode, [x], np.pad(x, [(1, 1), (2, 0), (0, 2)], NP_MODE[mode]), pads=[0, 2, 2, 0, 1, 1], mode=MODES[mode], value=0.0)
    return g


# ----------------------------------------------------------------- advanced indexing

def gen_index():
    g = TGroup("index", 105)
    r = g.randn
    x2, x3, x4 = r((4, 5)), r((3, 4, 5)), r((2, 3, 4, 5))
    cases = [
        ("1d_neg", r((5,)), [np.array([4, 0, -1], np.int64)], [TI(1)]),
        ("2d_index_axis0", x2, [np.array([[1, 3, 0], [2, 2, -4]], np.int32)], [TI(1)]),
        ("axis1", x2, [np.array([4, 0, 2, 2], np.int64)], [SL(), TI(1)]),
        ("two_broadcast", x3, [np.array([[0], [2]], np.int64), np.array([1, 3, -1], np.int64)], [TI(1), TI(2)]),
        ("consecutive_inner", x3, [np.array([0, 2], np.int64), np.array([4, 1], np.int64)], [SL(), TI(1), TI(2)]),
        ("separated_first", x3, [np.array([2, 0, 1], np.int64), np.array([1, 4, 0], np.int64)], [TI(1), SL(), TI(2)]),
        ("separated_permuted", x4, [np.array([[0, 2]], np.int64), np.array([[4], [1], [0]], np.int64)], [SL(), TI(1), SL(), TI(2)]),
        ("int_then_tensor", x3, [np.array([3, 0], np.int64)], [I(1), SL(), TI(1)]),
        ("tensor_then_slice", x3, [np.array([2, 2, 0], np.int64)], [TI(1), SL(1, 3)]),
        ("newaxis", x3, [np.array([1], np.int64)], [NEW, TI(1)]),
        ("ellipsis", x3, [np.array([[4, 3], [0, -5]], np.int64)], [ELL, TI(1)]),
        ("two_2d", x2, [np.array([[0, 1], [2, 3]], np.int64), np.array([[4, 3], [2, 1]], np.int64)], [TI(1), TI(2)]),
        ("0d_index", x2, [np.array(2, np.int64)], [TI(1)]),
        ("empty_index", x2, [np.zeros((0,), np.int64)], [TI(1)]),
        ("uint8_index", x2, [np.array([3, 1], np.uint8)], [TI(1)]),
        ("int8_negative", x2, [np.array([-1, -4, 2], np.int8)], [TI(1)]),
        ("step_slice", r((6, 5)), [np.array([0, 4], np.int64)], [SL(None, None, 2), TI(1)]),
        ("int32_data", g.ints((4, 3), -50, 50, np.int32), [np.array([1, 1, 3], np.int64)], [TI(1)]),
        ("bool_data", g.rng.random((4, 3)) > 0.5, [np.array([2, 0], np.int64)], [SL(), TI(1)]),
        ("f16_data", r((3, 3), np.float16), [np.array([2, 0], np.int64)], [TI(1), TI(1)]),
        ("int_slice_tensor_3", x4, [np.array([[2, 0]], np.int64), np.array([1], np.int64)], [I(-1), TI(1), SL(1, 4), TI(2)]),
    ]
    for label, x, idxs, spec in cases:
        ins = [x] + idxs
        tins = [T(a) for a in ins]
        g.add("getitem_adv", "getitem_" + label, ins, N(tins[0][torch_index(spec, tins)]), index=flat(spec))
    for label, x, idx, axis in [
        ("axis0", x2, np.array([3, 0, 3], np.int64), 0), ("axis1", x2, np.array([4, 4, 1, 0, 2], np.int32), 1),
        ("neg_axis", x3, np.array([1], np.int64), -1), ("empty", x2, np.zeros((0,), np.int64), 1),
        ("0d_index", x2, np.array(2, np.int64), 0), ("1d_int8", g.ints((6,), -9, 9, np.int8), np.array([5, 0], np.int64), 0),
    ]:
        g.add("index_select", "index_select_" + label, [x, idx], N(torch.index_select(T(x), axis, T(idx))), axis=axis)
    # setitem: inputs [x, value, index tensors...]; output: x after x[idx] = value
    sets = [
        ("int_scalar", r((4, 5)), np.float32(7), [], [I(1)]),
        ("slices", r((4, 5)), r((2, 3)), [], [SL(1, 3), SL(None, None, 2)]),
        ("broadcast_row", r((4, 5)), r((5,)), [], [SL(0, 2)]),
        ("leading_ones_value", r((4, 5)), r((1, 1, 5)), [], [I(2)]),
        ("tensor_rows", r((4, 5)), r((2, 5)), [np.array([3, 0], np.int64)], [TI(2)]),
        ("tensor_cols_scalar", r((4, 5)), np.float32(-1), [np.array([4, 1, -2], np.int64)], [SL(), TI(2)]),
        ("two_tensors_separated", r((3, 4, 5)), r((4,)), [np.array([0, 2], np.int64), np.array([4, 1], np.int64)], [TI(2), SL(), TI(3)]),
        ("permuted_result", r((2, 3, 4, 5)), r((2, 2, 4)), [np.array([0, 2], np.int64), np.array([1, 3], np.int64)], [SL(), TI(2), SL(), TI(3)]),
        ("negative_1d", r((5,)), r((2,)), [np.array([-1, -5], np.int64)], [TI(2)]),
        ("int32_data", g.ints((4, 3), -9, 9, np.int32), g.ints((2, 3), 10, 20, np.int32), [np.array([2, 1], np.int32)], [TI(2)]),
        ("tensor_and_slice", r((4, 5)), r((2, 2)), [np.array([1, 3], np.int64)], [TI(2), SL(2, 4)]),
        ("float_into_int", g.ints((3,), -9, 9, np.int32), np.float32(1.75), [], [SL(1, None)]),   # cast like torch (truncates)
        ("bool_data", g.rng.random((3, 3)) > 0.5, np.bool_(True), [np.array([0, 2], np.int64)], [TI(2), I(1)]),
        ("two_consecutive", r((3, 4, 2)), r((2,)), [np.array([2, 0], np.int64), np.array([3, 1], np.int64)], [TI(2), TI(3), I(0)]),
    ]
    for label, x, v, idxs, spec in sets:
        ins = [x, v] + idxs
        tins = [T(a) for a in ins]
        y = tins[0].clone()
        y[torch_index(spec, tins)] = tins[1].to(y.dtype) if tins[1].dtype != y.dtype else tins[1]
        g.add("setitem", "setitem_" + label, ins, N(y), index=flat(spec))
    return g


# ----------------------------------------------------------------- gather and scatter

REDUCES = {"sum": 0, "prod": 1, "mean": 2, "amax": 3, "amin": 4}


def gen_gather():
    g = TGroup("gather", 106)
    r = g.randn
    for label, x, axis, idx in [
        ("axis1", r((3, 4)), 1, g.ints_((3, 2), 0, 3)), ("axis0", r((3, 4)), 0, g.ints_((2, 4), 0, 2)),
        ("smaller_other_dims", r((3, 4)), 1, g.ints_((2, 2), 0, 3)), ("3d_neg_axis", r((2, 3, 4)), -1, g.ints_((2, 3, 6), 0, 3)),
        ("int32_data", g.ints((3, 3), -9, 9, np.int32), 0, g.ints_((3, 3), 0, 2)), ("0d", np.float32(4.5), 0, np.array(0, np.int64)),
        ("empty_index", r((3, 4)), 1, np.zeros((3, 0), np.int64)), ("int32_index", r((4, 2)), 0, g.ints((5, 2), 0, 3, np.int32)),
    ]:
        g.add("gather", "gather_" + label, [x, idx], N(torch.gather(T(x), axis, T(idx))), axis=axis)
    # scatter: indices distinct along the axis (torch does not define which duplicate wins)
    z = np.zeros((3, 5), np.float32)
    src = np.arange(1, 11, dtype=np.float32).reshape(2, 5)
    for label, x, axis, idx, sv in [
        ("axis0", z, 0, np.array([[0, 1, 2, 0]], np.int64), src),
        ("axis1", z, 1, np.array([[0, 1, 2], [0, 1, 4]], np.int64), src),
        ("3d", r((2, 3, 4)), 1, np.array([[[2, 0], [0, 1]], [[1, 2], [2, 0]]], np.int64), r((2, 3, 3))),
        ("int_data", g.ints((2, 4), -9, 9, np.int32), 1, np.array([[3, 1], [0, 2]], np.int64), g.ints((2, 2), 10, 20, np.int32)),
        ("empty_index", r((2, 3)), 0, np.zeros((0, 3), np.int64), r((1, 3))),
        ("neg_axis", r((3, 4)), -1, np.array([[1], [3], [0]], np.int64), r((3, 2))),
    ]:
        g.add("scatter", "scatter_" + label, [x, idx, sv], N(torch.scatter(T(x), axis, T(idx), T(sv))), axis=axis)
    x = np.full((2, 4), 2.0, np.float32)
    g.add("scatter_value", "scatter_value_basic", [x, np.array([[2], [3]], np.int64)],
          N(torch.scatter(T(x), 1, T(np.array([[2], [3]], np.int64)), 1.23)), axis=1, value=1.23)
    xi = g.ints((3, 3), 0, 5, np.int32)
    g.add("scatter_value", "scatter_value_int_axis0", [xi, np.array([[2, 0, 1]], np.int64)],
          N(torch.scatter(T(xi), 0, T(np.array([[2, 0, 1]], np.int64)), -4)), axis=0, value=-4.0)
    # scatter_reduce: duplicates are fine (the reductions are order-free up to rounding)
    for red in REDUCES:
        for inc in (1, 0):
            x, sv = r((3, 5)), r((4, 5))
            idx = g.ints_((4, 5), 0, 2)   # row 0..2, duplicates likely, row 2 of some columns untouched
            if red == "prod": sv = g.uniform((4, 5), 0.5, 2.0)
            tol = 1e-6 if red in ("sum", "mean", "prod") else 0
            g.add("scatter_reduce", "scatter_reduce_%s_%s" % (red, "self" if inc else "noself"), [x, idx, sv],
                  N(torch.scatter_reduce(T(x), 0, T(idx), T(sv), red, include_self=bool(inc))),
                  rtol=tol, atol=tol, axis=0, reduce=REDUCES[red], include_self=inc)
    xi, si, idx = g.ints((2, 4), -20, 20, np.int32), g.ints((2, 3), -20, 20, np.int32), g.ints_((2, 3), 0, 3)
    for red in ("sum", "mean", "amax", "amin"):
        for inc in (1, 0):
            g.add("scatter_reduce", "scatter_reduce_int_%s_%s" % (red, "self" if inc else "noself"), [xi, idx, si],
                  N(torch.scatter_reduce(T(xi), 1, T(idx), T(si), red, include_self=bool(inc))),
                  axis=1, reduce=REDUCES[red], include_self=inc)   # int mean rounds down
    x = r((2, 3, 4))
    idx = g.ints_((2, 3, 2), 0, 3)
    sv = r((2, 3, 2))
    g.add("scatter_reduce", "scatter_reduce_3d_last_amax", [x, idx, sv], N(torch.scatter_reduce(T(x), -1, T(idx), T(sv), "amax")),
          axis=-1, reduce=3, include_self=1)
    # masked_select
    for label, x, m in [
        ("2d", r((3, 3)), g.rng.random((3, 3)) > 0.5), ("broadcast_mask", r((2, 3)), np.array([True, False, True])),
        ("none", r((2, 2)), np.zeros((2, 2), bool)), ("int_data", g.ints((5,), -9, 9, np.int32), np.array([1, 1, 0, 1, 0], bool)),
        ("broadcast_input", r((3,)), g.rng.random((2, 3)) > 0.4),
    ]:
        g.add("masked_select", "masked_select_" + label, [x, m], N(torch.masked_select(T(x), T(m))))
    return g


# ----------------------------------------------------------------- backward

def gen_backward():
    g = TGroup("backward", 107)
    r = g.randn

    def add(op, label, ins, grad, fn, rtol=1e-6, atol=1e-6, **params):
        """fn(torch inputs) -> output or list of outputs; grads of the inputs in `grad`."""
        tins = [T(a) for a in ins]
        for k in grad: tins[k].requires_grad_(True)
        res = fn(tins)
        outs = list(res) if isinstance(res, (list, tuple)) else [res]
        ws = [g.randn(tuple(o.shape)) for o in outs]
        loss = sum((o * T(w)).sum() for o, w in zip(outs, ws))
        loss.backward()
        g.add(op, "bw_" + label, ins + ws, [N(o) for o in outs] + [N(tins[k].grad) for k in grad],
              rtol=rtol, atol=atol, backward=1, grad=grad, **params)

    a, b, c = r((2, 3)), r((2, 1)), r((2, 4))
    add("cat", "cat_axis1", [a, b, c], [0, 1, 2], lambda t: torch.cat(t, 1), axis=1)
    add("stack", "stack_axis1", [a, r((2, 3))], [0, 1], lambda t: torch.stack(t, 1), axis=1)
    add("split", "split_sizes", [r((5, 3))], [0], lambda t: torch.split(t[0], [2, 3], 0), sizes=[2, 3], axis=0)
    add("chunk", "chunk_axis1", [r((2, 7))], [0], lambda t: torch.chunk(t[0], 3, 1), chunks=3, axis=1)
    add("meshgrid", "meshgrid_xy", [r((3,)), r((4,))], [0, 1], lambda t: torch.meshgrid(*t, indexing="xy"), xy=1)
    add("repeat", "repeat", [r((2, 3))], [0], lambda t: t[0].repeat(2, 1, 3), repeats=[2, 1, 3])
    add("repeat_interleave", "repeat_interleave", [r((2, 3))], [0], lambda t: torch.repeat_interleave(t[0], 2, 1), repeats=2, axis=1)
    add("roll", "roll", [r((3, 4))], [0], lambda t: torch.roll(t[0], (1, -1), (0, 1)), shifts=[1, -1], axes=[0, 1])
    add("unfold", "unfold_overlap", [r((2, 7))], [0], lambda t: t[0].unfold(1, 3, 2), axis=1, size=3, step=2)
    add("unflatten", "unflatten", [r((2, 6))], [0], lambda t: t[0].unflatten(1, (3, 2)), axis=1, sizes=[3, 2])
    add("rearrange", "rearrange", [r((2, 3, 4))], [0], lambda t: t[0].reshape(2, 3, 2, 2).permute(0, 2, 3, 1),
        pattern=s("b c (h w) -> b h w c"), sizes=s("h=2"))
    add("tril", "tril", [r((3, 4))], [0], lambda t: torch.tril(t[0], 1), k=1)
    add("triu", "triu", [r((2, 3, 3))], [0], lambda t: torch.triu(t[0], -1), k=-1)
    add("diag", "diag_1d", [r((3,))], [0], lambda t: torch.diag(t[0], 1), k=1)
    add("diag", "diag_2d", [r((3, 4))], [0], lambda t: torch.diag(t[0], -1), k=-1)
    add("diagonal", "diagonal", [r((2, 3, 4))], [0], lambda t: torch.diagonal(t[0], 1, 2, 0), offset=1, axis1=2, axis2=0)
    for mode in ("constant", "reflect", "replicate", "circular"):
        add("pad_mode", "pad_" + mode, [r((1, 2, 3, 4))], [0], lambda t, m=mode: F.pad(t[0], [2, 1, -1, 2], m, 0.5) if m == "constant" else F.pad(t[0], [2, 1, 1, 2], m),
            pads=[2, 1, -1, 2] if mode == "constant" else [2, 1, 1, 2], mode=MODES[mode], value=0.5 if mode == "constant" else 0.0)
    # indexing: repeated indices accumulate their gradients
    x = r((4, 5))
    i1, i2 = np.array([1, 3, 1, 1], np.int64), np.array([[0, 4], [4, 4]], np.int64)
    add("getitem_adv", "getitem_dup_rows", [x, i1], [0], lambda t: t[0][t[1]], index=flat([TI(1)]))
    add("getitem_adv", "getitem_two_tensors", [x, i1, np.array([0, 4, 0, 2], np.int64)], [0], lambda t: t[0][t[1], t[2]], index=flat([TI(1), TI(2)]))
    add("getitem_adv", "getitem_slice_tensor", [x, i2], [0], lambda t: t[0][1:, t[1]], index=flat([SL(1), TI(1)]))
    add("index_select", "index_select_dups", [x, np.array([2, 2, 0], np.int64)], [0], lambda t: torch.index_select(t[0], 1, t[1]), axis=1)
    add("gather", "gather", [x, g.ints_((4, 6), 0, 4)], [0], lambda t: torch.gather(t[0], 1, t[1]), axis=1)
    add("scatter", "scatter", [x, np.array([[0, 1, 2, 3, 0], [2, 3, 0, 1, 3]], np.int64), r((2, 5))], [0, 2],
        lambda t: torch.scatter(t[0], 0, t[1], t[2]), axis=0)
    add("scatter_value", "scatter_value", [x, np.array([[1], [0], [3], [2]], np.int64)], [0],
        lambda t: torch.scatter(t[0], 1, t[1], 2.5), axis=1, value=2.5)
    idx = g.ints_((3, 5), 0, 3)
    for red in ("sum", "mean", "amax", "amin", "prod"):
        for inc in (1, 0):
            sv = r((3, 5)) if red != "prod" else g.uniform((3, 5), 0.5, 2.0)
            x0 = r((4, 5)) if red != "prod" else g.uniform((4, 5), 0.5, 2.0)
            add("scatter_reduce", "scatter_reduce_%s_%s" % (red, "self" if inc else "noself"), [x0, idx, sv], [0, 2],
                lambda t, rd=red, ic=inc: torch.scatter_reduce(t[0], 0, t[1], t[2], rd, include_self=bool(ic)),
                rtol=1e-5, atol=1e-6, axis=0, reduce=REDUCES[red], include_self=inc)
    add("masked_select", "masked_select", [r((3, 4)), g.rng.random((3, 4)) > 0.5], [0], lambda t: torch.masked_select(t[0], t[1]))
    return g


def main():
    os.makedirs(OUT, exist_ok=True)
    total, ncases = 0, {"forward": 0, "backward": 0}
    for gen in [gen_join, gen_shape, gen_tri, gen_pad, gen_index, gen_gather, gen_backward]:
        g = gen()
        path, n, size = g.write()
        total += size
        ncases["backward" if g.name == "backward" else "forward"] += n
        print("%-48s %4d cases %8d bytes" % (os.path.relpath(path), n, size))
    print("total %d bytes; %d forward and %d backward cases" % (total, ncases["forward"], ncases["backward"]))
    assert total < 1_000_000


if __name__ == "__main__":
    main()
