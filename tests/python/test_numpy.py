"""dccc from NumPy: every example library loads, every function matches its
float64 reference (references.py) on random length patterns with zero
lengths and B = 1, and bad arguments raise the documented exception with
nothing written (docs/python.md, "Errors")."""

import collections
import dataclasses
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import dccc
from conftest import EXAMPLE_NAMES, EXAMPLES
from references import CASES, PATTERNS


GENERIC_TYPES = {"float": ["f16", "bf16", "f32", "f64"], "int": ["i32", "i64"]}


def source_functions(name):
    """The functions a library of the example exports: a generic function
    `fn f<T: C>` (one type parameter) as its instances `f__T` for every
    type of C (docs/abi.md)."""
    with open(os.path.join(EXAMPLES, name + ".toy")) as f:
        out = []
        for fn, tp in re.findall(r"^\s*fn\s+(\w+)\s*(<[^>]*>)?", f.read(), re.M):
            if fn == "main":
                continue
            if not tp:
                out.append(fn)
                continue
            c = tp[1:-1].split(":", 1)[1].strip()
            types = GENERIC_TYPES.get(c) or [t.strip() for t in c.split("|")]
            out += [f"{fn}__{t}" for t in types]
        return out


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_example_loads(name, load_example):
    lib = load_example(name)
    assert sorted(lib.functions) == sorted(source_functions(name))
    for fn in lib.functions.values():
        assert fn.__doc__.startswith(f"fn {fn.name}(")
        assert callable(fn)


def test_every_function_has_a_reference():
    every = {f for n in EXAMPLE_NAMES for f in source_functions(n)}
    assert every == set(CASES), "a function without a reference in references.py (or one that went away)"


def compare(got, want, rtol, atol, where):
    got = np.asarray(got)
    if got.dtype == np.uint16:  # bf16 bit patterns
        got = (got.astype(np.uint32) << 16).view(np.float32)
    assert got.shape == np.shape(want), f"{where}: shape {got.shape}, want {np.shape(want)}"
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)


@pytest.mark.parametrize("fname", sorted(CASES))
@pytest.mark.parametrize("pattern", range(len(PATTERNS) + 2))
def test_matches_float64_reference(fname, pattern, load_example):
    example, make, rtol, atol = CASES[fname]
    lib = load_example(example)
    rng = np.random.default_rng(1000 * pattern + sum(map(ord, fname)))
    if pattern < len(PATTERNS):
        lens = PATTERNS[pattern]
    else:
        lens = list(rng.integers(0, 7, rng.integers(1, 9)))
    args, kwargs, want = make(rng, lens)
    fn = lib.functions[fname]
    got = fn(*args, **kwargs)
    # the general path (what out=, cu_seqlens, tensors take) gives the same
    general = fn.call(list(args), **kwargs)
    for k in (got if isinstance(got, dict) else [None]):
        a, b = (got, general) if k is None else (got[k], general[k])
        np.testing.assert_array_equal(a, b)
    where = f"{fname} on lengths {lens}"
    if isinstance(want, dict):
        assert isinstance(got, dict)
        assert set(got) == {f.name for f in fn.result.fields}
        for f in fn.result.fields:
            if f.bound:
                arg = args[fn.param_index[f.bound["param"]]]
                assert got[f.name] is arg[f.bound["field"]], f"{where}: bound field {f.name} is not the argument's"
            else:
                compare(got[f.name], want[f.name], rtol, atol, f"{where}, field {f.name}")
    else:
        compare(got, want, rtol, atol, where)


# ---- bad arguments ----------------------------------------------------------


@pytest.fixture
def mha(load_example):
    return load_example("mha").mha


def good_mha_args(rng=None):
    rng = rng or np.random.default_rng(7)
    ql, kl = np.array([2, 0, 3], np.int32), np.array([1, 2, 2], np.int32)
    q = rng.standard_normal((5, 2, 4)).astype(np.float32)
    k = rng.standard_normal((5, 2, 4)).astype(np.float32)
    v = rng.standard_normal((5, 2, 4)).astype(np.float32)
    return {"data": q, "seqlen": ql}, {"k": k, "v": v, "seqlen": kl}


