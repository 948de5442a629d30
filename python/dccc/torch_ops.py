"""The functions of a dccc library as PyTorch custom operators
(``torch.library.custom_op``, PyTorch >= 2.4), so that models calling them
run under ``torch.compile(fullgraph=True)``, pass ``torch.library.opcheck``
and run inside PyTorch's distributed engines (docs/python.md, "PyTorch").

An operator takes the fields flattened: for ``fn mha(q: PackedQueries, kv:
PackedKV) PackedQueries`` the schema is ``dccc::mha(Tensor q_data, Tensor
q_seqlen, Tensor kv_k, Tensor kv_v, Tensor kv_seqlen) -> Tensor``: one
tensor per field, a number per scalar, ``Tensor[]`` per list, an ``int``
per size no shape gives (``size_N``), and it returns the result's fresh
fields (a result field bound to an argument is that argument, which an
operator may not return). ``lib.ops.mha`` takes and returns what
``lib.mha`` does -- dicts, ``cu_seqlens``, jagged nested tensors (whose
values are passed to the operator as they are: zero-copy) -- and calls the
operator in between.

The fake (meta) implementation sizes each fresh field from the same sizes
``f_meta`` computes: dense fields from the sizes in the arguments' shapes;
a ragged field whose rows have the extents of an argument field's rows
(``data`` of mha's result and ``q.data``: both ``[B, q.seqlen[b]]`` before
``H, D``) has that field's row count; any other ragged field a
data-dependent row count (``get_ctx().new_dynamic_size()``).
"""

import re
import types

from . import _arrays
from ._core import _as_mapping

_SCALAR_SCHEMA = {"f16": "float", "bf16": "float", "f32": "float", "f64": "float", "i32": "int", "i64": "int",
                  "bool": "bool"}


def _torch():
    import torch

    return torch


def supported():
    """None when custom operators can be registered, else why not."""
    try:
        torch = _torch()
    except ImportError:
        return "PyTorch is not installed"
    lib = getattr(torch, "library", None)
    if lib is None or not hasattr(lib, "custom_op") or not hasattr(lib, "register_fake"):
        return f"PyTorch {torch.__version__} has no torch.library.custom_op (needs 2.4 or later)"
    return None


