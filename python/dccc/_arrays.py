"""NumPy arrays and PyTorch tensors behind one small interface: what a call
checks on each field (dtype, contiguity, device), its data pointer and
element count, allocation of results, `cu_seqlens` and nested tensors.

PyTorch is imported only when the caller has imported it already (a tensor
can only come from a program that did), so NumPy-only use never loads it.
"""

import contextlib
import sys

import numpy as np

KIND_TEXT = {"numpy": "NumPy array", "torch": "PyTorch tensor"}

NUMPY_DTYPES = {
    "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64), "bool": np.dtype(np.bool_),
}


def half_bits(v, dtype):
    """The uint16 bit pattern of number `v` as f16 or bf16 (rounded to
    nearest even), for a scalar argument."""
    if dtype == "f16":
        return int(np.array(v, np.float16).view(np.uint16))
    u = int(np.array(v, np.float32).view(np.uint32))
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def half_value(bits, dtype):
    """The number whose f16 or bf16 bit pattern is `bits` (a scalar result)."""
    if dtype == "f16":
        return float(np.array(bits, np.uint16).view(np.float16))
    return float(np.array(bits << 16, np.uint32).view(np.float32))


def _torch():
    return sys.modules.get("torch")


def torch_dtypes():
    t = _torch()
    return {"f16": t.float16, "bf16": t.bfloat16, "f32": t.float32, "f64": t.float64, "i32": t.int32,
            "i64": t.int64, "bool": t.bool}


def kind_of(a):
    if isinstance(a, np.ndarray):
        return "numpy"
    t = _torch()
    if t is not None and isinstance(a, t.Tensor):
        return "torch"
    return None


def is_nested(a):
    t = _torch()
    return t is not None and isinstance(a, t.Tensor) and a.is_nested


def check(where, a, kind, dtype, target, allow_grad=False):
    """Raises TypeError (wrong dtype, device kind, autograd) or ValueError
    (not contiguous) naming `where`."""
    if kind == "numpy":
        want = NUMPY_DTYPES[dtype]
        if a.dtype != want:
            note = " (bf16 as uint16 bit patterns in NumPy)" if dtype == "bf16" else ""
            raise TypeError(f"{where}: expected dtype {want} ({dtype}){note}, got {a.dtype}")
        if not a.flags.c_contiguous:
            raise ValueError(f"{where}: not C-contiguous (strides {a.strides}); pass np.ascontiguousarray(...)")
        if target == "cuda":
            raise TypeError(f"{where}: a NumPy array for a CUDA library; pass a CUDA tensor")
        return
    t = _torch()
    if a.is_nested:
        raise TypeError(f"{where}: a nested tensor where a field's packed tensor is expected")
    want = torch_dtypes()[dtype]
    if a.dtype != want:
        raise TypeError(f"{where}: expected dtype {want} ({dtype}), got {a.dtype}")
    if a.requires_grad and t.is_grad_enabled() and not allow_grad:
        raise TypeError(f"{where}: requires_grad=True, but dccc functions have no backward yet; "
                        f"call under torch.no_grad() or pass .detach()")
    if target == "cuda" and a.device.type != "cuda":
        raise TypeError(f"{where}: on {a.device}, but the library's target is cuda")
    if target == "cpu" and a.device.type != "cpu":
        raise TypeError(f"{where}: on {a.device}, but the library's target is cpu")
    if not a.is_contiguous():
        raise ValueError(f"{where}: not contiguous (strides {tuple(a.stride())}); pass .contiguous()")


def numpy_ptr(a):
    return a.ctypes.data


def torch_ptr(a):
    return a.data_ptr()


POINTER = {"numpy": numpy_ptr, "torch": torch_ptr}


def numel(a):
    return a.size if isinstance(a, np.ndarray) else a.numel()


def empty(kind, shape, dtype, device):
    if kind == "numpy":
        return np.empty(shape, NUMPY_DTYPES[dtype])
    return _torch().empty(shape, dtype=torch_dtypes()[dtype], device=device)


