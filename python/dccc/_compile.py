"""``dccc.compile``: run the dccc driver on a `.toy` file and keep the
library in a cache keyed by the content hash of everything that decides it."""

import hashlib
import os
import shutil
import subprocess
import tempfile

from ._core import load


def _dccc_binary():
    """$DCCC, else the driver of the prefix this package is installed in
    (PREFIX/lib/python3/dist-packages/dccc -> PREFIX/bin/dccc, so a moved
    prefix keeps working), else the build tree's driver beside this package
    (python/dccc -> build/tools/dccc), else `dccc` on the PATH."""
    env = os.environ.get("DCCC")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for rel in (("..", "..", "..", "..", "bin", "dccc"), ("..", "..", "build", "tools", "dccc")):
        path = os.path.normpath(os.path.join(here, *rel))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which("dccc")
    if found:
        return found
    raise FileNotFoundError("dccc.compile: no dccc driver; set DCCC to its path")


def cache_dir():
    """$DCCC_CACHE_DIR, else $XDG_CACHE_HOME/dccc, else ~/.cache/dccc."""
    d = os.environ.get("DCCC_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dccc")


def _host_cpu():
    """What identifies this machine's CPU for a `--cpu=native` library: the
    first processor's model and feature flags (/proc/cpuinfo), so a cache
    shared between machines (a home directory on NFS) never hands one
    machine's native code to another."""
    try:
        with open("/proc/cpuinfo") as f:
            keep = []
            for line in f:
                if not line.strip():
                    break
                if line.split(":")[0].strip() in ("vendor_id", "model name", "flags", "Features", "CPU part"):
                    keep.append(line.strip())
            return "\n".join(keep)
    except OSError:
        return os.uname().machine


def _flag_args(flags):
    args = []
    for k, v in sorted(flags.items()):
        if k == "defines":
            args += [f"-D{n}={int(x)}" for n, x in sorted(v.items())]
            continue
        name = "--" + k.replace("_", "-")
        if v is True:
            args.append(name)
        elif v is False or v is None:
            continue
        elif isinstance(v, (list, tuple)):
            args += [f"{name}={x}" for x in v]
        else:
            args.append(f"{name}={v}")
    return args


def compile(source, target="cpu", *, torch_namespace=None, dccc=None, **flags):
    """Compiles `source` (a .toy file) with ``dccc --target=TARGET -o`` and
    loads the library. Keyword flags become driver options
    (``schedule="..."`` is ``--schedule=...``, ``default_pad=0`` is
    ``--default-pad=0``, ``no_default_schedule=True`` is
    ``--no-default-schedule``, ``defines={"D": 64}`` is ``-DD=64``). For the
    CPU target the library is compiled for this machine (``--cpu=native``,
    as ``dccc run`` compiles) unless ``cpu=`` names another CPU: it is built
    and cached for the process that loads it, not shipped (``dccc -o``'s
    own default is the portable ``x86-64-v2``, docs/install.md). The
    library is kept under cache_dir() in a folder named by the SHA-256 of the
    source text, the target, the options and the driver (its ``--version``,
    size and modification time), so a second call with the same inputs
    loads it without compiling; compiles of the same source in several
    processes at once each build in a private folder and the first to finish
    publishes it (an atomic rename), so none sees a partial library."""
    if target not in ("cpu", "cuda"):
        raise ValueError(f"dccc.compile: target must be 'cpu' or 'cuda', got {target!r}")
    exe = dccc or _dccc_binary()
    with open(source, "rb") as f:
        text = f.read()
    if target == "cpu":
        flags.setdefault("cpu", "native")
    args = [f"--target={target}"] + _flag_args(flags)
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    st = os.stat(exe)
    h = hashlib.sha256()
    native = _host_cpu() if flags.get("cpu") == "native" else ""
    for part in (text, "\0".join(args).encode(), version.encode(), f"{st.st_size}:{st.st_mtime_ns}".encode(),
                 os.environ.get("DCCC_CUDA_ARCH", "").encode(), native.encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    key = h.hexdigest()[:32]
    stem = os.path.splitext(os.path.basename(source))[0]
    root = cache_dir()
    final = os.path.join(root, key)
    lib_path = os.path.join(final, stem + ".so")
    if not os.path.exists(lib_path):
        os.makedirs(root, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=key + ".tmp-", dir=root)
        try:
            r = subprocess.run([exe, *args, os.path.abspath(source), "-o", os.path.join(tmp, stem + ".so")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"dccc.compile: dccc failed on `{source}` (exit {r.returncode}):\n{r.stderr}")
            try:
                os.rename(tmp, final)  # atomic; fails when another process published first
                tmp = None
            except OSError:
                if not os.path.exists(lib_path):
                    raise
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
    return load(lib_path, torch_namespace=torch_namespace)