def bad_cases():
    """(label, mutate(q, kv) -> (q, kv), exception type, text in message)."""

    def with_(d, **kw):
        d = dict(d)
        d.update(kw)
        return d

    def without(d, key):
        d = dict(d)
        del d[key]
        return d

    return [
        ("wrong dtype", lambda q, kv: (with_(q, data=q["data"].astype(np.float64)), kv), TypeError,
         "argument `q`, field `data`: expected dtype float32"),
        ("wrong length dtype", lambda q, kv: (with_(q, seqlen=q["seqlen"].astype(np.int64)), kv), TypeError,
         "field `seqlen`: expected dtype int32"),
        ("wrong shape: H differs", lambda q, kv: (q, with_(kv, k=np.zeros((5, 3, 4), np.float32))), ValueError,
         "size H is 3"),
        ("wrong shape: too few dims", lambda q, kv: (with_(q, data=q["data"].reshape(5, 8)), kv), ValueError,
         "expected 3 dimension(s)"),
        ("wrong shape: B differs", lambda q, kv: (q, with_(kv, seqlen=np.array([1, 2], np.int32))), ValueError,
         "size B is 2"),
        ("lengths do not sum to the rows", lambda q, kv: (with_(q, seqlen=np.array([2, 1, 3], np.int32)), kv),
         dccc.Error, "DCC_ERR_SIZE_MISMATCH"),
        ("negative length", lambda q, kv: (q, with_(kv, seqlen=np.array([3, -1, 3], np.int32))), dccc.Error,
         "DCC_ERR_NEGATIVE_LENGTH"),
        ("non-contiguous", lambda q, kv: (q, with_(kv, v=np.zeros((5, 4, 2), np.float32).transpose(0, 2, 1))),
         ValueError, "not C-contiguous"),
        ("missing field", lambda q, kv: (q, without(kv, "v")), TypeError, "missing field(s) `v`"),
        ("extra field", lambda q, kv: (with_(q, mask=np.zeros(5, np.float32)), kv), TypeError,
         "unknown field(s) `mask`"),
        ("not an array", lambda q, kv: (with_(q, data=q["data"].tolist()), kv), TypeError,
         "expected a NumPy array or a PyTorch tensor"),
        ("not a mapping", lambda q, kv: (q["data"], kv), TypeError, "expected the fields of `PackedQueries`"),
        ("bad cu_seqlens", lambda q, kv: ({"data": q["data"], "cu_seqlens": np.array([0, 3, 2, 5])}, kv),
         ValueError, "offsets must not decrease"),
        ("cu_seqlens and lengths", lambda q, kv: (with_(q, cu_seqlens=np.array([0, 2, 2, 5])), kv), TypeError,
         "both `cu_seqlens` and `seqlen`"),
    ]


@pytest.mark.parametrize("label,mutate,exc,text", bad_cases(), ids=[c[0] for c in bad_cases()])
def test_bad_argument_raises_and_writes_nothing(mha, label, mutate, exc, text):
    q, kv = mutate(*good_mha_args())
    sentinel = np.full((5, 2, 4), 1234.5, np.float32)
    out = {"data": sentinel}
    before = [np.array(x, copy=True) for x in list(q.values() if isinstance(q, dict) else [q]) + list(kv.values())
              if isinstance(x, np.ndarray)]
    with pytest.raises(exc) as e:
        mha(q, kv, out=out)
    assert text in str(e.value), str(e.value)
    with pytest.raises(exc) as e2:  # without out=: the same error
        mha(q, kv)
    assert str(e2.value) == str(e.value)
    if exc is dccc.Error:
        assert isinstance(e.value, ValueError)
    assert (sentinel == 1234.5).all(), "the output was written although the call failed"
    after = [x for x in list(q.values() if isinstance(q, dict) else [q]) + list(kv.values())
             if isinstance(x, np.ndarray)]
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_where_violation_is_an_error(load_example):
    lib = load_example("where_layout")
    x = {"data": np.zeros((3, 2, 3), np.float32), "seqlen": np.array([3, 0], np.int32)}
    out = np.full((2, 2, 3), 7.0, np.float32)
    with pytest.raises(dccc.Error, match="DCC_ERR_INVALID_ARGUMENT") as e:
        lib.first_tokens(x, out=out)
    assert "where" in str(e.value)
    assert (out == 7.0).all()