class _OpSpec:
    """How one function's arguments flatten into the operator's."""

    def __init__(self, fn):
        self.fn = fn
        shape_sizes = set()
        for p in fn.params:
            for f in p.fields:
                shape_sizes.update(s for s in f.shape if isinstance(s, str) and s != "*")
            if p.kind == "list":
                shape_sizes.update(s for s in p.element_shape[1:] if isinstance(s, str))
                shape_sizes.update(s for m, s, _ in p.sizes if m == "count")
        self.extra_sizes = [s for s in fn.sizes if s not in shape_sizes]
        args = []
        for p in fn.params:
            if p.kind == "scalar":
                args.append(f"{_SCALAR_SCHEMA[p.dtype]} {p.name}")
            elif p.kind == "list":
                args.append(f"Tensor[] {p.name}")
            else:
                args += [f"Tensor {p.name}_{f.name}" for f in p.fields]
        args += [f"int size_{re.sub(r'[^A-Za-z0-9_]', '_', s)}" for s in self.extra_sizes]
        r = fn.result
        self.fresh = [f for f in r.fields if not f.bound] if r is not None and r.kind != "scalar" else []
        ret = "()" if not self.fresh else ("Tensor" if len(self.fresh) == 1 else
                                           "(" + ", ".join("Tensor" for _ in self.fresh) + ")")
        self.schema = f"({', '.join(args)}) -> {ret}"

    def unflatten(self, flat):
        """Operator arguments -> (values in parameter order, sizes)."""
        values, k = [], 0
        for p in self.fn.params:
            if p.kind in ("scalar", "list"):
                values.append(flat[k])
                k += 1
            else:
                d = {f.name: flat[k + i] for i, f in enumerate(p.fields)}
                k += len(p.fields)
                values.append(d[p.fields[0].name] if p.kind == "tensor" else d)
        sizes = {s: int(flat[k + i]) for i, s in enumerate(self.extra_sizes)}
        return values, sizes

    def flatten(self, values, sizes):
        """Wrapper arguments (mappings, cu_seqlens, nested tensors) -> the
        operator's, and what reassembling the result needs. Traceable: no
        host synchronisation (the library checks the lengths)."""
        torch = _torch()
        flat, fields_of, nested = [], {}, None
        for p, v in zip(self.fn.params, values):
            where = f"{self.fn.name}(): argument `{p.name}`"
            if p.kind == "scalar":
                flat.append(v)
                continue
            if p.kind == "list":
                flat.append(list(v))
                continue
            if p.kind == "tensor":
                d = {p.fields[0].name: v} if isinstance(v, torch.Tensor) else _mapping(v, where, p)
            elif isinstance(v, torch.Tensor) and v.is_nested:
                d = _nested_fields(p, v, where)
                nested = (p.name, v)
            else:
                d = _mapping(v, where, p)
                if "cu_seqlens" in d and "cu_seqlens" not in p.field_names and p.cu_field is not None:
                    if p.cu_field.name in d:
                        raise TypeError(f"{where}: both `cu_seqlens` and `{p.cu_field.name}` given; pass one")
                    cu = d.pop("cu_seqlens")
                    d[p.cu_field.name] = (cu[1:] - cu[:-1]).to(_arrays.torch_dtypes()[p.cu_field.dtype])
            missing = [f.name for f in p.fields if f.name not in d]
            extra = sorted(k for k in d if k not in p.field_names)
            if missing or extra:
                raise TypeError(f"{where}: fields {sorted(d)} do not match `{p.type_text()}` "
                                f"({', '.join(f.name for f in p.fields)})")
            for f in p.fields:
                t = d[f.name]
                if not isinstance(t, torch.Tensor):
                    raise TypeError(f"{where}, field `{f.name}`: expected a PyTorch tensor, got {type(t).__name__}")
                if t.requires_grad and torch.is_grad_enabled():
                    raise TypeError(f"{where}, field `{f.name}`: requires_grad=True, but dccc operators have no "
                                    f"backward yet; call under torch.no_grad() or pass .detach()")
                flat.append(t)
            fields_of[p.name] = d
        missing = [s for s in self.extra_sizes if s not in (sizes or {})]
        if missing:
            raise TypeError(f"{self.fn.name}(): the size(s) {', '.join(missing)} cannot be read from the arguments' "
                            f"shapes; pass sizes={{...}}")
        flat += [int(sizes[s]) for s in self.extra_sizes]
        return flat, fields_of, nested

    def assemble(self, outputs, fields_of, nested):
        r = self.fn.result
        if r is None:
            return None
        if not isinstance(outputs, (tuple, list)):
            outputs = (outputs,)
        fresh = dict(zip((f.name for f in self.fresh), outputs))
        d = {}
        for f in r.fields:
            d[f.name] = fields_of[f.bound["param"]][f.bound["field"]] if f.bound else fresh[f.name]
        if r.kind == "tensor":
            return d[r.fields[0].name]
        if nested is not None:
            nt = _arrays.nested_result(self.fn, r, d, nested)
            if nt is not None:
                return nt
        return d


def _mapping(v, where, p):
    return dict(_as_mapping(v, where, p))


def _nested_fields(p, nt, where):
    ragged = [f for f in p.fields if not f.is_length]
    lens = [f for f in p.fields if f.is_length]
    if len(ragged) != 1 or len(lens) != 1 or not ragged[0].ragged:
        raise TypeError(f"{where}: a nested tensor stands for a coupling with one ragged data field and one length "
                        f"array; `{p.type_text()}` has {', '.join(f.name for f in p.fields)}")
    values, lengths = _arrays.nested_parts(where, nt, lens[0].dtype)
    return {ragged[0].name: values, lens[0].name: lengths}


