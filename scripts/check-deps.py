#!/usr/bin/python3
"""Checks that scripts/install-deps.sh names every Debian package the build uses.

install-deps.sh installs without Recommends, so a package that is on this machine only because
someone installed it by hand, or because another package recommends it, is missing on a fresh
machine, and its CMake configure fails there (Debian's libdnnl-dev config needs OpenCL, which only
a recommended package brings). This script sees what the build really uses and maps each file to
the Debian package that owns it:

  1. each configuration (the demo's `scripts/build.sh cli`, the full `scripts/build.sh all`, the
     sanitizer build `scripts/sanitize.sh --configure-only`) is configured afresh in a scratch
     folder under strace: every file opened or executed, including by the compilers CMake's checks
     run; plus every file named in its CMakeCache.txt (found libraries and programs, which CMake
     only stats) and every library on its link lines;
  2. with --build-dir, every header that the compiler read for each object of that build
     (`ninja -t deps`): the library's and the CLI's objects for the demo, all for the tests.

A file passes when a package that owns it is in the closure of the configuration's install group:
the group's packages, Debian's Essential and Priority: required packages (present on every Debian
system), and everything those depend on (Depends and Pre-Depends, recursively; of alternatives
"a | b" the first one installed, as apt picks). Files of the repository, the scratch folders,
/etc, /proc, /sys, /dev, /run and /tmp are not packages' business, and a few files are read only
when present (READ_IF_PRESENT). Any other file fails: named, with its owning package, or as "not
from any Debian package".

  scripts/check-deps.py [--build-dir DIR]       (run by scripts/test.sh after the Release build)
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Files that are not packages' business: configuration, the kernel's, scratch.
NOT_PACKAGED = ("/etc/", "/proc/", "/sys/", "/dev/", "/run/", "/tmp/", "/var/tmp/")
# Files read when present and never required.
READ_IF_PRESENT = (
    "/usr/share/locale/", "/usr/lib/locale/",  # translations: without them, messages are English
    # clang's driver reads the version of an installed CUDA from its cuda.h: under /usr/local/cuda*
    # or, when an nvcc on PATH sits in /usr/local/bin, from /usr/local/include (links into it).
    "/usr/local/cuda", "/usr/local/include/cuda.h",
)
# Used when present, never required: sanitize.sh compiles through ccache if it is installed.
OPTIONAL_PACKAGES = {"ccache"}

PROBE = re.compile(r'execve\("[^"]*", \["[^"]*", "(--help|--version|-v|-V)"\]')

# name, install group, configure command (the scripts' own, so the flags exist once), and which
# objects of a real build belong to it.
CONFIGURATIONS = [
    ("demo", "build", ["scripts/build.sh", "cli", "{dir}", "--configure-only"],
     re.compile(r"^(CMakeFiles/refold\.dir|tools/refold/CMakeFiles/refold_cli(_commands)?\.dir)/")),
    ("tests", "test", ["scripts/build.sh", "all", "{dir}", "--configure-only"], re.compile("")),
    ("sanitizer", "test", ["scripts/sanitize.sh", "{dir}", "--configure-only"], None),
]


def installed_packages():
    """name -> (essential_or_required, provides, depends): dpkg's own records, no apt lists."""
    fields = "${Package}\t${Status}\t${Essential}\t${Priority}\t${Provides}\t${Pre-Depends}, ${Depends}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f=" + fields], check=True, capture_output=True,
                         text=True).stdout
    packages = {}
    for line in out.splitlines():
        name, status, essential, priority, provides, depends = line.split("\t")
        if not status.endswith(" installed"):
            continue
        base = packages.get(name, (False, set(), []))
        packages[name] = (base[0] or essential == "yes" or priority == "required",
                          base[1] | {p.split()[0] for p in provides.split(",") if p.strip()},
                          base[2] + [alt for alt in depends.split(",") if alt.strip()])
    return packages


def closure(roots, packages):
    """The packages apt would have installed for roots, with Essential/required as the base."""
    providers = {}
    for name, (_, provides, _) in packages.items():
        for virtual in provides:
            providers.setdefault(virtual, []).append(name)

    def installed_choice(alternative):
        for option in alternative.split("|"):
            dep = option.split()[0].split(":")[0]  # "libc6 (>= 2.34)" / "python3:any"
            if dep in packages:
                return dep
            if dep in providers:
                return providers[dep][0]
        return None

    todo = list(roots) + [name for name, (base, _, _) in packages.items() if base]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for alternative in packages[name][2]:
            choice = installed_choice(alternative)
            if choice is not None:
                todo.append(choice)
    return seen


