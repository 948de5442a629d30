"""dccc from Python: call the functions of a library that ``dccc prog.toy -o
prog.so`` wrote with NumPy arrays or PyTorch tensors, and register them as
PyTorch custom operators (docs/python.md).

    import dccc
    lib = dccc.load("mha.so")            # or dccc.compile("mha.toy")
    out = lib.mha({"data": q, "seqlen": q_lens}, {"k": k, "v": v, "seqlen": kv_lens})
"""

from ._compile import cache_dir, compile
from ._core import METADATA_VERSION, Error, Function, Library, load

__all__ = ["load", "compile", "cache_dir", "Error", "Library", "Function", "METADATA_VERSION"]
__version__ = "0.1.0"