def test_argument_binding_errors(mha):
    q, kv = good_mha_args()
    with pytest.raises(TypeError, match="missing argument `kv`"):
        mha(q)
    with pytest.raises(TypeError, match="unexpected argument `x`"):
        mha(q, kv, x=1)
    with pytest.raises(TypeError, match="takes 2 argument"):
        mha(q, kv, q)
    with pytest.raises(TypeError, match="twice"):
        mha(q, kv, q=q)
    out = mha(kv=kv, q=q)
    assert out["data"].shape == (5, 2, 4)


def test_out_checked_and_used(mha):
    q, kv = good_mha_args()
    want = mha(q, kv)["data"]
    buf = np.empty((5, 2, 4), np.float32)
    got = mha(q, kv, out={"data": buf})
    assert got["data"] is buf
    np.testing.assert_array_equal(buf, want)
    with pytest.raises(ValueError, match="expected shape"):
        mha(q, kv, out={"data": np.empty((4, 2, 4), np.float32)})
    with pytest.raises(TypeError, match="not a fresh field"):
        mha(q, kv, out={"seqlen": np.empty(3, np.int32)})
    with pytest.raises(TypeError, match="expected dtype"):
        mha(q, kv, out={"data": np.empty((5, 2, 4), np.float64)})


def test_cu_seqlens_dataclass_and_named_tuple(mha):
    q, kv = good_mha_args()
    want = mha(q, kv)["data"]
    cu = np.concatenate([[0], np.cumsum(q["seqlen"])]).astype(np.int64)
    got = mha({"data": q["data"], "cu_seqlens": cu}, kv)
    np.testing.assert_array_equal(got["data"], want)
    np.testing.assert_array_equal(got["seqlen"], q["seqlen"])

    @dataclasses.dataclass
    class KV:
        k: np.ndarray
        v: np.ndarray
        seqlen: np.ndarray

    Q = collections.namedtuple("Q", "data seqlen")
    got = mha(Q(q["data"], q["seqlen"]), KV(kv["k"], kv["v"], kv["seqlen"]))
    np.testing.assert_array_equal(got["data"], want)


def test_scalar_and_sizes_errors(load_example):
    lib = load_example("where_layout")
    x = {"data": np.ones((3, 2, 3), np.float32), "seqlen": np.array([3], np.int32)}
    with pytest.raises(TypeError, match="expected a f32 number"):
        lib.scale(x, "2")
    np.testing.assert_array_equal(lib.scale(x, 2)["data"], 2 * x["data"])  # an int for an f32
    np.testing.assert_array_equal(lib.scale(x, np.float32(2))["data"], 2 * x["data"])
    tri = load_example("tril_matmul")
    with pytest.raises(TypeError, match=r"size\(s\) N cannot be read"):
        tri.tril_diag(np.zeros(6, np.float32))
    with pytest.raises(TypeError, match="not a size of the function"):
        tri.tril_diag(np.zeros(6, np.float32), sizes={"M": 3})
    with pytest.raises(dccc.Error, match="DCC_ERR_SIZE_MISMATCH"):
        tri.tril_diag(np.zeros(5, np.float32), sizes={"N": 3})


def test_list_argument_errors(load_example):
    lib = load_example("pack_sequences")
    good = np.zeros((2, 2, 3), np.float32)
    with pytest.raises(ValueError, match="size H is 4"):
        lib.pack_sequences([good, np.zeros((1, 4, 3), np.float32)])
    with pytest.raises(TypeError, match="expected a list of arrays"):
        lib.pack_sequences(good)
    with pytest.raises(TypeError, match="element 1: expected dtype float32"):
        lib.pack_sequences([good, good.astype(np.float16)])


# ---- metadata ----------------------------------------------------------------


C_TYPES = {"f16": "uint16_t", "bf16": "uint16_t", "f32": "float", "f64": "double", "i32": "int32_t",
           "i64": "int64_t", "bool": "uint8_t"}