def owners():
    """path -> packages, from dpkg's file lists."""
    owned = {}
    for path in glob.glob("/var/lib/dpkg/info/*.list"):
        package = os.path.basename(path)[:-len(".list")].split(":")[0]
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                owned.setdefault(line.rstrip("\n"), set()).add(package)
    return owned


def spellings(path):
    """The names dpkg may list a file under: as opened, resolved, and across Debian's merged /usr."""
    names = {path, os.path.realpath(path)}
    for name in list(names):
        if re.match(r"^/usr/(lib|lib64|bin|sbin)/", name):
            names.add(name[len("/usr"):])
        elif re.match(r"^/(lib|lib64|bin|sbin)/", name):
            names.add("/usr" + name)
    return names


def traced_files(command, scratch):
    """Every absolute path that command, its children and their compilers opened or executed."""
    log = os.path.join(scratch, "strace.log")
    subprocess.run(["strace", "-f", "-qq", "-z", "-e", "trace=open,openat,execve", "-o", log]
                   + command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    files = set()
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.search(r'(?:openat\([^,]+, |open\(|execve\()"(/[^"]*)"', line)
            # Not directories (listed, not used), and not a program asked only who it is: CMake
            # probes for tools (`ld.lld --help`) and takes them only if they are there.
            if m and "O_DIRECTORY" not in line and not PROBE.search(line):
                files.add(m.group(1))
    return files


def configured_files(build):
    """Files CMake found without opening them (cache entries) and the link lines' libraries."""
    files = set()
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            # CMAKE_* entries are CMake's toolchain probing (llvm-ar if present, else ar...):
            # what it really runs, strace sees in its checks' compiler runs.
            m = re.match(r"^([^#/][^:=]*):(?:FILEPATH|PATH|STRING|UNINITIALIZED)=(/.*)$",
                         line.strip())
            if m and not m.group(1).startswith("CMAKE_"):
                files.update(v for v in m.group(2).split(";") if os.path.isfile(v))
    with open(os.path.join(build, "build.ninja"), encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("LINK_LIBRARIES"):
                files.update(t for t in line.split() if t.startswith("/") and os.path.isfile(t))
    return files


def built_headers(build, objects):
    """Headers the compiler read for the objects of a real build whose path matches `objects`."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], check=True, capture_output=True,
                         text=True).stdout
    files, take = set(), False
    for line in out.splitlines():
        if line and not line.startswith(" "):
            take = bool(objects.match(line.split(":")[0]))
        elif take and line.strip().startswith("/"):
            files.add(line.strip())
    return files


def check(name, group, files, packages, owned, skip):
    roots = subprocess.run(["scripts/install-deps.sh", group, "--list"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    absent = [r for r in roots if r not in packages]
    if absent:
        print(f"check-deps: {name}: listed but not installed here: {' '.join(absent)} "
              f"(run scripts/install-deps.sh {group} first)")
        return False
    allowed = closure(roots, packages) | OPTIONAL_PACKAGES
    missing, unowned = {}, []
    for path in sorted(files):
        if path.startswith(REPO + "/") or path.startswith(skip) or path.startswith(NOT_PACKAGED + READ_IF_PRESENT):
            continue
        found = set().union(*(owned.get(s, set()) for s in spellings(path)))
        if not found:
            unowned.append(path)
        elif not found & allowed:
            missing.setdefault(" or ".join(sorted(found)), []).append(path)
    for package, paths in sorted(missing.items()):
        more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
        print(f"check-deps: {name}: uses {paths[0]}{more}, from {package}, which "
              f"'scripts/install-deps.sh {group}' does not install: add it there")
    for path in unowned:
        print(f"check-deps: {name}: uses {path}, which is not from any Debian package")
    ok = not missing and not unowned
    print(f"check-deps: {name}: {len(files)} files, {'all' if ok else 'NOT all'} from the "
          f"{len(roots)} packages of '{group}' and their dependencies")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", help="also check the headers of this Release build")
    args = parser.parse_args()
    packages, owned = installed_packages(), owners()
    ok = True
    for name, group, command, objects in CONFIGURATIONS:
        with tempfile.TemporaryDirectory(prefix=f"check-deps-{name}-") as scratch:
            build = os.path.join(scratch, "build")
            files = traced_files([a.format(dir=build) for a in command], scratch)
            files |= configured_files(build)
            if args.build_dir and objects is not None:
                files |= built_headers(os.path.abspath(args.build_dir), objects)
            ok &= check(name, group, files, packages, owned, scratch + "/")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
