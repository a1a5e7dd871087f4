"""Sets up the peer engines of the end-to-end benchmark in a cache folder outside the repository.

Nothing here is committed third-party code: every peer comes from PyPI through pip at bench time.
- Hugging Face: a venv with torch, torchvision, transformers (Qwen3-VL needs >= 4.57).
- llama.cpp: the sources vendored in llama-cpp-python's sdist, built with cmake (Release, only
  llama-mtmd-cli and llama-server), and GGUF files made by its convert_hf_to_gguf.py.
Each step leaves a marker when it finished, so an interrupted setup resumes where it stopped and a
finished one costs nothing the next time. Every step logs how long it took.
"""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

HF_PACKAGES = ["torch", "torchvision", "transformers>=4.57", "accelerate", "numpy", "pillow",
               "sentencepiece"]  # sentencepiece: convert_hf_to_gguf.py imports it for any Qwen2 vocab
LLAMACPP_TARGETS = ["llama-mtmd-cli", "llama-server", "llama-quantize"]
GGUF_KINDS = {  # name -> (outtype, extra convert flags)
    "text-bf16": ("bf16", []),
    "text-q8_0": ("q8_0", []),
    "mmproj-bf16": ("bf16", ["--mmproj"]),
    "mmproj-q8_0": ("q8_0", ["--mmproj"]),
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "qvl-bench-peers")


class SetupError(RuntimeError):
    pass


def _run(cmd, what, cwd=None, log_path=None, env=None):
    """Runs one setup command; its output goes to log_path (kept for failures) or to stderr."""
    start = time.monotonic()
    log(f"peers: {what}: {' '.join(cmd)}")
    out = open(log_path, "w") if log_path else None
    try:
        r = subprocess.run(cmd, cwd=cwd, stdout=out or sys.stderr, stderr=subprocess.STDOUT,
                           env=env)
    except OSError as e:
        raise SetupError(f"{what}: cannot run {cmd[0]}: {e}") from e
    finally:
        if out:
            out.close()
    took = time.monotonic() - start
    if r.returncode != 0:
        tail = ""
        if log_path and os.path.exists(log_path):
            with open(log_path, errors="replace") as f:
                tail = "".join(f.readlines()[-15:])
        raise SetupError(f"{what} failed (exit {r.returncode}); log {log_path or '(stderr)'}\n"
                         f"{tail}")
    log(f"peers: {what}: done in {took:.0f} s")
    return took


def _marker(path, info=None):
    with open(path, "w") as f:
        json.dump(info or {}, f)


def ensure_venv(cache, python=None):
    """The venv's python with the Hugging Face stack installed (PyPI's default torch wheel)."""
    venv = os.path.join(cache, "venv")
    py = os.path.join(venv, "bin", "python")
    done = os.path.join(venv, ".qvl-ready")
    if os.path.exists(done) and os.path.exists(py):
        return py
    os.makedirs(cache, exist_ok=True)
    if not os.path.exists(py):
        _run([python or "/usr/bin/python3", "-m", "venv", venv], "create the venv")
    _run([py, "-m", "pip", "install", "--progress-bar", "off"] + HF_PACKAGES,
         "install the Hugging Face stack (about 6 GB with torch's CUDA libraries)",
         log_path=os.path.join(cache, "pip-install.log"))
    probe = ("import torch, transformers, json; "
             "from transformers import Qwen3VLForConditionalGeneration; "
             "print(json.dumps({'torch': torch.__version__, "
             "'transformers': transformers.__version__}))")
    r = subprocess.run([py, "-c", probe], capture_output=True, text=True)
    if r.returncode != 0:
        raise SetupError("the venv has no Qwen3VLForConditionalGeneration (transformers too old?)"
                         f"\n{r.stderr[-800:]}")
    _marker(done, json.loads(r.stdout))
    return py