def header_structs(path):
    """struct name -> [(C type, member)] from the generated header."""
    text = open(path).read()
    out = {}
    for name, body, tail in re.findall(r"typedef struct (\w+) \{(.*?)\} (\w+);", text, re.S):
        members = re.findall(r"^\s*((?:const )?[\w]+\*?(?: const\*)?)\s+(\w+);", re.sub(r"/\*.*?\*/", "", body), re.M)
        out[name] = [(re.sub(r"\bconst\b", "", t).replace(" ", ""), m) for t, m in members]
    return out


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_metadata_round_trips(name, build_lib, dccc_exe):
    path = build_lib(name)
    lib = dccc.load(path)
    # the library's text is what --emit=metadata prints, and parses back to itself
    printed = subprocess.run([dccc_exe, "--emit=metadata", os.path.join(EXAMPLES, name + ".toy")],
                             capture_output=True, text=True, check=True).stdout
    assert printed == lib.info_text
    assert json.loads(json.dumps(lib.info)) == json.loads(printed)
    assert lib.info["version"] == dccc.METADATA_VERSION and lib.info["target"] == "cpu"
    # and it describes the header's structs: fields, counts and sizes in order
    structs = header_structs(path[:-3] + ".h")
    header = open(path[:-3] + ".h").read()
    for fn in lib.functions.values():
        assert re.search(rf"dcc_status {fn.name}\(", header) and re.search(rf"dcc_status {fn.name}_meta\(", header)
        for p in fn.params + ([fn.result] if fn.result else []):
            if p.kind == "scalar":
                continue
            members = structs[p.struct_name]
            if p.kind == "list":
                want = [(C_TYPES[p.dtype] + "**", "data"), ("int32_t*", "len")]
            else:
                want = []
                for f in p.fields:
                    want += [(C_TYPES[f.dtype] + "*", f.name), ("int64_t", f.name + "_len")]
            want += [("int64_t", m) for m, _, _ in p.sizes]
            assert members == want, f"{fn.name}: {p.name}"


def test_metadata_symbol_is_declared(build_lib):
    header = open(build_lib("mha")[:-3] + ".h").read()
    assert "const char* dccc_module_info(void)" in header


def test_load_rejects_a_library_without_metadata(tmp_path):
    src = tmp_path / "x.c"
    src.write_text("int f(void) { return 0; }\n")
    so = tmp_path / "x.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    with pytest.raises(ValueError, match="no dccc_module_info"):
        dccc.load(str(so))


def test_compile_caches_by_content(tmp_path, monkeypatch, dccc_exe):
    monkeypatch.setenv("DCCC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DCCC", dccc_exe)
    src = tmp_path / "s.toy"
    src.write_text(open(os.path.join(EXAMPLES, "softmax.toy")).read())
    a = dccc.compile(str(src))
    b = dccc.compile(str(src))
    assert a is b
    c = dccc.compile(str(src), default_pad=0)
    assert c.path != a.path
    src.write_text(src.read_text() + "\n// changed\n")
    d = dccc.compile(str(src))
    assert d.path != a.path
    entries = [e for e in os.listdir(tmp_path / "cache")]
    assert len(entries) == 3 and not any(".tmp-" in e for e in entries)
    with pytest.raises(RuntimeError, match="dccc failed"):
        bad = tmp_path / "bad.toy"
        bad.write_text("fn f( {")
        dccc.compile(str(bad))


def test_compile_rebuilds_when_an_import_changes(tmp_path, monkeypatch, dccc_exe):
    # the cache key covers the files the program imports (dccc -MD): a
    # changed import gives a new library, an unchanged one the cached one
    monkeypatch.setenv("DCCC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DCCC", dccc_exe)
    (tmp_path / "inc").mkdir()
    scale = tmp_path / "inc" / "scale.toy"
    scale.write_text("fn scale(v: f32) f32 {\n    return v * 2.0;\n}\n")
    (tmp_path / "mid.toy").write_text('import "inc/scale.toy" as s;\nfn twice(v: f32) f32 {\n    return s.scale(v);\n}\n')
    main = tmp_path / "main.toy"
    main.write_text('import "mid.toy" as m;\nfn f(x: [N]f32) [N]f32 {\n    let y: [N]f32;\n'
                    '    y[i] = m.twice(x[i]);\n    return y;\n}\n')
    x = np.arange(5, dtype=np.float32)
    a = dccc.compile(str(main))
    assert np.array_equal(a.f(x), 2 * x)
    assert dccc.compile(str(main)) is a
    scale.write_text("fn scale(v: f32) f32 {\n    return v * 3.0;\n}\n")  # imported by an import
    b = dccc.compile(str(main))
    assert b.path != a.path and np.array_equal(b.f(x), 3 * x)
    assert dccc.compile(str(main)) is b


