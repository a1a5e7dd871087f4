#!/usr/bin/env python3
"""Replays deploy/Dockerfile's build stage without a container daemon (issue 47): copies exactly
the paths its COPY lines name from the source tree into a scratch root, runs its RUN commands
there (absolute paths mapped into the scratch root), then checks the run stage: the files it
copies from the build stage exist, and every shared library the binaries link belongs to a
Debian package the run stage installs. Also checks that the build stage's packages are the
ones scripts/install-deps.sh installs (and are installed here, as the replay needs them).

usage: dockerfile_replay.py --source ROOT --work DIR [--dockerfile deploy/Dockerfile]
Prints "dockerfile_replay: PASS" on success."""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

# In debian:12-slim already (apt needs them), so the run stage need not name them.
BASE_IMAGE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}


def fail(msg):
    print(f"dockerfile_replay: FAIL: {msg}")
    sys.exit(1)


def instructions(text):
    """(KEYWORD, argument) per instruction: comments dropped, continuation lines joined."""
    out, cur = [], ""
    for line in text.splitlines():
        if not cur and line.lstrip().startswith("#"):
            continue
        if cur and line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        if cur.strip():
            kw, _, arg = cur.strip().partition(" ")
            out.append((kw.upper(), arg.strip()))
        cur = ""
    return out


def stages(instrs):
    result = []
    for kw, arg in instrs:
        if kw == "FROM":
            result.append({"from": arg, "steps": []})
        elif not result:
            fail(f"{kw} before the first FROM")
        else:
            result[-1]["steps"].append((kw, arg))
    return result


def apt_packages(run_arg):
    """The packages of 'apt-get install ...' in a RUN argument (flags skipped)."""
    for cmd in run_arg.split("&&"):
        words = shlex.split(cmd)
        if len(words) > 2 and words[0] == "apt-get" and "install" in words:
            return [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return None


def install_deps_packages(path):
    text = open(path).read()
    m = re.search(r"^packages=\((.*?)^\)", text, re.S | re.M)
    if not m:
        fail(f"no packages=( ... ) list in {path}")
    body = "\n".join(line.split("#", 1)[0] for line in m.group(1).splitlines())
    return set(body.split())


def replay_build(stage, source, root, deps):
    workdir = "/"
    ran = 0
    for kw, arg in stage["steps"]:
        if kw == "WORKDIR":
            workdir = os.path.join(workdir, arg)
            os.makedirs(root + workdir, exist_ok=True)
        elif kw == "COPY":
            words = shlex.split(arg)
            if any(w.startswith("--") for w in words):
                fail(f"COPY flags are not replayed: COPY {arg}")
            *srcs, dest = words
            dest_abs = root + os.path.join(workdir, dest)
            for src in srcs:
                s = os.path.join(source, src)
                if not os.path.exists(s):
                    fail(f"COPY {src}: not in the source tree (a fresh clone would fail)")
                target = dest_abs if not dest.endswith("/") else os.path.join(
                    dest_abs, os.path.basename(src))
                if os.path.isdir(s):
                    shutil.copytree(s, target, dirs_exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                    shutil.copy2(s, target)
        elif kw == "RUN":
            pkgs = apt_packages(arg)
            if pkgs is not None:
                check_build_packages(pkgs, deps)
                continue
            for cmd in arg.split("&&"):
                run_mapped(cmd.strip(), root, root + workdir)
                ran += 1
        elif kw not in ("ENV", "ARG", "LABEL"):
            fail(f"the build stage has {kw}, which the replay does not know")
    if ran == 0:
        fail("the build stage runs no build command")


def check_build_packages(pkgs, deps):
    missing = sorted(set(pkgs) - deps)
    if missing:
        fail(f"build-stage packages not in scripts/install-deps.sh: {' '.join(missing)}")
    for p in pkgs:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            fail(f"build-stage package {p} is not installed here (run scripts/install-deps.sh)")


def run_mapped(cmd, root, cwd):
    # Absolute paths of the image (/src, /opt/...) live under the scratch root here.
    words = [root + w if w.startswith("/") else w for w in shlex.split(cmd)]
    print("dockerfile_replay: RUN", " ".join(words), flush=True)
    env = dict(os.environ)
    if shutil.which("ccache"):  # a cache only: the commands are the Dockerfile's
        env.setdefault("CMAKE_CXX_COMPILER_LAUNCHER", "ccache")
        env.setdefault("CMAKE_C_COMPILER_LAUNCHER", "ccache")
    r = subprocess.run(words, cwd=cwd, env=env)
    if r.returncode != 0:
        fail(f"'{cmd}' exited {r.returncode}")


def with_dependencies(packages):
    """The packages and, recursively, what they depend on (apt installs those with them), as this
    machine's dpkg database records them."""
    seen, todo = set(), list(packages)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        fields = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", p],
                                capture_output=True, text=True).stdout
        for alternative in re.split(r"[,|]", fields):
            name = alternative.strip().split(" ", 1)[0].split(":", 1)[0]
            if name:
                todo.append(name)
    return seen


def check_run_stage(stage, root):
    pkgs, binaries = set(), []
    for kw, arg in stage["steps"]:
        if kw == "RUN" and apt_packages(arg) is not None:
            pkgs |= set(apt_packages(arg))
        if kw == "COPY" and arg.startswith("--from="):
            *srcs, _ = shlex.split(arg)[1:]
            for s in srcs:
                if not os.path.isfile(root + s):
                    fail(f"the run stage copies {s}, which the build stage did not make")
                binaries.append(root + s)
    if not binaries:
        fail("the run stage copies nothing from the build stage")
    installed = with_dependencies(pkgs)
    for b in binaries:
        ldd = subprocess.run(["ldd", b], capture_output=True, text=True, check=True).stdout
        for lib in re.findall(r"=> (/\S+)", ldd):
            owner = subprocess.run(["dpkg", "-S", os.path.realpath(lib)], capture_output=True,
                                   text=True).stdout
            if not owner:
                owner = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True).stdout
            package = owner.split(":", 1)[0].strip()
            if not package:
                fail(f"{b} links {lib}, which no Debian package owns")
            if package not in installed and package not in BASE_IMAGE_PACKAGES:
                fail(f"{os.path.basename(b)} links {lib} from {package}, which the run stage "
                     f"does not install")
    print(f"dockerfile_replay: run stage has every library of {len(binaries)} binaries")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--dockerfile", default="deploy/Dockerfile")
    args = ap.parse_args()
    source = os.path.abspath(args.source)
    text = open(os.path.join(source, args.dockerfile)).read()
    st = stages(instructions(text))
    if len(st) < 2:
        fail("expected a build stage and a run stage")
    root = os.path.abspath(args.work)
    shutil.rmtree(root + "/src", ignore_errors=True)  # a fresh clone each time; ccache keeps it quick
    shutil.rmtree(root + "/opt", ignore_errors=True)
    os.makedirs(root, exist_ok=True)
    deps = install_deps_packages(os.path.join(source, "scripts/install-deps.sh"))
    replay_build(st[0], source, root, deps)
    check_run_stage(st[-1], root)
    print("dockerfile_replay: PASS")


if __name__ == "__main__":
    main()
