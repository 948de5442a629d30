"""``dccc.compile``: run the dccc driver on a `.toy` file and keep the
library in a cache keyed by the content hash of everything that decides it."""

import hashlib
import json
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


def _entries(root, prefix):
    """The published folders of `root` whose names start with `prefix`."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(prefix) and ".tmp-" not in n)


def _deps_key(paths):
    """A hash of the files `paths` (imported by a program) as they are now."""
    h = hashlib.sha256()
    for p in paths:
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            data = b"\0missing"
        for part in (p.encode(), data):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()[:16]


def _depfile_prerequisites(text):
    """The prerequisites of the one rule of a Make dependency file as dccc
    -MD writes it (backslash escapes, `$$` for `$`, backslash-newline
    continuations)."""
    words, word, k, seen_colon = [], "", 0, False
    while k < len(text):
        c = text[k]
        if c == "\\" and k + 1 < len(text):
            nxt = text[k + 1]
            if nxt == "\n":
                c = " "
            else:
                word += nxt
                k += 2
                continue
        elif c == "$" and text[k + 1:k + 2] == "$":
            word += "$"
            k += 2
            continue
        if c.isspace():
            if word:
                words.append(word)
            word = ""
        elif c == ":" and not seen_colon and (k + 1 == len(text) or text[k + 1].isspace()):
            if word:
                words.append(word)
            word, seen_colon = "", True
            words = []  # what came before were the targets
        else:
            word += c
        k += 1
    if word:
        words.append(word)
    return words


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
    size and modification time), and of the files the program imports (as
    ``dccc -MD`` lists them: the library is rebuilt when one changes), so a
    second call with the same inputs loads it without compiling; compiles of the same source in several
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
    base = h.hexdigest()[:32]
    stem = os.path.splitext(os.path.basename(source))[0]
    root = cache_dir()
    # A published library's folder is BASE-DEPS: DEPS hashes the files the
    # program imports (deps.json in the folder, from dccc -MD) as they were,
    # so a library is reused only while none of them has changed.
    for entry in _entries(root, base + "-"):
        folder = os.path.join(root, entry)
        try:
            with open(os.path.join(folder, "deps.json")) as f:
                imported = json.load(f)
        except (OSError, ValueError):
            continue
        lib_path = os.path.join(folder, stem + ".so")
        if entry == base + "-" + _deps_key(imported) and os.path.exists(lib_path):
            return load(lib_path, torch_namespace=torch_namespace)
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=base + ".tmp-", dir=root)
    try:
        src = os.path.abspath(source)
        r = subprocess.run([exe, *args, src, "-o", os.path.join(tmp, stem + ".so"), "-MD", "-MF",
                            os.path.join(tmp, "deps.d")], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"dccc.compile: dccc failed on `{source}` (exit {r.returncode}):\n{r.stderr}")
        with open(os.path.join(tmp, "deps.d")) as f:
            imported = [d for d in _depfile_prerequisites(f.read()) if os.path.realpath(d) != os.path.realpath(src)]
        with open(os.path.join(tmp, "deps.json"), "w") as f:
            json.dump(imported, f)
        final = os.path.join(root, base + "-" + _deps_key(imported))
        lib_path = os.path.join(final, stem + ".so")
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
