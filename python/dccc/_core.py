"""Loading a dccc-generated library and calling its functions.

The library describes itself (``dccc_module_info()``, docs/abi.md,
"Metadata"); from that description each function gets a ctypes struct per
argument and a plan that checks its arguments and fills the structs. A call
checks everything it can in Python (fields, dtypes, contiguity, devices,
shapes against the sizes), then lets the library's ``f_meta`` check the
lengths (negative lengths, lengths that do not sum to the data's rows,
``where`` constraints), allocates the fresh result fields from the sizes
``f_meta`` computed, and only then calls ``f``. Nothing is written before
every check has passed.
"""

import ctypes
import dataclasses
import json
import os
import re
import threading

import numpy as np

from . import _arrays

METADATA_VERSION = 1

# Tests set this to a list: every call then appends {(param, field): pointer}
# of the structs it passes (zero-copy checks, docs/python.md).
TRACE_POINTERS = None

STATUS_NAMES = {
    0: "DCC_OK",
    1: "DCC_ERR_NULL_POINTER",
    2: "DCC_ERR_INVALID_ARGUMENT",
    3: "DCC_ERR_NEGATIVE_LENGTH",
    4: "DCC_ERR_OVERFLOW",
    5: "DCC_ERR_SIZE_MISMATCH",
    6: "DCC_ERR_OUT_OF_MEMORY",
    7: "DCC_ERR_CUDA",
    8: "DCC_ERR_INTERNAL",
}


class Error(ValueError):
    """A generated function returned a ``dcc_status`` other than DCC_OK.

    ``status`` is the status's name (``"DCC_ERR_SIZE_MISMATCH"``), ``code``
    its value, ``function`` the function's name; the message is
    ``dcc_last_error()``'s.
    """

    def __init__(self, function, code, message):
        self.function = function
        self.code = code
        self.status = STATUS_NAMES.get(code, "DCC_ERR_UNKNOWN")
        text = message if message.startswith(function) else f"{function}: {message}"
        super().__init__(f"{text} [{self.status}]")


_CTYPE = {
    "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16, "f32": ctypes.c_float, "f64": ctypes.c_double,
    "i32": ctypes.c_int32, "i64": ctypes.c_int64, "bool": ctypes.c_uint8,
}


class Field:
    """One field of a coupling or tensor argument: its dtype and the shape
    of its packed array (``"*"`` first when ragged: the rows of every level
    before the dense trailing dimensions)."""

    __slots__ = ("name", "dtype", "dims", "shape", "lengths", "is_length", "bound", "ragged", "trailing")

    def __init__(self, d):
        self.name = d["name"]
        self.dtype = d["dtype"]
        self.dims = list(d["dims"])
        self.shape = list(d["shape"])
        self.lengths = list(d["lengths"])
        self.is_length = bool(d["is_length"])
        self.bound = d.get("bound")
        self.ragged = bool(self.shape) and self.shape[0] == "*"
        self.trailing = self.shape[1:] if self.ragged else self.shape


class Param:
    """A parameter or the result: kind ``coupling``, ``tensor``, ``scalar``
    or ``list``, its fields and the size members of its struct."""

    def __init__(self, d):
        self.name = d["name"]
        self.kind = d["kind"]
        self.type = d.get("type")
        self.struct_name = d.get("struct")
        self.dtype = d.get("dtype")
        self.element_shape = d.get("element_shape")
        self.fields = [Field(f) for f in d.get("fields", [])]
        self.sizes = [(s["member"], s.get("size"), s.get("value")) for s in d.get("sizes", [])]
        self.struct = None
        if self.kind in ("coupling", "tensor"):
            members = []
            for f in self.fields:
                members += [(f.name, ctypes.c_void_p), (f.name + "_len", ctypes.c_int64)]
            members += [(m, ctypes.c_int64) for m, _, _ in self.sizes]
            self.struct = type(self.struct_name or "S", (ctypes.Structure,), {"_fields_": members})
        elif self.kind == "list":
            members = [("data", ctypes.c_void_p), ("len", ctypes.c_void_p)]
            members += [(m, ctypes.c_int64) for m, _, _ in self.sizes]
            self.struct = type(self.struct_name or "S", (ctypes.Structure,), {"_fields_": members})
        self.field_names = frozenset(f.name for f in self.fields)
        # The length array a coupling's `cu_seqlens` stands for: its one
        # 1-D length field that is not itself ragged.
        plain = [f for f in self.fields if f.is_length and not f.ragged and len(f.shape) == 1]
        self.cu_field = plain[0] if len(plain) == 1 else None

    def type_text(self):
        if self.kind == "coupling":
            return self.type or "coupling"
        if self.kind == "scalar":
            return self.dtype
        if self.kind == "list":
            return f"list[[{', '.join(str(x) for x in self.element_shape)}]{self.dtype}]"
        f = self.fields[0]
        return f"[{', '.join(f.dims)}]{f.dtype}"


