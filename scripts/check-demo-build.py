#!/usr/bin/env python3
"""Checks the demo build's configuration, compiling nothing; run by ctest (demo_build_check).

Usage: check-demo-build.py SOURCE_DIR BUILD_DIR
  SOURCE_DIR  the repository
  BUILD_DIR   a normal (non-demo) build directory, the one ctest runs in

Configures the demo build the way scripts/build.sh demo does (GW_DEMO=ON, cmake/demo.cmake) into
a temporary directory, asks ninja for the commands that build the demo's binaries
(`ninja -t commands`, nothing is run), and fails, naming what is wrong, when
  - a compilation of the demo's binaries has debug information (-g), is not -O1, or compiles a
    part of the Kubernetes module's gRPC code,
  - the demo's libraries are not compiled in unity batches,
  - a file that gw_demo_unity_exceptions (cmake/demo.cmake) compiles on its own is not compiled
    on its own (a name misspelt or moved: the unity build would fail and scripts/build.sh demo
    would fall back to building file by file, twice the time),
  - the fallback configuration (GW_DEMO_UNITY_BATCH=0) still has unity batches, or
  - BUILD_DIR, the normal build, has unity batches.
What it cannot see: a new file that collides with its batch (only compiling finds that).
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile

DEMO_TARGETS = ["gpuwarden", "nvml-sim", "gw-inference-sim", "gw-training-sim"]
SKIP_LINE = re.compile(r"^\s+([a-z_0-9/]+) ([a-z_0-9]+\.cpp)\s*$")


def configure(source, build, batch):
    subprocess.run(
        ["cmake", "-S", source, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         "-DGW_DEMO=ON", "-DGW_BUILD_TESTS=OFF", "-DGW_BUILD_BENCH=OFF",
         "-DGW_BUILD_INTEGRATION=OFF", "-DGW_BUILD_K8S_MODULE=OFF",
         f"-DGW_DEMO_UNITY_BATCH={batch}"],
        check=True, stdout=subprocess.DEVNULL)


def unity_exceptions(source):
    """The (folder, file) pairs listed in gw_demo_unity_exceptions."""
    with open(os.path.join(source, "cmake", "demo.cmake"), encoding="utf-8") as cmake:
        text = cmake.read()
    body = text.split("function(gw_demo_unity_exceptions)", 1)[1].split("endfunction()", 1)[0]
    return [m.groups() for m in map(SKIP_LINE.match, body.splitlines()) if m]


def compilations(build):
    """(output, source, words) of each compilation the demo's binaries need."""
    out = subprocess.run(["ninja", "-C", build, "-t", "commands"] + DEMO_TARGETS, check=True,
                         capture_output=True, text=True).stdout
    seen = set()
    for line in out.splitlines():
        words = shlex.split(line)
        if "-c" not in words or "-o" not in words:
            continue
        output = words[words.index("-o") + 1]
        if output not in seen:
            seen.add(output)
            yield output, words[words.index("-c") + 1], words


def check_demo(source, build, errors):
    units = list(compilations(build))
    for output, _, words in units:
        if any(word == "-g" or word.startswith("-g") and word[2:3].isdigit() for word in words):
            errors.append(f"demo: {output} has debug information (-g)")
        if "-O1" not in words:
            errors.append(f"demo: {output} is not compiled with -O1")
        if "grpc" in output or ".pb." in output:
            errors.append(f"demo: {output} is the Kubernetes module's gRPC code")
    batches = [output for output, _, _ in units if "/Unity/" in output]
    if len(batches) < len(units) // 2:
        errors.append(f"demo: only {len(batches)} of {len(units)} compilations are unity batches")
    alone = {os.path.relpath(src, source) for _, src, _ in units if "/Unity/" not in src}
    for folder, name in unity_exceptions(source):
        path = os.path.join("src", folder, name)
        if path not in alone:
            errors.append(f"demo: {path}, listed in gw_demo_unity_exceptions (cmake/demo.cmake), "
                          "is not compiled on its own in the demo build")
    return len(units)


def check_no_unity(build, what, errors):
    with open(os.path.join(build, "build.ninja"), encoding="utf-8") as ninja:
        if "/Unity/" in ninja.read():
            errors.append(f"{what}: build.ninja has unity batches")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    source, normal = os.path.realpath(sys.argv[1]), sys.argv[2]
    errors = []
    with tempfile.TemporaryDirectory(prefix="gw-demo-check-") as build:
        configure(source, build, 8)
        count = check_demo(source, build, errors)
        configure(source, build, 0)  # scripts/build.sh demo's fallback
        check_no_unity(build, "demo fallback (GW_DEMO_UNITY_BATCH=0)", errors)
    check_no_unity(normal, f"normal build {normal}", errors)
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        return 1
    print(f"demo build: {count} compilations checked; the fallback and {normal} without unity")
    return 0


if __name__ == "__main__":
    sys.exit(main())