def _fake_impl(spec):
    torch = _torch()
    fn = spec.fn

    def fake(*flat):
        values, extra = spec.unflatten(flat)
        sizes = dict(extra)
        device = None
        field_rows = {}
        for p, v in zip(fn.params, values):
            if p.kind == "scalar":
                continue
            if p.kind == "list":
                count = next(s for m, s, _ in p.sizes if m == "count")
                sizes.setdefault(count, len(v))
                for t in v:
                    device = device or t.device
                    for s, n in zip(p.element_shape[1:], t.shape[1:]):
                        if isinstance(s, str):
                            sizes.setdefault(s, n)
                continue
            d = {p.fields[0].name: v} if p.kind == "tensor" else v
            for f in p.fields:
                t = d[f.name]
                device = device or t.device
                field_rows[(p.name, f.name)] = t.shape[0] if t.dim() else 1
                for s, n in zip(f.shape, t.shape):
                    if isinstance(s, str) and s != "*":
                        sizes.setdefault(s, n)
        outs = []
        for f in spec.fresh:
            trailing = [sizes[s] if isinstance(s, str) else s for s in f.trailing]
            if not f.ragged:
                shape = trailing
            elif f.name in fn.rows_like:
                shape = [field_rows[fn.rows_like[f.name]]] + trailing
            else:
                shape = [torch.library.get_ctx().new_dynamic_size()] + trailing
            outs.append(torch.empty(shape, dtype=_arrays.torch_dtypes()[f.dtype], device=device))
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    return fake


def _impl(spec):
    fn = spec.fn

    def impl(*flat):
        values, sizes = spec.unflatten(flat)
        res = fn.call(values, sizes=sizes or None, want_nested=False, allow_grad=True)
        if isinstance(res, dict):
            outs = [res[f.name] for f in spec.fresh]
        else:
            outs = [res]
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    return impl


class OpFunction:
    """``lib.ops.f``: calls the operator ``torch.ops.NS.f`` with what
    ``lib.f`` takes, and returns what ``lib.f`` returns."""

    def __init__(self, spec, op, qualname):
        self.spec = spec
        self.op = op
        self.qualname = qualname
        self.__name__ = spec.fn.name
        note = ("\n\nCUDA: the call synchronises (the library runs on the device's default stream and returns "
                "after its kernels; PyTorch's current stream is synchronised first)." if spec.fn.library.target ==
                "cuda" else "")
        self.__doc__ = f"PyTorch operator {qualname}{spec.schema}\n\n{spec.fn.__doc__}{note}"

    def __call__(self, *args, sizes=None, **kwargs):
        values = self.spec.fn._bind(args, kwargs)
        flat, fields_of, nested = self.spec.flatten(values, sizes)
        return self.spec.assemble(self.op(*flat), fields_of, nested)

    def __repr__(self):
        return f"<dccc operator {self.qualname}{self.spec.schema}>"


def register(lib, namespace="dccc"):
    """Registers every function of `lib` that has no scalar result as the
    operator ``torch.ops.NAMESPACE.NAME``; returns a namespace of
    OpFunction wrappers (``lib.ops``)."""
    why = supported()
    if why is not None:
        raise RuntimeError(f"dccc: cannot register PyTorch operators: {why}")
    torch = _torch()
    device = "cuda" if lib.target == "cuda" else "cpu"
    ops = types.SimpleNamespace()
    for fn in lib.functions.values():
        if fn.result is not None and fn.result.kind == "scalar":
            continue  # an operator returns tensors; call lib.f instead
        spec = _OpSpec(fn)
        qualname = f"{namespace}::{fn.name}"
        if hasattr(getattr(torch.ops, namespace), fn.name):
            raise RuntimeError(f"dccc: the operator {qualname} exists already (another library's `{fn.name}`?); "
                               f"load this one with another torch_namespace")
        op = torch.library.custom_op(qualname, _impl(spec), mutates_args=(), device_types=device,
                                     schema=spec.schema)
        op.register_fake(_fake_impl(spec))
        setattr(ops, fn.name, OpFunction(spec, op, qualname))
    return ops