def _qualified_dims(param, field):
    """The extents of the field's packed rows (the dimensions its packed
    shape flattens into `*`) with sibling length arrays named by their
    parameter (`seqlen[b]` of `q` is `q.seqlen[b]`), for comparing rows."""
    out = []
    for d in field.dims[:len(field.dims) - len(field.shape) + 1]:
        for sib in param.fields:
            d = re.sub(r"(?<![\w.])" + re.escape(sib.name) + r"\[", param.name + "." + sib.name + "[", d)
        out.append(d)
    return tuple(out)


class Function:
    """A callable for one `.toy` function of a loaded library.

    Call with one argument per parameter (positionally or by name): a
    coupling as a mapping (dict, dataclass, named tuple) of its fields, or
    ``cu_seqlens`` in place of its length array, or a PyTorch nested tensor
    (jagged) when its only ragged field is the data; a tensor parameter as
    an array; a scalar as a number; a list as a sequence of arrays. Returns
    the result as the same kind of object: a dict of arrays for a coupling
    (fields bound to an argument are that argument's own array), an array
    for a tensor, a number for a scalar. ``out=`` (a dict, or an array for a
    tensor result) gives the fresh result fields' storage instead of
    allocating it; it is written only when every check has passed.
    """

    def __init__(self, library, meta):
        self.library = library
        self.meta = meta
        self.name = meta["name"]
        self.signature = meta["signature"]
        self.sizes = list(meta["sizes"])
        self.params = [Param(p) for p in meta["params"]]
        self.result = Param(meta["result"]) if meta.get("result") else None
        self.param_index = {p.name: k for k, p in enumerate(self.params)}
        lib = library._dll
        self._c = getattr(lib, self.name)
        self._c_meta = getattr(lib, self.name + "_meta")
        argtypes = []
        for p in self.params:
            argtypes.append(_CTYPE[p.dtype] if p.kind == "scalar" else ctypes.c_void_p)
        if self.result is not None:
            argtypes.append(ctypes.c_void_p)
        for fn in (self._c, self._c_meta):
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
        # Which input field a fresh result field has the rows of (same
        # extents): what the PyTorch fake implementation sizes it by.
        self.rows_like = {}
        if self.result is not None and self.result.kind != "scalar":
            inputs = {}
            for p in self.params:
                for f in p.fields:
                    if f.ragged:
                        inputs.setdefault(_qualified_dims(p, f), (p.name, f.name))
            for f in self.result.fields:
                if f.bound is None and f.ragged:
                    dims = tuple(f.dims[:len(f.dims) - len(f.shape) + 1])
                    # the result's own length fields are bound to arguments: name them so
                    for g in self.result.fields:
                        if g.bound:
                            dims = tuple(re.sub(r"(?<![\w.])" + re.escape(g.name) + r"\[",
                                                g.bound["param"] + "." + g.bound["field"] + "[", d) for d in dims)
                    if dims in inputs:
                        self.rows_like[f.name] = inputs[dims]
        # NumPy arrays are host memory: a CUDA library always takes the
        # general path, which refuses them with a clear TypeError.
        self._fast = _fast_plan(self) if library.target == "cpu" else None
        self.__name__ = self.name
        self.__qualname__ = self.name
        self.__doc__ = self._docstring()

    def _docstring(self):
        lines = [self.signature, ""]
        seen = set()
        for p in self.params + ([self.result] if self.result else []):
            if p.kind == "coupling" and p.type not in seen:
                seen.add(p.type)
                lines.append(f"type {p.type} = coupling {{")
                for f in p.fields:
                    lines.append(f"    {f.name}: [{', '.join(f.dims)}]{f.dtype},  # packed shape ({', '.join(map(str, f.shape))})")
                lines.append("}")
        lines += ["", f"Sizes: {', '.join(self.sizes) or 'none'}; read from the arguments' shapes.",
                  f"Library: {self.library.path} (target {self.library.target})."]
        if self.library.target == "cuda":
            lines.append("CUDA: arguments are CUDA tensors; the call runs on the default stream and "
                         "synchronises with the device before it returns.")
        return "\n".join(lines)

    def __repr__(self):
        return f"<dccc function {self.signature}>"

    # ---- binding -----------------------------------------------------------

    def _bind(self, args, kwargs):
        if len(args) > len(self.params):
            raise TypeError(f"{self.name}() takes {len(self.params)} argument(s), got {len(args)}")
        values = list(args) + [_MISSING] * (len(self.params) - len(args))
        for k, v in kwargs.items():
            i = self.param_index.get(k)
            if i is None:
                raise TypeError(f"{self.name}() got an unexpected argument `{k}`")
            if values[i] is not _MISSING:
                raise TypeError(f"{self.name}() got argument `{k}` twice")
            values[i] = v
        for p, v in zip(self.params, values):
            if v is _MISSING:
                raise TypeError(f"{self.name}() missing argument `{p.name}`")
        return values

    def __call__(self, *args, out=None, sizes=None, **kwargs):
        values = self._bind(args, kwargs) if kwargs or len(args) != len(self.params) else args
        if sizes is None and self._fast is not None and (out is None or type(out) is dict):
            res = _fast_call(self, values, out)
            if res is not _SLOW:
                return res
        return self.call(values, out=out, sizes=sizes)

    def call(self, values, out=None, sizes=None, want_nested=True, allow_grad=False):
        """The call, with arguments already in parameter order."""
        plan = _CallPlan(self, sizes, allow_grad)
        for p, v in zip(self.params, values):
            plan.add_param(p, v)
        plan.finish_sizes()
        structs = plan.fill_structs()
        if self.result is None:
            st = self._c(*structs)
            self.library._check(self.name, st)
            return None
        if self.result.kind == "scalar":
            res = _CTYPE[self.result.dtype]()
            st = self._c_meta(*structs, ctypes.addressof(res))
            self.library._check(self.name, st)
            st = self._c(*structs, ctypes.addressof(res))
            self.library._check(self.name, st)
            if self.result.dtype in ("f16", "bf16"):
                return _arrays.half_value(res.value, self.result.dtype)
            return res.value
        res = self.result.struct()
        st = self._c_meta(*structs, ctypes.addressof(res))
        self.library._check(self.name, st)
        fresh = plan.allocate_result(res, out)
        with plan.device_guard():
            st = self._c(*structs, ctypes.addressof(res))
        self.library._check(self.name, st)
        return plan.result_object(res, fresh, want_nested)


