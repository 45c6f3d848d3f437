#!/usr/bin/env python3
"""Checks the demo build's configuration, compiling nothing; run by ctest (demo_build_check).

Usage: check-demo-build.py SOURCE_DIR BUILD_DIR
  SOURCE_DIR  the repository
  BUILD_DIR   a normal (non-demo) build directory, the one ctest runs in

Configures the demo build the way scripts/build.sh demo does (GW_DEMO=ON, cmake/demo.cmake) into
a temporary directory, asks ninja for the commands that build the demo's binaries
(`ninja -t commands`, nothing is run), and fails, naming what is wrong, when
  - a compilation of the demo's binaries has no precompiled header in front of it, outside the
    simulator's libraries that are compiled with hidden visibility (NO_PCH): a target added to
    the demo without a group in gw_demo_pch,
  - a compilation reuses a precompiled header made with other flags than its own (GCC would
    ignore the header and parse everything again: the build gets slower, silently),
  - the headers are not made by the targets cmake/demo.cmake names (MAKERS),
  - the compiler launcher is ccache without the sloppiness it needs to cache those compilations,
  - the fallback configuration (GW_DEMO_UNITY_BATCH=0, GW_DEMO_PCH=OFF) still has unity batches
    or precompiled headers, or
  - BUILD_DIR, the normal build, has any of it (precompiled headers are for the demo only).
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile

DEMO_TARGETS = ["gpuwarden", "nvml-sim", "gw-inference-sim", "gw-training-sim"]
NO_PCH = {"gw_sim_core", "nvml-sim"}
MAKERS = {"gw_base", "gw_tsdb", "gw_http", "gpuwarden"}
SLOPPINESS = "CCACHE_SLOPPINESS=pch_defines,time_macros"
# Flags that name files, not how the code is compiled; everything else must agree.
WITH_VALUE = {"-o", "-c", "-MT", "-MF", "-x", "-include", "-isystem"}
ALONE = {"-MD", "-MMD"}


def configure(source, build, batch, pch):
    subprocess.run(
        ["cmake", "-S", source, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         "-DGW_DEMO=ON", "-DGW_BUILD_TESTS=OFF", "-DGW_BUILD_BENCH=OFF",
         "-DGW_BUILD_INTEGRATION=OFF", "-DGW_BUILD_K8S_MODULE=OFF",
         f"-DGW_DEMO_UNITY_BATCH={batch}", f"-DGW_DEMO_PCH={pch}"],
        check=True, stdout=subprocess.DEVNULL)


def cache_value(build, key):
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as cache:
        for line in cache:
            if line.startswith(key + ":"):
                return line.split("=", 1)[1].strip()
    return ""


class Compilation:
    def __init__(self, line, compiler):
        words = shlex.split(line)
        at = words.index(compiler)
        self.launcher = words[:at]
        self.flags = []
        self.output = self.pch = None
        self.makes_pch = False
        i = at + 1
        while i < len(words):
            word = words[i]
            value = words[i + 1] if word in WITH_VALUE and i + 1 < len(words) else None
            if word == "-o":
                self.output = value
            elif word == "-include" and value.endswith("cmake_pch.hxx"):
                self.pch = value
            elif word == "-x" and value == "c++-header":
                self.makes_pch = True
            if value is not None:
                i += 2
                continue
            if word not in ALONE and not word.startswith("-I"):
                self.flags.append(word)
            i += 1
        found = re.search(r"CMakeFiles/([^/]+)\.dir/", self.output or "")
        self.target = found.group(1) if found else "?"


def compilations(build, compiler):
    out = subprocess.run(["ninja", "-C", build, "-t", "commands"] + DEMO_TARGETS, check=True,
                         capture_output=True, text=True).stdout
    seen = set()
    for line in out.splitlines():
        if compiler not in line or " -c " not in line:
            continue
        unit = Compilation(line, compiler)
        if unit.output and unit.output not in seen:
            seen.add(unit.output)
            yield unit


def check_demo(build, errors):
    compiler = cache_value(build, "CMAKE_CXX_COMPILER")
    ccache = cache_value(build, "CCACHE_PROGRAM")
    units = list(compilations(build, compiler))
    makers = {unit.pch: unit for unit in units if unit.makes_pch}
    if {unit.target for unit in makers.values()} != MAKERS:
        made_by = sorted(unit.target for unit in makers.values())
        errors.append(f"demo: precompiled headers made by {made_by}, cmake/demo.cmake says "
                      f"{sorted(MAKERS)}")
    for unit in units:
        if ccache and "NOTFOUND" not in ccache and ccache in unit.launcher and \
                SLOPPINESS not in unit.launcher:
            errors.append(f"demo: {unit.output}: ccache without {SLOPPINESS}: {unit.launcher}")
        if unit.makes_pch:
            continue
        if unit.pch is None:
            if unit.target not in NO_PCH:
                errors.append(f"demo: {unit.output} ({unit.target}) has no precompiled header: "
                              "put its target in a group of gw_demo_pch (cmake/demo.cmake)")
            continue
        maker = makers.get(unit.pch)
        if maker is None:
            errors.append(f"demo: {unit.output}: no compilation makes {unit.pch}")
        elif unit.flags != maker.flags:
            extra = [f for f in unit.flags if f not in maker.flags]
            missing = [f for f in maker.flags if f not in unit.flags]
            errors.append(f"demo: {unit.output} ({unit.target}) reuses {maker.target}'s "
                          f"precompiled header with other flags: +{extra} -{missing}; GCC would "
                          "ignore it: move the target to the group of its flags (cmake/demo.cmake)")
    return len(units)


def check_plain(build, what, errors):
    with open(os.path.join(build, "build.ninja"), encoding="utf-8") as ninja:
        text = ninja.read()
    for mark in ("cmake_pch", "/Unity/", "CCACHE_SLOPPINESS"):
        if mark in text:
            errors.append(f"{what}: build.ninja mentions {mark}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    source, normal = sys.argv[1], sys.argv[2]
    errors = []
    with tempfile.TemporaryDirectory(prefix="gw-demo-check-") as build:
        configure(source, build, 8, "ON")
        count = check_demo(build, errors)
        configure(source, build, 0, "OFF")  # scripts/build.sh demo's fallback
        check_plain(build, "demo fallback", errors)
    check_plain(normal, f"normal build {normal}", errors)
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        return 1
    print(f"demo build: {count} compilations checked; fallback and {normal} without them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