def test_compile_is_for_this_cpu_unless_told(tmp_path, monkeypatch, dccc_exe):
    # dccc.compile builds for the process that loads it: --cpu=native (the
    # metadata names this machine's CPU, as `dccc --emit=metadata
    # --cpu=native` resolves it), unless cpu= names another.
    monkeypatch.setenv("DCCC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DCCC", dccc_exe)
    src = os.path.join(EXAMPLES, "softmax.toy")
    host = json.loads(subprocess.run([dccc_exe, src, "--emit=metadata", "--cpu=native"], check=True,
                                     capture_output=True, text=True).stdout)["arch"]
    assert host not in ("native", "x86-64-v2")
    a = dccc.compile(src)
    assert a.info["arch"] == host
    b = dccc.compile(src, cpu="x86-64-v2")
    assert b.info["arch"] == "x86-64-v2" and b.path != a.path
    x = {"data": np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), "seqlen": np.array([3], np.int32)}
    assert np.allclose(a.softmax(x)["data"], b.softmax(x)["data"], atol=1e-6)


def test_concurrent_compiles_of_one_source(tmp_path, dccc_exe):
    # several processes compile the same source into an empty cache at once
    env = dict(os.environ, DCCC_CACHE_DIR=str(tmp_path / "cache"), DCCC=dccc_exe,
               PYTHONPATH=os.path.join(os.path.dirname(dccc.__file__), ".."))
    code = ("import dccc, numpy as np, sys; lib = dccc.compile(sys.argv[1]);"
            "x = {'data': np.ones((3, 2), np.float32), 'seqlen': np.array([3], np.int32)};"
            "print(lib.softmax(x)['data'].sum())")
    src = os.path.join(EXAMPLES, "softmax.toy")
    procs = [subprocess.Popen([sys.executable, "-c", code, src], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate()[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(abs(float(o) - 2.0) < 1e-5 for o in outs)
    entries = os.listdir(tmp_path / "cache")
    assert len(entries) == 1 and ".tmp-" not in entries[0]


def test_c_names_and_half_scalars(dccc_exe, tmp_path):
    from conftest import ROOT

    so = tmp_path / "names.so"
    subprocess.run([dccc_exe, os.path.join(ROOT, "tests", "python", "data", "names.toy"), "-o", str(so)], check=True,
                   capture_output=True)
    lib = dccc.load(str(so))
    assert sorted(lib.functions) == ["dccc_module_info_", "double_"]
    np.testing.assert_array_equal(lib.dccc_module_info_(np.arange(3, dtype=np.float32)), [0, 2, 4])
    fn = lib.double_
    assert [f.name for f in fn.params[0].fields] == ["data", "while_", "data_len_"]
    x = {"data": np.arange(6, dtype=np.float32).reshape(3, 2), "while_": np.array([1, 2], np.int32),
         "data_len_": np.array([10, 20], np.int32)}
    y = fn(x, 1.5, 0.25)  # 1.5 and 0.25 are exact in f16 and bf16
    want = np.arange(6).reshape(3, 2) * 1.5 + 0.25 + np.array([10, 20, 20])[:, None]
    np.testing.assert_array_equal(y["data"], want)
    assert y["while_"] is x["while_"] and y["data_len_"] is x["data_len_"]


def test_integer_and_bool_scalars(dccc_exe, tmp_path):
    from conftest import ROOT

    so = tmp_path / "scalars.so"
    subprocess.run([dccc_exe, os.path.join(ROOT, "tests", "python", "data", "scalars.toy"), "-o", str(so)],
                   check=True, capture_output=True)
    shift = dccc.load(str(so)).shift
    x = np.array([1, 2, 3], np.int32)
    np.testing.assert_array_equal(shift(x, 10, True), [11, 12, 13])
    np.testing.assert_array_equal(shift(x, np.int64(-1), np.bool_(True)), [0, 1, 2])
    np.testing.assert_array_equal(shift(x, 10, False), [1, 2, 3])
    with pytest.raises(ValueError, match="out of range for i32"):
        shift(x, 2**31, True)  # ctypes would wrap it silently
    with pytest.raises(TypeError, match="expected an integer"):
        shift(x, 1.5, True)
    with pytest.raises(TypeError, match="expected a bool"):
        shift(x, 1, 1)