def venv_versions(py):
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(py)), ".qvl-ready")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def llamacpp_source(cache):
    """The llama.cpp folder vendored in llama-cpp-python's sdist (downloaded and unpacked once)."""
    root = os.path.join(cache, "llamacpp")
    sdist_dir = os.path.join(root, "sdist")
    found = glob.glob(os.path.join(root, "llama_cpp_python-*", "vendor", "llama.cpp"))
    if found and os.path.exists(os.path.join(found[0], ".qvl-unpacked")):
        return found[0]
    os.makedirs(sdist_dir, exist_ok=True)
    if not glob.glob(os.path.join(sdist_dir, "llama_cpp_python-*.tar.gz")):
        # --no-binary for this package only: its build requirements come as wheels, so pip
        # prepares the metadata quickly instead of compiling cmake and friends from source.
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
              "llama-cpp-python", "-d", sdist_dir, "llama-cpp-python"],
             "download the llama-cpp-python sdist")
    tarball = sorted(glob.glob(os.path.join(sdist_dir, "llama_cpp_python-*.tar.gz")))[-1]
    start = time.monotonic()
    with tarfile.open(tarball) as tf:
        tf.extractall(root)
    found = glob.glob(os.path.join(root, "llama_cpp_python-*", "vendor", "llama.cpp"))
    if not found:
        raise SetupError(f"{tarball} has no vendor/llama.cpp folder")
    _marker(os.path.join(found[0], ".qvl-unpacked"), {"sdist": os.path.basename(tarball)})
    log(f"peers: unpacked {os.path.basename(tarball)} in {time.monotonic() - start:.0f} s")
    return found[0]


def ensure_llamacpp(cache, jobs=2):
    """Folder holding llama-mtmd-cli and llama-server, built once (Release, -march=native)."""
    src = llamacpp_source(cache)
    build = os.path.join(cache, "llamacpp", "build")
    bindir = os.path.join(build, "bin")
    if all(os.path.exists(os.path.join(bindir, t)) for t in LLAMACPP_TARGETS):
        return bindir
    if not shutil.which("cmake"):
        raise SetupError("cmake is missing (apt-get install cmake)")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        _run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF",
              "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
              "-DGGML_NATIVE=ON", "-DBUILD_SHARED_LIBS=OFF"],
             "configure llama.cpp", log_path=os.path.join(cache, "llamacpp", "configure.log"))
    _run(["cmake", "--build", build, "-j", str(jobs), "--target"] + LLAMACPP_TARGETS,
         "build llama.cpp (about 25 min on 2 busy cores)",
         log_path=os.path.join(cache, "llamacpp", "build.log"))
    return bindir


def _model_key(model_dir):
    """Changes when the checkpoint changes, so a stale GGUF is never used."""
    st = os.stat(os.path.join(model_dir, "model.safetensors"))
    h = hashlib.sha1(f"{os.path.abspath(model_dir)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return f"{os.path.basename(os.path.normpath(model_dir))}-{h.hexdigest()[:10]}"


def ensure_gguf(cache, model_dir, kind, py):
    """GGUF file of one kind (GGUF_KINDS) for model_dir, converted once with the venv's python."""
    src = llamacpp_source(cache)
    outtype, extra = GGUF_KINDS[kind]
    folder = os.path.join(cache, "gguf")
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, f"{_model_key(model_dir)}-{kind}.gguf")
    if os.path.exists(out + ".done") and os.path.exists(out):
        return out
    tmp = out + ".partial"
    _run([py, os.path.join(src, "convert_hf_to_gguf.py"), model_dir, "--outtype", outtype,
          "--outfile", tmp] + extra, f"convert {model_dir} to GGUF ({kind})",
         log_path=out + ".log")
    os.replace(tmp, out)
    _marker(out + ".done")
    return out


def ensure_quantized_gguf(cache, source_gguf, bindir, qtype):
    """source_gguf quantized to qtype (e.g. Q4_K_M) with llama-quantize, once."""
    out = source_gguf.replace("-text-bf16.gguf", f"-text-{qtype.lower()}.gguf")
    if out == source_gguf:
        raise SetupError(f"{source_gguf}: not a text-bf16 GGUF of this cache")
    if os.path.exists(out + ".done") and os.path.exists(out):
        return out
    tmp = out + ".partial"
    _run([os.path.join(bindir, "llama-quantize"), source_gguf, tmp, qtype],
         f"llama-quantize {os.path.basename(source_gguf)} to {qtype}", log_path=out + ".log")
    os.replace(tmp, out)
    _marker(out + ".done")
    return out
