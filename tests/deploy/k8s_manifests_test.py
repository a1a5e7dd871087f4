#!/usr/bin/env python3
"""deploy/kubernetes against the Kubernetes 1.30 schemas, strictly (unknown fields are errors),
with kubernetes-validate from PyPI and its bundled schemas (no network once installed; the venv
lives under the build folder). Custom resources (KEDA's ScaledObject) have no bundled schema:
their shape is checked here. Also checks what ties the files to the server: every flag the
Deployment passes is one qvl-serve --help lists, the grace period covers the preStop pause plus
--shutdown-grace-s, the probes use /health, the image names a registry, and the autoscalers
target the Deployment on qvl_queue_length / qvl_slots_busy. A broken manifest must fail: a
copy with an unknown field is validated too and has to be refused.

usage: k8s_manifests_test.py --source ROOT --venv DIR --serve QVL_SERVE
Prints "k8s_manifests: PASS" on success."""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

KUBERNETES = "1.30.0"
# The venv is the serve tests' (scripts/install-test-tools.sh fills it in CI with both tools).
PACKAGES = ["openai", "kubernetes-validate>=1.30"]


def fail(msg):
    print(f"k8s_manifests: FAIL: {msg}")
    sys.exit(1)


def ensure_venv(venv):
    venv = os.path.abspath(venv)
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    python = os.path.join(venv, "bin", "python")
    ready = os.path.exists(os.path.join(venv, ".qvl-ready")) and subprocess.run(
        [python, "-c", "import kubernetes_validate"], capture_output=True).returncode == 0
    if not ready:
        if not os.path.exists(python):
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                           check=True, timeout=120)
        r = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                            *PACKAGES], timeout=600)
        if r.returncode != 0:
            fail(f"cannot install {' '.join(PACKAGES)} into {venv} (PyPI unreachable? "
                 f"scripts/install-test-tools.sh installs them)")
        open(os.path.join(venv, ".qvl-ready"), "w").close()
    os.execv(python, [python, *sys.argv])


def validate(path):
    r = subprocess.run([os.path.join(sys.prefix, "bin", "kubernetes-validate"), "-k", KUBERNETES,
                        "--strict", path], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def check_custom(doc, path):
    if doc["apiVersion"] != "keda.sh/v1alpha1" or doc["kind"] != "ScaledObject":
        fail(f"{path}: no schema for {doc['apiVersion']} {doc['kind']} and no check here")
    spec = doc["spec"]
    allowed = {"scaleTargetRef", "minReplicaCount", "maxReplicaCount", "cooldownPeriod",
               "pollingInterval", "triggers", "advanced", "fallback", "idleReplicaCount"}
    if set(spec) - allowed:
        fail(f"{path}: unknown ScaledObject fields {sorted(set(spec) - allowed)}")
    if spec["scaleTargetRef"].get("name") != "qvl-serve":
        fail(f"{path}: does not target the qvl-serve Deployment")
    queries = " ".join(t["metadata"]["query"] for t in spec["triggers"] if t["type"] == "prometheus")
    for m in ("qvl_queue_length", "qvl_slots_busy"):
        if m not in queries:
            fail(f"{path}: no trigger on {m}")


def check_deployment(doc, help_text):
    pod = doc["spec"]["template"]["spec"]
    c = pod["containers"][0]
    image = c["image"]
    if "/" not in image.split(":")[0] or image.endswith(":latest"):
        fail(f"image {image}: name a registry and a version")
    args = c["args"]
    for a in args:
        if a.startswith("--") and a not in help_text:
            fail(f"the Deployment passes {a}, which qvl-serve --help does not list")
    grace = int(args[args.index("--shutdown-grace-s") + 1]) if "--shutdown-grace-s" in args else 25
    pause = int(c["lifecycle"]["preStop"]["exec"]["command"][-1])
    if pod["terminationGracePeriodSeconds"] < pause + grace:
        fail(f"terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} < preStop "
             f"{pause} + --shutdown-grace-s {grace}")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        if c[probe]["httpGet"]["path"] != "/health":
            fail(f"{probe} is not on /health")
    return grace


def check_dashboard(source):
    """Every series the Grafana dashboard plots is one the server exports."""
    import json
    import re
    dash = json.load(open(os.path.join(source, "deploy/grafana/qvl-serve.json")))
    exported = open(os.path.join(source, "apps/qvl_serve/metrics.cpp")).read()
    for panel in dash["panels"]:
        for t in panel["targets"]:
            for name in re.findall(r"\bqvl_\w+", t["expr"]):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if base not in exported:
                    fail(f"the dashboard plots {name}, which /metrics does not export")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--serve", required=True)
    args = ap.parse_args()
    ensure_venv(args.venv)
    import yaml  # kubernetes-validate's dependency, in the venv

    help_text = subprocess.run([args.serve, "--help"], capture_output=True, text=True).stdout
    files = sorted(glob.glob(os.path.join(args.source, "deploy/kubernetes/**/*.yaml"),
                             recursive=True))
    if not files:
        fail("no manifests under deploy/kubernetes")
    kinds = []
    for path in files:
        code, out = validate(path)
        if code != 0 or "ERROR" in out:
            fail(f"{path}:\n{out}")
        for doc in yaml.safe_load_all(open(path)):
            kinds.append(doc["kind"])
            if "Couldn't find schema" in out and doc["kind"] == "ScaledObject":
                check_custom(doc, path)
            if doc["kind"] == "Deployment":
                check_deployment(doc, help_text)
            if doc["kind"] == "HorizontalPodAutoscaler":
                names = {m["pods"]["metric"]["name"] for m in doc["spec"]["metrics"]}
                if names != {"qvl_queue_length", "qvl_slots_busy"}:
                    fail(f"{path}: the HPA scales on {sorted(names)}")
    for k in ("Deployment", "Service", "PersistentVolumeClaim", "HorizontalPodAutoscaler",
              "ScaledObject"):
        if k not in kinds:
            fail(f"no {k} under deploy/kubernetes")
    check_dashboard(args.source)
    # The validator must be able to say no: an unknown field in a copy of the Deployment.
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as bad:
        doc = yaml.safe_load(open(os.path.join(args.source, "deploy/kubernetes/deployment.yaml")))
        doc["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
        yaml.safe_dump(doc, bad)
    code, out = validate(bad.name)
    os.unlink(bad.name)
    if code == 0:
        fail(f"a Deployment with an unknown field passed validation:\n{out}")
    print(f"k8s_manifests: {len(files)} files, {len(kinds)} resources valid for Kubernetes "
          f"{KUBERNETES} (strict)")
    print("k8s_manifests: PASS")


if __name__ == "__main__":
    main()