_MISSING = object()
_SLOW = object()


def _ptr(a):
    """A NumPy array's data pointer (ctypes' from_buffer is 4x faster than
    a.ctypes.data where it applies: writeable and not empty)."""
    if a.flags.writeable and a.size:
        return ctypes.addressof(_CCHAR.from_buffer(a))
    return a.ctypes.data


_CCHAR = ctypes.c_char
_FLOATS = ("f32", "f64")  # f16 and bf16 scalars are bit patterns: the general path converts them
_INT_RANGE = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1)}


def _fast_plan(fn):
    """What _fast_call needs of each parameter and the result, precomputed;
    None when the function has a list parameter (the general path then)."""
    params = []
    for p in fn.params:
        if p.kind == "list":
            return None
        if p.kind == "scalar":
            params.append((2, p.dtype, None, None, None))
            continue
        fields = []
        for f in p.fields:
            spec = tuple((i, s) for i, s in enumerate(f.shape) if s != "*")
            fields.append((f.name, _arrays.NUMPY_DTYPES[f.dtype], len(f.shape), spec))
        members = tuple((size, value) for _, size, value in p.sizes)
        params.append((0 if p.kind == "coupling" else 1, p.name, p.struct, tuple(fields), members))
    r = fn.result
    if r is None or r.kind == "scalar":
        return None
    fresh, bound = [], []
    for f in r.fields:
        if f.bound:
            bound.append((f.name, fn.param_index[f.bound["param"]], f.bound["field"],
                          fn.params[fn.param_index[f.bound["param"]]].kind))
        else:
            fresh.append((f.name, _arrays.NUMPY_DTYPES[f.dtype], f.ragged, tuple(f.trailing)))
    return tuple(params), (r.struct, tuple(fresh), tuple(bound), r.kind, r.fields[0].name)