def lengths_from_offsets(where, cu, dtype):
    """The lengths that offsets `cu` (B + 1 entries, starting at 0,
    non-decreasing) describe, as an array of `dtype` on cu's device."""
    kind = kind_of(cu)
    if kind is None:
        raise TypeError(f"{where}: expected a NumPy array or a PyTorch tensor, got {type(cu).__name__}")
    if len(cu.shape) != 1 or cu.shape[0] < 1:
        raise ValueError(f"{where}: expected a 1-D array of B + 1 offsets, got shape {tuple(cu.shape)}")
    if kind == "numpy":
        if cu.dtype.kind not in "iu":
            raise TypeError(f"{where}: expected integer offsets, got {cu.dtype}")
        if cu[0] != 0:
            raise ValueError(f"{where}: must start at 0, starts at {cu[0]}")
        d = np.diff(cu.astype(np.int64))
        if (d < 0).any():
            raise ValueError(f"{where}: offsets must not decrease (at {int(np.argmax(d < 0))})")
        if d.size and d.max() > np.iinfo(NUMPY_DTYPES[dtype]).max:
            raise ValueError(f"{where}: a length does not fit {dtype}")
        return d.astype(NUMPY_DTYPES[dtype])
    t = _torch()
    if cu.dtype not in (t.int32, t.int64):
        raise TypeError(f"{where}: expected int32 or int64 offsets, got {cu.dtype}")
    d = cu[1:] - cu[:-1]
    # One host check of the offsets (they are B + 1 integers).
    host = cu.detach().cpu()
    if int(host[0]) != 0:
        raise ValueError(f"{where}: must start at 0, starts at {int(host[0])}")
    if host.numel() > 1 and bool((host[1:] < host[:-1]).any()):
        raise ValueError(f"{where}: offsets must not decrease")
    return d.to(torch_dtypes()[dtype]).contiguous()


def nested_parts(where, nt, len_dtype):
    """The packed values and the lengths of a jagged nested tensor: the
    values are the tensor's own storage (no copy)."""
    t = _torch()
    if getattr(nt, "layout", None) != t.jagged:  # (no object() sentinel: torch.compile traces this)
        raise TypeError(f"{where}: a nested tensor of layout {nt.layout}; use "
                        f"torch.nested.nested_tensor(..., layout=torch.jagged) (packed values, zero-copy)")
    if nt.requires_grad and t.is_grad_enabled():
        raise TypeError(f"{where}: requires_grad=True, but dccc functions have no backward yet")
    if getattr(nt, "_ragged_idx", 1) != 1:
        raise ValueError(f"{where}: the nested tensor's ragged dimension must be dimension 1")
    if hasattr(nt, "lengths") and nt.lengths() is not None:
        raise ValueError(f"{where}: a nested tensor with holes (lengths given apart from offsets) is not packed")
    values = nt.values()
    offsets = nt.offsets()
    if not values.is_contiguous():
        raise ValueError(f"{where}: the nested tensor's values are not contiguous")
    lengths = (offsets[1:] - offsets[:-1]).to(torch_dtypes()[len_dtype])
    return values, lengths


def nested_result(fn, r, d, nested):
    """The result as a nested tensor when the input was one: the result's one
    ragged field, with the nested argument's lengths (bound to them)."""
    pname, nt = nested
    data = [f for f in r.fields if not f.is_length]
    lens = [f for f in r.fields if f.is_length]
    if len(data) != 1 or len(lens) != 1 or not data[0].ragged or lens[0].bound is None:
        return None
    if lens[0].bound["param"] != pname or data[0].lengths != [lens[0].name]:
        return None
    t = _torch()
    return t.nested.nested_tensor_from_jagged(d[data[0].name], offsets=nt.offsets())


@contextlib.contextmanager
def _cuda_call(device):
    """The library runs on `device`'s legacy default stream and returns
    after its kernels finish; work queued on PyTorch's current stream
    (which may be another stream) must finish first."""
    t = _torch()
    with t.cuda.device(device):
        stream = t.cuda.current_stream()
        if stream != t.cuda.default_stream():
            stream.synchronize()
        yield


def device_guard(kind, device):
    if kind == "torch" and device is not None and device.type == "cuda":
        return _cuda_call(device)
    return contextlib.nullcontext()