def _fast_call(fn, values, given=None):
    """The common call -- NumPy arrays that are right, dicts of exactly the
    fields, numbers -- with the fewest Python operations (bench/python/
    overhead.py). Anything else, or anything wrong, returns _SLOW before
    calling the library, and the general path gives the result or the
    precise error."""
    params, (R, fresh, bound, rkind, rfirst) = fn._fast
    sizes = {}
    structs = []
    keep = []
    ndarray = np.ndarray
    for (kind, pname, S, fields, members), v in zip(params, values):
        if kind == 2:  # pname holds the dtype
            t = type(v)
            if t is float and pname in _FLOATS:
                structs.append(v)
                continue
            if t is int and pname in _INT_RANGE:
                lo, hi = _INT_RANGE[pname]
                if lo <= v <= hi:
                    structs.append(v)
                    continue
            elif t is int and pname in _FLOATS:
                structs.append(v)
                continue
            return _SLOW
        if kind == 0:
            if type(v) is not dict or len(v) != len(fields):
                return _SLOW
        elif type(v) is ndarray:
            v = {fields[0][0]: v}
        else:
            return _SLOW
        args = []
        for name, dt, ndim, spec in fields:
            a = v.get(name)
            if type(a) is not ndarray or a.dtype != dt or not a.flags.c_contiguous:
                return _SLOW
            shp = a.shape
            if len(shp) != ndim:
                return _SLOW
            for i, s in spec:
                n = shp[i]
                if s.__class__ is int:
                    if n != s:
                        return _SLOW
                    continue
                h = sizes.get(s)
                if h is None:
                    sizes[s] = n
                elif h != n:
                    return _SLOW
            args.append(_ptr(a))
            args.append(a.size)
        for size, value in members:
            if size is None:
                args.append(value)
            else:
                n = sizes.get(size)
                if n is None:
                    return _SLOW
                args.append(n)
        st = S(*args)
        keep.append(st)
        structs.append(ctypes.addressof(st))
    if given is not None and len(given) > len(fresh):
        return _SLOW
    res = R()
    addr = ctypes.addressof(res)
    code = fn._c_meta(*structs, addr)
    if code:
        fn.library._check(fn.name, code)
    out = {}
    for name, dt, ragged, trailing in fresh:
        shape = tuple(sizes[s] if s.__class__ is str else s for s in trailing)
        if ragged:
            per_row = 1
            for x in shape:
                per_row *= x
            shape = ((getattr(res, name + "_len") // per_row) if per_row else 0,) + shape
        if given is None:
            a = np.empty(shape, dt)
        else:
            a = given.get(name)
            if (type(a) is not ndarray or a.dtype != dt or not a.flags.c_contiguous or not a.flags.writeable
                    or a.shape != shape):
                return _SLOW
        setattr(res, name, _ptr(a))
        out[name] = a
    code = fn._c(*structs, addr)
    if code:
        fn.library._check(fn.name, code)
    if rkind == "tensor":
        return out[rfirst]
    for name, pidx, field, pkind in bound:
        v = values[pidx]
        out[name] = v[field] if type(v) is dict else v
    return {f.name: out[f.name] for f in fn.result.fields}


class _CallPlan:
    """What one call needs: the arrays of every field, the sizes read from
    their shapes, the structs."""

    def __init__(self, fn, sizes, allow_grad=False):
        self.fn = fn
        self.allow_grad = allow_grad
        self.sizes = {}
        self.size_from = {}
        if sizes:
            for k, v in sizes.items():
                if k not in fn.sizes:
                    raise TypeError(f"{fn.name}(): `sizes` names `{k}`, which is not a size of the function "
                                    f"({', '.join(fn.sizes) or 'none'})")
                self.sizes[k] = int(v)
                self.size_from[k] = "sizes="
        self.kind = None          # "numpy" or "torch", from the first array
        self.device = None        # torch: the device of the arrays
        self.params = []          # (param, {field: array}, original, extra)
        self.scalars = {}
        self.lists = {}
        self.keep = []            # objects whose memory the structs point to
        self.nested = None        # the nested-tensor argument (param name, tensor)

    # -- arrays ---------------------------------------------------------------

    def array(self, where, dtype, a):
        kind = _arrays.kind_of(a)
        if kind is None:
            raise TypeError(f"{where}: expected a NumPy array or a PyTorch tensor, got {type(a).__name__}")
        if self.kind is None:
            self.kind = kind
        elif kind != self.kind:
            raise TypeError(f"{where}: a {_arrays.KIND_TEXT[kind]} among {_arrays.KIND_TEXT[self.kind]}s; "
                            f"pass all arrays of one call as NumPy arrays or all as PyTorch tensors")
        _arrays.check(where, a, kind, dtype, self.fn.library.target, self.allow_grad)
        if kind == "torch":
            dev = a.device
            if self.device is None:
                self.device = dev
            elif dev != self.device:
                raise ValueError(f"{where}: on {dev}, other arguments on {self.device}")
        return a

    def read_sizes(self, where, shape, spec):
        if len(shape) != len(spec):
            raise ValueError(f"{where}: expected {len(spec)} dimension(s) ({', '.join(map(str, spec))}), "
                             f"got shape {tuple(shape)}")
        for n, s in zip(shape, spec):
            if s == "*":
                continue
            n = int(n)
            if isinstance(s, int):
                if n != s:
                    raise ValueError(f"{where}: shape {tuple(shape)} needs {s} where it has {n} "
                                     f"(expected ({', '.join(map(str, spec))}))")
                continue
            have = self.sizes.get(s)
            if have is None:
                self.sizes[s] = n
                self.size_from[s] = where
            elif have != n:
                raise ValueError(f"{where}: size {s} is {n} in shape {tuple(shape)}, but {have} from "
                                 f"{self.size_from[s]}")

    # -- parameters -----------------------------------------------------------

    def add_param(self, p, v):
        where = f"{self.fn.name}(): argument `{p.name}`"
        if p.kind == "scalar":
            if _arrays.kind_of(v) is not None:
                if getattr(v, "ndim", 1) != 0 and getattr(v, "shape", None) != ():
                    raise TypeError(f"{where}: expected a {p.dtype} number, got an array")
                v = v.item()
            if isinstance(v, bool) and p.dtype != "bool":
                raise TypeError(f"{where}: expected a {p.dtype} number, got a bool")
            if not isinstance(v, (int, float, bool, np.number, np.bool_)):
                raise TypeError(f"{where}: expected a {p.dtype} number, got {type(v).__name__}")
            if p.dtype in _INT_RANGE:
                if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                    raise TypeError(f"{where}: expected an integer ({p.dtype}), got {type(v).__name__}")
                lo, hi = _INT_RANGE[p.dtype]
                if not lo <= int(v) <= hi:
                    raise ValueError(f"{where}: {v} is out of range for {p.dtype}")
                v = int(v)
            elif p.dtype == "bool":
                if not isinstance(v, (bool, np.bool_)):
                    raise TypeError(f"{where}: expected a bool, got {type(v).__name__}")
                v = int(bool(v))
            elif p.dtype in ("f16", "bf16"):
                v = _arrays.half_bits(v, p.dtype)
            else:
                v = float(v)
            self.scalars[p.name] = v
            return
        if p.kind == "list":
            self.add_list(p, v, where)
            return
        fields = {}
        original = v
        if p.kind == "tensor":
            if isinstance(v, dict) or _arrays.kind_of(v) is None:
                v = _as_mapping(v, where, p)
                fields = self.take_fields(p, v, where)
            else:
                fields = {p.fields[0].name: v}
        else:
            if _arrays.is_nested(v):
                fields = self.from_nested(p, v, where)
            else:
                fields = self.take_fields(p, _as_mapping(v, where, p), where)
        checked = {}
        for f in p.fields:
            a = self.array(f"{where}, field `{f.name}`", f.dtype, fields[f.name])
            self.read_sizes(f"{where}, field `{f.name}`", a.shape, f.shape)
            checked[f.name] = a
        self.params.append((p, checked, original))

    def take_fields(self, p, m, where):
        keys = set(m.keys())
        fields = dict(m)
        if "cu_seqlens" in keys and "cu_seqlens" not in p.field_names:
            cf = p.cu_field
            if cf is None:
                raise TypeError(f"{where}: `cu_seqlens` given, but `{p.type_text()}` has no single length array "
                                f"it could stand for")
            if cf.name in keys:
                raise TypeError(f"{where}: both `cu_seqlens` and `{cf.name}` given; pass one")
            cu = fields.pop("cu_seqlens")
            keys.discard("cu_seqlens")
            fields[cf.name] = _arrays.lengths_from_offsets(f"{where}, `cu_seqlens`", cu, cf.dtype)
            keys.add(cf.name)
        missing = [f.name for f in p.fields if f.name not in keys]
        extra = sorted(k for k in keys if k not in p.field_names)
        if missing:
            raise TypeError(f"{where}: missing field(s) {', '.join('`' + k + '`' for k in missing)} of "
                            f"`{p.type_text()}` (fields: {', '.join(f.name for f in p.fields)})")
        if extra:
            raise TypeError(f"{where}: unknown field(s) {', '.join('`' + str(k) + '`' for k in extra)} for "
                            f"`{p.type_text()}` (fields: {', '.join(f.name for f in p.fields)})")
        return fields

    def from_nested(self, p, nt, where):
        ragged = [f for f in p.fields if not f.is_length]
        lens = [f for f in p.fields if f.is_length]
        if len(ragged) != 1 or len(lens) != 1 or not ragged[0].ragged or lens[0].ragged:
            raise TypeError(f"{where}: a nested tensor stands for a coupling with one ragged data field and one "
                            f"length array; `{p.type_text()}` has fields {', '.join(f.name for f in p.fields)}")
        values, lengths = _arrays.nested_parts(where, nt, lens[0].dtype)
        self.nested = (p.name, nt)
        return {ragged[0].name: values, lens[0].name: lengths}

    def add_list(self, p, v, where):
        if _arrays.kind_of(v) is not None or isinstance(v, (dict, str, bytes)):
            raise TypeError(f"{where}: expected a list of arrays, got {type(v).__name__}")
        try:
            items = list(v)
        except TypeError:
            raise TypeError(f"{where}: expected a list of arrays, got {type(v).__name__}") from None
        spec = ["*"] + list(p.element_shape[1:])
        for k, a in enumerate(items):
            w = f"{where}, element {k}"
            a = self.array(w, p.dtype, a)
            self.read_sizes(w, a.shape, spec)
            items[k] = a
        count = next(s for m, s, _ in p.sizes if m == "count")
        self.read_sizes(f"{where} (its length)", (len(items),), [count])
        self.lists[p.name] = items

    def finish_sizes(self):
        missing = [s for s in self.fn.sizes if s not in self.sizes]
        if missing:
            raise TypeError(f"{self.fn.name}(): the size(s) {', '.join(missing)} cannot be read from the arguments' "
                            f"shapes; pass them as sizes={{{', '.join(repr(s) + ': ...' for s in missing)}}}")
        if self.kind == "torch" and self.fn.library.target == "cuda" and self.device is None:
            raise TypeError(f"{self.fn.name}(): a CUDA library needs CUDA tensors")

    # -- structs --------------------------------------------------------------

    def size_value(self, size, value):
        return value if size is None else self.sizes[size]

    def fill_structs(self):
        out = []
        byname = {p.name: (p, fields) for p, fields, _ in self.params}
        ptr = _arrays.POINTER[self.kind] if self.kind else None
        traced = {}
        for p in self.fn.params:
            if p.kind == "scalar":
                out.append(self.scalars[p.name])
                continue
            s = p.struct()
            if p.kind == "list":
                items = self.lists[p.name]
                n = len(items)
                data = (ctypes.c_void_p * max(n, 1))(*[ptr(a) if _arrays.numel(a) else None for a in items])
                lens = (ctypes.c_int32 * max(n, 1))(*[int(a.shape[0]) for a in items])
                s.data = ctypes.addressof(data)
                s.len = ctypes.addressof(lens)
                self.keep += [data, lens]
            else:
                _, fields = byname[p.name]
                for f in p.fields:
                    a = fields[f.name]
                    setattr(s, f.name, ptr(a))
                    traced[(p.name, f.name)] = getattr(s, f.name)
                    setattr(s, f.name + "_len", _arrays.numel(a))
            for member, size, value in p.sizes:
                setattr(s, member, self.size_value(size, value))
            self.keep.append(s)
            out.append(ctypes.addressof(s))
        if TRACE_POINTERS is not None:
            TRACE_POINTERS.append(traced)
        return out

    def allocate_result(self, res, out):
        r = self.fn.result
        if out is not None and r.kind == "tensor" and _arrays.kind_of(out) is not None:
            out = {r.fields[0].name: out}
        if out is not None and not isinstance(out, dict):
            raise TypeError(f"{self.fn.name}(): `out` must be a dict of the result's fresh fields")
        fresh = {}
        fresh_names = [f.name for f in r.fields if not f.bound]
        if out is not None:
            extra = sorted(k for k in out if k not in fresh_names)
            if extra:
                raise TypeError(f"{self.fn.name}(): `out` names {', '.join('`' + k + '`' for k in extra)}, not a "
                                f"fresh field of the result (fresh: {', '.join(fresh_names) or 'none'})")
        for f in r.fields:
            if f.bound:
                continue
            n = getattr(res, f.name + "_len")
            shape = self.result_shape(f, n)
            where = f"{self.fn.name}(): `out` field `{f.name}`"
            if out is not None and f.name in out:
                a = self.array(where, f.dtype, out[f.name])
                if tuple(a.shape) != shape:
                    raise ValueError(f"{where}: expected shape {shape}, got {tuple(a.shape)}")
            else:
                a = _arrays.empty(self.kind or "numpy", shape, f.dtype, self.device)
            fresh[f.name] = a
            setattr(res, f.name, _arrays.POINTER[self.kind or "numpy"](a))
        return fresh

    def result_shape(self, f, n):
        trailing = [self.size_value(s, s) if not isinstance(s, int) else s for s in f.trailing]
        if not f.ragged:
            return tuple(int(x) for x in trailing)
        per_row = 1
        for x in trailing:
            per_row *= int(x)
        rows = n // per_row if per_row else 0
        return (rows,) + tuple(int(x) for x in trailing)

    def device_guard(self):
        return _arrays.device_guard(self.kind, self.device)

    def result_object(self, res, fresh, want_nested):
        r = self.fn.result
        byname = {p.name: (fields, original) for p, fields, original in self.params}
        d = {}
        for f in r.fields:
            if f.bound:
                fields, original = byname[f.bound["param"]]
                d[f.name] = fields[f.bound["field"]]
            else:
                d[f.name] = fresh[f.name]
        if r.kind == "tensor":
            return d[r.fields[0].name]
        if want_nested and self.nested is not None:
            nt = _arrays.nested_result(self.fn, r, d, self.nested)
            if nt is not None:
                return nt
        return d


def _as_mapping(v, where, p):
    if isinstance(v, dict):
        return v
    if hasattr(v, "keys") and hasattr(v, "__getitem__"):
        return {k: v[k] for k in v.keys()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
    if hasattr(v, "_asdict"):
        return dict(v._asdict())
    raise TypeError(f"{where}: expected the fields of `{p.type_text()}` as a mapping, dataclass or named tuple "
                    f"({', '.join(f.name for f in p.fields)}), got {type(v).__name__}")


class Library:
    """A loaded dccc library: ``lib.f`` is a :class:`Function` per `.toy`
    function; ``lib.info`` the parsed metadata (docs/abi.md, "Metadata")."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        try:
            self._dll = ctypes.CDLL(self.path)
        except OSError as e:
            raise OSError(f"dccc.load: cannot load `{path}`: {e}") from None
        try:
            info_fn = self._dll.dccc_module_info
        except AttributeError:
            raise ValueError(f"dccc.load: `{path}` has no dccc_module_info(); rebuild it with a dccc that writes "
                             f"metadata (docs/abi.md, \"Metadata\")") from None
        info_fn.restype = ctypes.c_char_p
        info_fn.argtypes = []
        self.info_text = info_fn().decode("utf-8")
        self.info = json.loads(self.info_text)
        if self.info.get("format") != "dccc-module-info":
            raise ValueError(f"dccc.load: `{path}`: metadata of an unknown format")
        if self.info.get("version") != METADATA_VERSION:
            raise ValueError(f"dccc.load: `{path}`: metadata version {self.info.get('version')}, this package "
                             f"reads version {METADATA_VERSION}")
        self.target = self.info["target"]
        self._dll.dcc_last_error.restype = ctypes.c_char_p
        self._dll.dcc_last_error.argtypes = []
        self.functions = {}
        for fm in self.info["functions"]:
            fn = Function(self, fm)
            self.functions[fn.name] = fn
            setattr(self, fn.name, fn)
        self.ops = None

    def _check(self, name, st):
        if st != 0:
            raise Error(name, st, self._dll.dcc_last_error().decode("utf-8", "replace"))

    def set_num_threads(self, n):
        """The CPU thread pool's size (``dcc_set_num_threads``)."""
        self._dll.dcc_set_num_threads.argtypes = [ctypes.c_int]
        self._dll.dcc_set_num_threads(int(n))

    def __dir__(self):
        return list(self.functions) + ["functions", "info", "info_text", "path", "target", "ops", "set_num_threads"]

    def __repr__(self):
        return f"<dccc library {self.path} ({self.target}): {', '.join(self.functions)}>"


_loaded = {}
_lock = threading.Lock()


def load(path, *, torch_namespace=None):
    """Loads a library written by ``dccc prog.toy -o prog.so`` (either
    target). With ``torch_namespace`` (e.g. ``"dccc"``), also registers each
    function as the PyTorch custom operator ``torch.ops.NAMESPACE.f``
    (``lib.ops.f`` calls it; docs/python.md). Loading one path twice gives
    the same object."""
    key = os.path.realpath(path)
    with _lock:
        lib = _loaded.get(key)
        if lib is None:
            lib = _loaded[key] = Library(path)
    if torch_namespace is not None and lib.ops is None:
        from . import torch_ops
        lib.ops = torch_ops.register(lib, torch_namespace)
    return lib
