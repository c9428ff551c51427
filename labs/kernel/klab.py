#!/usr/bin/env python3
"""klab.py: the kernel parts of the labs: a 6.12 tree to edit, its build, boot and grade.

Usage: labs/kernel/klab.py COMMAND [LAB] [options]

  tree LAB [--dst DIR]     write work/kernel/NN-slug/ (or DIR): the cached 6.12
                           tree with our series and the lab's skeleton (its TODO
                           regions hold stubs with stock behaviour), a git
                           repository whose first commit is tagged `skeleton`
  build LAB [--tree DIR]   build that tree incrementally in the debug
                           configuration (build/klab/NN-slug/...)
  grade LAB [--tree DIR] [--json FILE]
                           build, boot under the debug configuration, run the
                           lab's kernel tests (labs/NN-slug/kernel/tests) and
                           print one line per test, a score and the time split
  shell LAB [--tree DIR]   build and boot it to a shell on this terminal
  gdb LAB [--tree DIR] [--port N] [--batch FILE]
                           build, boot it halted under QEMU's gdb stub while the
                           lab's first test run waits to start, and attach gdb
                           with vmlinux (--batch: run gdb's commands from FILE)
  patch LAB [--tree DIR]   your commits since `skeleton` as mail-ready patches
                           (git format-patch), checked by the tree's
                           scripts/checkpatch.pl --strict; then the seed's message
  check LAB                the solution (our series) passes every test and the
                           skeleton fails exactly the todoN_ tests
  mutants LAB [--only NAME]
                           every labs/NN-slug/kernel/mutants/*.patch is rejected
                           by the test its caught-by: line names (only the run
                           holding that test boots)
  bench LAB                one edit of the lab's file, then its graded result:
                           the time of build, boot and tests (goal: 2 minutes)
  lint [LAB]               no build, no boot: the skeleton and every mutant apply
                           to the series, the tests file parses, enough mutants

LAB is NN or NN-slug (a lab with a kernel/ directory). `check` and `mutants`
reuse a verdict whose inputs did not change (build/cache/klab/;
MMLOCKS_NO_VERDICT_CACHE=1 reruns). Environment: MMLOCKS_CACHE, VCPUS, MEM,
as for labs/kernel/run-qemu.sh; JOBS (make -j, default nproc).
Exit status: 0 success (every test passed), 1 a failure, 2 bad usage.
"""
import fcntl
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import kparts  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
PROG = "labs/kernel/klab.py"
GUEST_SETTINGS = "sysctl.kernel.hung_task_timeout_secs=30 sysctl.kernel.hung_task_panic=1"
BOOT_BUDGET = 300       # seconds from QEMU's start to /init's first line
RUN_GRACE = 45          # seconds past a run's own limit before the host stops the guest
# The configuration a lab's kernel is (and whose objects seed its build): the
# debug kernel. A later configuration (say build.sh --debug --tools) goes here.
SEED_FLAGS = ["--debug"]


def usage(out=sys.stderr):
    out.write(__doc__.split("\n", 2)[2])


def die(msg, code=1):
    sys.stderr.write(f"{PROG}: error: {msg}\n")
    sys.exit(code)


def die_usage(msg):
    sys.stderr.write(f"{PROG}: {msg}\n")
    usage()
    sys.exit(2)


def say(msg):
    print(f"{PROG}: {msg}", flush=True)


def rel(p):
    p = os.path.abspath(p)
    return os.path.relpath(p, TOP) if p.startswith(TOP + "/") else p


# ---------------------------------------------------------------- the lab

class Lab:
    def __init__(self, arg):
        dirs = sorted(glob.glob(os.path.join(TOP, "labs", arg))) + \
            sorted(glob.glob(os.path.join(TOP, "labs", f"{arg}-*")))
        dirs = [d for d in dirs if os.path.isdir(os.path.join(d, "kernel"))]
        if len(dirs) != 1:
            have = [os.path.basename(os.path.dirname(d)) for d in
                    sorted(glob.glob(os.path.join(TOP, "labs", "*", "kernel")))]
            die_usage(f"LAB={arg}: no such lab with a kernel part (labs with one: {', '.join(have) or 'none'})")
        self.dir = dirs[0]
        self.slug = os.path.basename(self.dir)
        self.num = self.slug[:2]
        self.kdir = os.path.join(self.dir, "kernel")
        self.skeleton = os.path.join(self.kdir, "skeleton.patch")
        # A students' copy ships no skeleton.patch: its series carries the
        # skeleton (labs/kernel/kparts.py fold), the solution is not there.
        self.has_skeleton = os.path.isfile(self.skeleton)
        self.tests_file = os.path.join(self.kdir, "tests")
        self.runs = parse_tests(self.tests_file)
        self.tests = [t for r in self.runs for t in r["tests"]]
        self.build_root = os.path.join(TOP, "build", "klab", self.slug)
        self.default_tree = os.path.join(TOP, "work", "kernel", self.slug)

    def mutants(self):
        return sorted(glob.glob(os.path.join(self.kdir, "mutants", "*.patch")))

    def files(self):
        """The kernel files holding the lab's TODO regions."""
        return kparts.lab_files(self.slug, TOP)

    def need_solution(self, what):
        if not self.has_skeleton:
            die(f"{what} proves the grader against the solution and the wrong answers, which a "
                f"students' copy does not have (your instructor runs it)")


def parse_tests(path):
    if not os.path.isfile(path):
        die(f"{rel(path)} missing")
    runs = []
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        w = line.split()
        if w[0] == "run" and len(w) >= 4 and w[2].isdigit():
            if any(r["name"] == w[1] for r in runs):
                die(f"{rel(path)}:{n}: run {w[1]} twice")
            runs.append({"name": w[1], "seconds": int(w[2]), "cmd": " ".join(w[3:]), "tests": [], "needs": []})
        elif w[0] == "test" and len(w) >= 2 and runs:
            runs[-1]["tests"].append({"name": w[1], "what": " ".join(w[2:]), "run": runs[-1]["name"]})
        elif w[0] == "needs" and len(w) == 2 and runs:
            # The run goes through another lab's kernel part too (lab 01's
            # khugepaged run retakes in lab 02's skip batch): in a students'
            # copy its tests wait while that part is a stub in the tree.
            runs[-1].setdefault("needs", []).append(w[1])
        else:
            die(f"{rel(path)}:{n}: expected 'run NAME SECONDS COMMAND...', 'test NAME WHAT' or 'needs LAB'")
    names = [t["name"] for r in runs for t in r["tests"]]
    if not names or len(set(names)) != len(names):
        die(f"{rel(path)}: no tests, or a test named twice")
    for r in runs:
        if not r["tests"]:
            die(f"{rel(path)}: run {r['name']} decides no test")
    return runs


def patch_files(path):
    out = []
    for line in open(path, errors="replace"):
        m = re.match(r"^diff --git a/(\S+) b/(\S+)$", line)
        if m:
            out += [m.group(1), m.group(2)]
    return sorted(set(out))


def series_patches():
    pd = os.path.join(HERE, "patches")
    out = []
    for line in open(os.path.join(pd, "series")):
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(os.path.join(pd, line))
    return out


# ------------------------------------------------------- the kernel cache

def cache_info():
    r = subprocess.run([os.path.join(HERE, "build.sh")] + SEED_FLAGS + ["--info"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        die(f"build.sh --debug --info failed: {r.stderr.strip()}")
    info = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition("=")
        info[k] = shlex.split(v)[0] if v else ""
    return info


def ensure_debug_kernel():
    """The debug kernel in the cache (its tree and objects seed every lab tree) and the base initramfs."""
    info = cache_info()
    if info.get("built") != "1" or not os.path.isfile(os.path.join(info["obj"], "vmlinux")):
        say("building the debug kernel first (labs/kernel/build.sh --debug; a cold build takes "
            "6 to 30 minutes on 2 cores)")
        if subprocess.run(["timeout", "-k", "10", "5400", os.path.join(HERE, "build.sh")] + SEED_FLAGS).returncode:
            die("the debug kernel did not build (labs/kernel/build.sh --debug)")
        info = cache_info()
    if subprocess.run([os.path.join(HERE, "mkinitramfs.sh")]).returncode:
        die("the initramfs did not build (labs/kernel/mkinitramfs.sh)")
    return info


def synced_cache():
    """Call with CacheLock held: the shared tree and the debug objects hold this series.

    Other checkouts with another series share the cached tree (and, with
    the same configuration, the objects): build.sh --sync puts ours back
    (only the files that differ get new mtimes, so make stays incremental).
    """
    info = cache_info()
    if info.get("treeseries") != info["series"] or info.get("objseries") != info["series"]:
        say(f"the kernel cache holds another state of the series (tree {info.get('treeseries')}, "
            f"objects {info.get('objseries')}, ours {info['series']}): build.sh --sync")
        r = subprocess.run(["timeout", "-k", "10", "5400", os.path.join(HERE, "build.sh")] + SEED_FLAGS +
                           ["--sync"], env=dict(os.environ, MMLOCKS_BUILD_LOCKED="1"))
        info = cache_info()
        if r.returncode or info.get("treeseries") != info["series"] or info.get("objseries") != info["series"]:
            die("build.sh --sync did not bring the cache to this series")
    return info


class CacheLock:
    """build.sh's lock: the cached tree and objects do not change while we copy them."""
    def __enter__(self):
        cache = os.environ.get("MMLOCKS_CACHE", os.path.expanduser("~/.cache/mmlocks"))
        self.f = open(os.path.join(cache, "build.lock"), "a")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("waiting for a kernel build to finish (the cache's build.lock)")
            fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *a):
        self.f.close()


# ------------------------------------------------------------- the trees

def private_copy(path):
    """Give path its own inode (same content and mtime): a hard link no more."""
    st = os.stat(path)
    tmp = path + ".klab-tmp"
    shutil.copy2(path, tmp)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, path)


def lab_dirs(lab):
    """Directories holding a file the series or the lab's skeleton touches: copied, tracked by git."""
    files = [f for p in series_patches() + ([lab.skeleton] if lab.has_skeleton else []) + lab.mutants()
             for f in patch_files(p)]
    return sorted({os.path.dirname(f) for f in files})


def make_tree(lab, dst, skeleton=True, git=True):
    if os.path.exists(dst):
        die(f"{rel(dst)} exists (your work?): kept; give --dst for another")
    info = ensure_debug_kernel()
    t0 = time.time()
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = dst + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    with CacheLock():
        info = synced_cache()
        if subprocess.run(["cp", "-al", info["tree"], tmp]).returncode:
            die(f"cp -al {info['tree']} {tmp} failed (the same file system as the cache?)")
        if os.path.exists(os.path.join(tmp, ".mmlocks-tree")):
            os.unlink(os.path.join(tmp, ".mmlocks-tree"))
        tracked = []
        for d in lab_dirs(lab):
            full = os.path.join(tmp, d)
            if not os.path.isdir(full):
                continue
            for e in os.scandir(full):
                if e.is_file(follow_symlinks=False):
                    private_copy(e.path)
                    tracked.append(os.path.join(d, e.name))
    if skeleton and lab.has_skeleton:
        r = subprocess.run(["patch", "-p1", "-s", "--fuzz=0", "--no-backup-if-mismatch", "-d", tmp,
                            "-i", lab.skeleton], capture_output=True, text=True)
        if r.returncode:
            shutil.rmtree(tmp, ignore_errors=True)
            die(f"{rel(lab.skeleton)} does not apply to the series:\n{r.stdout}{r.stderr}")
    carried = []
    if skeleton and not lab.has_skeleton:
        # A students' copy: the other kernel parts the student has done come
        # along (their committed work since `skeleton`, in this tree's first
        # commit), so a run that goes through them tests them as written.
        with tempfile.TemporaryDirectory(prefix="klab-parts.") as pd:
            for p in kparts.student_patches(pd, TOP):
                if os.path.basename(p)[:-len(".patch")] == lab.slug:
                    continue
                ok, msg = apply_patch(tmp, p)
                if not ok:
                    shutil.rmtree(tmp, ignore_errors=True)
                    die(f"your committed work of {os.path.basename(p)[:-6]} does not apply here:\n{msg}")
                carried.append(os.path.basename(p)[:-6])
        if carried:
            say(f"your committed kernel part(s) of {', '.join(carried)} are in this tree's first commit")
    meta = {"lab": lab.slug, "series": info["series"], "cfg": info["cfg"], "cache_tree": info["tree"],
            "pristine": info["pristine"], "skeleton": skeleton, "created": int(time.time())}
    gdir = os.path.join(tmp, ".git") if git else os.path.join(tmp, ".klab")
    if git:
        env = dict(os.environ, GIT_AUTHOR_NAME="mmlocks", GIT_AUTHOR_EMAIL="mmlocks@example.invalid",
                   GIT_COMMITTER_NAME="mmlocks", GIT_COMMITTER_EMAIL="mmlocks@example.invalid")
        g = ["git", "-C", tmp]
        ok = subprocess.run(g + ["init", "-q"]).returncode == 0
        for k, v in (("status.showUntrackedFiles", "no"), ("gc.auto", "0"),
                     ("advice.addIgnoredFile", "false")):
            ok = ok and subprocess.run(g + ["config", k, v]).returncode == 0
        ok = ok and subprocess.run(g + ["add", "-f", "--pathspec-from-file=-"],
                                   input="\n".join(tracked) + "\n", text=True).returncode == 0
        where = (f"labs/kernel/patches with labs/{lab.slug}/kernel/skeleton.patch on top.\n" if lab.has_skeleton
                 else "labs/kernel/patches, which carries the skeleton (the TODO regions).\n")
        msg = (f"skeleton: Linux {os.path.basename(info['pristine'])} + mmlocks series + lab {lab.num}\n\n"
               f"The starting point of lab {lab.slug}'s kernel part: the series of\n"
               + where +
               f"Git tracks the directories the series touches; `git diff skeleton`\n"
               f"shows your work.\n")
        ok = ok and subprocess.run(g + ["commit", "-q", "-m", msg], env=env).returncode == 0
        ok = ok and subprocess.run(g + ["tag", "skeleton"]).returncode == 0
        if not ok:
            die("making the git repository failed")
    else:
        os.makedirs(gdir, exist_ok=True)
    with open(os.path.join(gdir, "klab.json"), "w") as f:
        json.dump(meta, f, indent=1)
    # Files written after this (in place through a hard link) are found by guard().
    with open(os.path.join(gdir, "klab-stamp"), "w"):
        pass
    os.rename(tmp, dst)
    return time.time() - t0, len(tracked)


def tree_meta(tree):
    for d in (".git", ".klab"):
        p = os.path.join(tree, d, "klab.json")
        if os.path.isfile(p):
            return json.load(open(p)), os.path.join(tree, d)
    die(f"{rel(tree)} is not a kernel lab tree (no .git/klab.json): make kernel-tree LAB=NN")


def guard(tree):
    """Edits written through a hard link into the cache: keep them here, undo them there."""
    meta, gdir = tree_meta(tree)
    stamp = os.path.join(gdir, "klab-stamp")
    r = subprocess.run(["find", tree, "-path", os.path.join(tree, ".git"), "-prune", "-o",
                        "-path", os.path.join(tree, ".klab"), "-prune", "-o",
                        "-type", "f", "-links", "+1", "-newer", stamp, "-print"],
                       capture_output=True, text=True)
    for path in r.stdout.split("\n"):
        if not path:
            continue
        relp = os.path.relpath(path, tree)
        pristine = os.path.join(meta["pristine"], relp)
        try:
            if open(path, "rb").read() == open(pristine, "rb").read():
                continue    # written back by another tree's guard(): nothing was edited
        except OSError:
            pass
        shared_ino = os.stat(path).st_ino
        private_copy(path)
        say(f"warning: {relp} was edited in place while it was a hard link into the kernel cache; "
            f"it is now a file of its own in {rel(tree)}")
        cached = os.path.join(meta["cache_tree"], relp)
        if os.path.isfile(pristine) and os.path.isfile(cached) and os.stat(cached).st_ino == shared_ino:
            with open(pristine, "rb") as src, open(cached, "r+b") as dstf:
                data = src.read()
                dstf.write(data)
                dstf.truncate(len(data))
            say(f"         the cache's copy was written back from the pristine source (it will be rebuilt)")
        if os.path.isdir(os.path.join(tree, ".git")):
            subprocess.run(["git", "-C", tree, "add", "-f", relp])


# ------------------------------------------------------------ the build

def objdir_for(lab, tree):
    tree = os.path.realpath(tree)
    if tree == os.path.realpath(lab.default_tree):
        tag = "work"
    elif tree == os.path.realpath(os.path.join(lab.build_root, "check", "tree")):
        tag = "check"
    else:
        tag = "tree-" + hashlib.sha256(tree.encode()).hexdigest()[:8]
    return os.path.join(lab.build_root, tag)


def seed_obj(info, tree, out):
    """out/obj = a copy of the debug kernel's objects, its paths rewritten to tree: an incremental first build."""
    obj = os.path.join(out, "obj")
    stamp = os.path.join(obj, ".klab-seed.json")
    rtree = os.path.realpath(tree)
    want = {"cfg": info["cfg"], "tree": rtree, "series": info["series"]}
    try:
        have = json.load(open(stamp))
        if all(have.get(k) == v for k, v in want.items()):
            return 0.0
    except (OSError, ValueError):
        pass
    t0 = time.time()
    say(f"seeding {rel(obj)} from the debug kernel's objects (once per tree and configuration)")
    shutil.rmtree(obj, ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    with CacheLock():
        info = synced_cache()
        if subprocess.run(["cp", "-a", info["obj"], obj + ".tmp"]).returncode:
            die(f"copying {info['obj']} failed")
    shutil.rmtree(os.path.join(obj + ".tmp", ".tmp"), ignore_errors=True)
    for f in ("build.log", "config.log"):
        if os.path.exists(os.path.join(obj + ".tmp", f)):
            os.unlink(os.path.join(obj + ".tmp", f))
    old = info["tree"].encode()
    new = rtree.encode()
    oldobj = info["obj"].encode()
    newobj = os.path.realpath(obj).encode()
    n = 0
    for root, dirs, files in os.walk(obj + ".tmp"):
        for name in files + dirs:
            p = os.path.join(root, name)
            if os.path.islink(p):
                t = os.readlink(p)
                if t.startswith(info["tree"]):
                    os.unlink(p)
                    os.symlink(rtree + t[len(info["tree"]):], p)
                continue
            if name in dirs:
                continue
            if not (name.endswith(".cmd") or name.endswith(".d") or
                    (name == "Makefile" and root == obj + ".tmp")):
                continue
            data = open(p, "rb").read()
            if old in data or oldobj in data:
                st = os.stat(p)
                with open(p, "wb") as f:
                    f.write(data.replace(old, new).replace(oldobj, newobj))
                os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
                n += 1
    os.rename(obj + ".tmp", obj)
    with open(stamp, "w") as f:
        json.dump(dict(want, cache_obj=info["obj"], rewritten=n), f)
    return time.time() - t0


def changed_files(tree):
    if os.path.isdir(os.path.join(tree, ".git")):
        r = subprocess.run(["git", "-C", tree, "diff", "--name-only", "skeleton"], capture_output=True, text=True)
        return [f for f in r.stdout.split("\n") if f]
    return []


def build(lab, tree, info=None, quiet=False):
    """Incremental build of a lab tree; returns (seconds, objects compiled, out dir)."""
    tree = os.path.abspath(tree)
    if not os.path.isdir(tree):
        die(f"{rel(tree)} missing: make kernel-tree LAB={lab.num}")
    meta, _ = tree_meta(tree)
    info = info or ensure_debug_kernel()
    if meta["series"] != info["series"]:
        say(f"warning: {rel(tree)} was made from another state of the patch series "
            f"(labs/kernel/patches changed since): your tree keeps the old one")
    guard(tree)
    out = objdir_for(lab, tree)
    seed_s = seed_obj(info, tree, out)
    obj = os.path.join(out, "obj")
    os.makedirs(os.path.join(obj, ".tmp"), exist_ok=True)
    log = os.path.join(out, "build.log")
    jobs = os.environ.get("JOBS", str(os.cpu_count() or 2))
    cmd = ["timeout", "-k", "10", "3600", "make", "-C", tree, f"O={obj}", "ARCH=x86_64",
           f"LOCALVERSION={info['localversion']}", f"-j{jobs}", "bzImage", "scripts_gdb"]
    if not quiet:
        say(f"build: {rel(tree)} -> {rel(obj)} (make -j{jobs} bzImage; log {rel(log)})")
    t0 = time.time()
    with open(log, "w") as lf:
        r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           env=dict(os.environ, TMPDIR=os.path.join(obj, ".tmp")))
    secs = time.time() - t0
    text = open(log, errors="replace").read()
    ncc = len(re.findall(r"^  CC ", text, re.M))
    if r.returncode:
        errs = [l for l in text.split("\n") if re.search(r"\berror\b|Error \d", l)]
        print(f"---- {rel(log)}: the errors ----")
        print("\n".join(errs[:40]) if errs else "\n".join(text.split("\n")[-40:]))
        print("----")
        return None, ncc, out
    watch = set(changed_files(tree)) | set(lab.files())
    warn = [l for l in text.split("\n") if "warning:" in l and
            any(l.startswith(f + ":") or ("/" + f + ":") in l for f in watch)]
    if warn:
        print("\n".join(warn[:20]))
        say(f"build: warnings in the lab's files are errors here (full log: {rel(log)})")
        return None, ncc, out
    shutil.copy(os.path.join(obj, "arch/x86/boot/bzImage"), os.path.join(out, "bzImage"))
    krel = open(os.path.join(obj, "include/config/kernel.release")).read().strip()
    with open(os.path.join(out, "kernelrelease"), "w") as f:
        f.write(krel + "\n")
    if not quiet:
        say(f"build: {secs:.0f} s ({ncc} C files compiled{f', objects seeded in {seed_s:.0f} s' if seed_s else ''})"
            f", Linux {krel}")
    return secs, ncc, out


# ------------------------------------------------------------- the boot

def splat_regex():
    text = open(os.path.join(HERE, "debug-check.sh")).read()
    m = re.search(r"^SPLATS='(.*)'$", text, re.M)
    if not m:
        die("no SPLATS= line in labs/kernel/debug-check.sh")
    return re.compile(m.group(1))


def compose_initrd(lab, out, runs):
    ov = os.path.join(out, "overlay")
    shutil.rmtree(ov, ignore_errors=True)
    os.makedirs(os.path.join(ov, "etc", "mmlocks"))
    with open(os.path.join(ov, "etc", "mmlocks", "experiments"), "w") as f:
        f.write(f"# lab {lab.slug}, kernel part: labs/{lab.slug}/kernel/tests\n")
        for r in runs:
            f.write(f"{r['name']}  {r['cmd']}\n")
    initrd = os.path.join(out, "initramfs.cpio.gz")
    if subprocess.run([os.path.join(HERE, "overlay.sh"), os.path.join(TOP, "build", "initramfs.cpio.gz"),
                       initrd, ov]).returncode:
        die("composing the initramfs failed")
    return initrd


def boot_and_run(lab, out, runs, tag="grade"):
    """Boot out/bzImage with the runs; a host watchdog ends a hung run. Returns a dict of what happened."""
    initrd = compose_initrd(lab, out, runs)
    con = os.path.join(out, f"{tag}.console.log")
    res = os.path.join(out, f"{tag}.jsonl")
    gt = max(r["seconds"] for r in runs)
    total = BOOT_BUDGET + sum(r["seconds"] + RUN_GRACE for r in runs)
    append = (f"mmlocks.mode=run mmlocks.run={','.join(r['name'] for r in runs)} "
              f"mmlocks.timeout={gt} {GUEST_SETTINGS}")
    cmd = [os.path.join(HERE, "run-qemu.sh"), "--kernel", os.path.join(out, "bzImage"), "--initrd", initrd,
           "--timeout", str(total), "--append", append, "--results", res, "--console-log", con]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=False)
    limits = {r["name"]: r["seconds"] + RUN_GRACE for r in runs}
    t_init = None
    cur, started = None, {}
    stopped = None
    while p.poll() is None:
        time.sleep(0.5)
        try:
            text = open(con, errors="replace").read()
        except OSError:
            text = ""
        now = time.time()
        if t_init is None and "init: " in text:
            t_init = now
        if t_init is None and now - t0 > BOOT_BUDGET:
            stopped = f"the kernel did not reach /init within {BOOT_BUDGET} s"
        cur = None
        for m in re.finditer(r"init: experiment (\S+): (rc=)?", text):
            if m.group(2):
                if m.group(1) == cur:
                    cur = None
            elif m.group(1) in limits:
                cur = m.group(1)
                started.setdefault(cur, now)
        if cur and now - started[cur] > limits[cur]:
            stopped = f"run {cur} did not end within {limits[cur]} s"
        if stopped:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
            break
    runner_out = p.communicate()[0] if p.stdout else ""
    t_end = time.time()
    return {"rc": p.returncode, "stopped": stopped, "console": con, "results": res, "runner": runner_out,
            "boot_s": (t_init or t_end) - t0, "tests_s": t_end - (t_init or t_end), "hung_run": cur if stopped else None}


def judge(lab, runs, boot):
    """One verdict per test: its run's record, exit status and console window."""
    splat = splat_regex()
    records, ends, begins, guest = {}, {}, set(), {}
    try:
        raw = open(boot["results"], "rb").read().decode("utf-8", "replace")
    except OSError:
        raw = ""
    for line in raw.split("\n"):
        try:
            r = json.loads(line.strip("\0\r "))
        except ValueError:
            continue
        if r.get("type") == "guest":
            guest = r
        elif r.get("type") == "begin" and "experiment" in r:
            begins.add(r["experiment"])
        elif r.get("type") == "end" and "experiment" in r:
            ends[r["experiment"]] = r
        elif r.get("type") == "test" and r.get("name"):
            records[r["name"]] = r
        elif r.get("type") == "error":
            records.setdefault("_errors", []).append(r.get("msg", ""))
    try:
        con = open(boot["console"], errors="replace").read().split("\n")
    except OSError:
        con = []
    windows, where = {}, "boot"
    for i, line in enumerate(con):
        m = re.search(r"init: experiment (\S+): (rc=)?", line)
        if m:
            where = m.group(1)   # a report just after a run's end is still charged to it
            continue
        if splat.search(line):
            windows.setdefault(where, []).append(i)
    lockdep = any("Lock dependency validator" in l for l in con)
    if not boot["stopped"]:
        panic = next((l.strip() for l in con if "Kernel panic" in l), None)
        if boot["rc"] == 3 or panic:
            boot["stopped"] = f"the kernel panicked: {panic or '(no panic line on the console)'}"
        elif boot["rc"] not in (0, None):
            boot["stopped"] = f"run-qemu.sh exit {boot['rc']}"
    rel_ok = str(guest.get("release", "")).endswith("-debug")
    verdicts = []
    for r in runs:
        for t in r["tests"]:
            v = {"name": t["name"], "run": r["name"], "pass": False, "reason": "", "splat": []}
            rec = records.get(t["name"])
            end = ends.get(r["name"])
            hits = windows.get("boot", []) + windows.get(r["name"], [])
            if hits:
                first = hits[0]
                v["reason"] = f"console: {con[first].strip()}"
                v["splat"] = [l.rstrip() for l in con[max(0, first - 1):first + 14]]
            elif not guest and not begins:
                v["reason"] = ("the guest never started its tests: " +
                               (boot["stopped"] or f"run-qemu.sh exit {boot['rc']}"))
            elif not rel_ok or not lockdep:
                v["reason"] = (f"the guest ran {guest.get('release', '?')}: not a -debug kernel with lockdep")
            elif r["name"] not in begins:
                v["reason"] = ("not run: the guest stopped before it" +
                               (f" ({boot['stopped']})" if boot["stopped"] else ""))
            elif end is None:
                v["reason"] = (f"the run never ended: {boot['stopped'] or 'the guest stopped'} "
                               f"(a hang or a panic? see {rel(boot['console'])})")
                tail = [l.rstrip() for l in con if l.strip()][-12:]
                v["splat"] = tail
            elif end.get("timeout"):
                v["reason"] = f"the run timed out after {end.get('seconds')} s in the guest"
            elif rec is None:
                errs = records.get("_errors") or []
                v["reason"] = (f"no verdict (run exit {end.get('rc')}" +
                               (f": {errs[-1]}" if errs else "") + ")")
            elif end.get("rc") not in (0, None):
                v["reason"] = f"the run exited {end.get('rc')}: {rec.get('reason', '')}"
            else:
                v["pass"] = bool(rec.get("pass"))
                v["reason"] = rec.get("reason", "")
            verdicts.append(v)
    return verdicts


def other_stubs(lab, tree):
    """{other lab: its files} for the parts the runs need whose TODO regions are still the
    series' stubs in tree (a students' copy only: elsewhere the series is their solution)."""
    out = {}
    if lab.has_skeleton:
        return out
    meta, _ = tree_meta(tree)
    for need in sorted({n for r in lab.runs for n in r.get("needs", [])}):
        other = Lab(need)
        for f in other.files():
            try:
                have = kparts.regions(open(os.path.join(tree, f)).read())
                stub = kparts.regions(open(os.path.join(meta["cache_tree"], f)).read())
            except OSError:
                continue
            if any(k in have and kparts.norm(have[k]) == kparts.norm(stub[k]) for k in stub):
                out.setdefault(other.slug, []).append(f)
    return out


def mark_waiting(lab, tree, verdicts):
    """A test whose run needs another lab's part, still a stub in this tree: it waits for that lab."""
    stubs = other_stubs(lab, tree)
    if not stubs:
        return verdicts
    needs = {r["name"]: [n for n in (Lab(x).slug for x in r.get("needs", [])) if n in stubs] for r in lab.runs}
    for v in verdicts:
        w = needs.get(v["run"])
        if w and not v["pass"]:
            v["waiting"] = w
            v["reason"] = (f"waiting for lab {', '.join(x[:2] for x in w)}'s kernel part: its TODO regions in "
                           f"{', '.join(f for x in w for f in stubs[x])} are still the skeleton's stubs in this "
                           f"tree, and this run goes through them ({v['reason']})")
    return verdicts


def print_verdicts(lab, verdicts, label="kernel"):
    w = max(len(v["name"]) for v in verdicts)
    for v in verdicts:
        print(f"  {lab.slug}: {v['name']:<{w}}  {'PASS' if v['pass'] else 'WAIT' if v.get('waiting') else 'FAIL'}"
              f"  {v['reason']}")
        if not v["pass"]:
            for l in v["splat"][:15]:
                print(f"      | {l}")
    score = sum(v["pass"] for v in verdicts)
    print(f"{lab.slug}: {label} score {score}/{len(verdicts)}")
    waits = [v["name"] for v in verdicts if v.get("waiting")]
    if waits:
        print(f"{lab.slug}: {len(waits)} test(s) wait for another lab's kernel part ({', '.join(waits)}): "
              f"counted as not passed until that part is written, in this tree or in its own (make kernel-tree "
              f"then copies your committed work of a done part into a new tree)")
    return score


def grade_tree(lab, tree, json_path=None, label="kernel", quiet=False, runs=None):
    """runs: the test runs to boot (default all; a mutant's proof boots only
    the run that holds the test its caught-by: line names)."""
    runs = runs or lab.runs
    info = ensure_debug_kernel() if not quiet else cache_info()
    bs, ncc, out = build(lab, tree, info, quiet=quiet)
    if bs is None:
        verdicts = [{"name": t["name"], "run": t["run"], "pass": False, "splat": [],
                     "reason": "the kernel did not build"} for r in runs for t in r["tests"]]
        boot = {"boot_s": 0, "tests_s": 0}
    else:
        if not quiet:
            say(f"boot: {len(runs)} test run(s) under the debug configuration "
                f"(console: {rel(os.path.join(out, 'grade.console.log'))})")
        boot = boot_and_run(lab, out, runs)
        verdicts = mark_waiting(lab, tree, judge(lab, runs, boot))
    score = print_verdicts(lab, verdicts, label)
    times = {"built": bs is not None, "build_s": round(bs or 0, 1), "boot_s": round(boot["boot_s"], 1), "tests_s": round(boot["tests_s"], 1)}
    print(f"{lab.slug}: time: build {times['build_s']:.0f} s ({ncc} C files), boot {times['boot_s']:.0f} s, "
          f"tests {times['tests_s']:.0f} s")
    style = style_check(tree) if not quiet else None
    if style:
        print(f"{lab.slug}: {style}")
    head = subprocess.run(["git", "-C", tree, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip() if os.path.isdir(os.path.join(tree, ".git")) else None
    doc = {"lab": lab.slug, "tests": verdicts, "score": score, "max": len(verdicts), **times,
           "checkpatch": style, "head": head, "when": int(time.time())}
    # Every grade of a tree leaves its verdicts next to its objects
    # (build/klab/NN-slug/work/grade.json for work/kernel/NN-slug): the
    # Gradescope export (labs/tools/grade-all --gradescope) merges them.
    for p in [json_path] + ([os.path.join(objdir_for(lab, tree), "grade.json")] if not quiet else []):
        if p:
            with open(p + ".tmp", "w") as f:
                json.dump(doc, f, indent=1)
            os.replace(p + ".tmp", p)
    return verdicts, times


def style_check(tree):
    """checkpatch.pl --strict on `git diff skeleton` (commits and working tree): a line, not a score."""
    if not os.path.isdir(os.path.join(tree, ".git")):
        return None
    diff = subprocess.run(["git", "-C", tree, "diff", "skeleton"], capture_output=True, text=True).stdout
    if not diff.strip():
        return "checkpatch.pl --strict: no change since `skeleton` yet"
    c = subprocess.run(["perl", os.path.join(tree, "scripts", "checkpatch.pl"), "--strict", "--no-signoff",
                        "--terse", "--no-summary", "--ignore", "COMMIT_MESSAGE,MISSING_SIGN_OFF", "-"],
                       cwd=tree, input=diff, capture_output=True, text=True)
    kinds = {k: sum(f": {k}:" in l for l in c.stdout.split("\n")) for k in ("ERROR", "WARNING", "CHECK")}
    if not any(kinds.values()):
        return "checkpatch.pl --strict on your diff: clean"
    first = next(l for l in c.stdout.split("\n") if any(f": {k}:" in l for k in kinds))
    return (f"checkpatch.pl --strict on your diff: {kinds['ERROR']} errors, {kinds['WARNING']} warnings, "
            f"{kinds['CHECK']} checks (first: {first.strip()}; make kernel-patch shows all)")


# ------------------------------------------------- shell, gdb and patch

def cmd_shell(lab, tree):
    bs, _, out = build(lab, tree)
    if bs is None:
        return 1
    say("booting to a shell: the lab's test programs are in /labs (exit powers off)")
    return subprocess.run([os.path.join(HERE, "run-qemu.sh"), "--interactive", "--kernel",
                           os.path.join(out, "bzImage"), "--console-log",
                           os.path.join(out, "shell.console.log"), "--append", GUEST_SETTINGS]).returncode


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cmd_gdb(lab, tree, port, batch):
    if not shutil.which("gdb"):
        die("gdb not found: apt-get install gdb (make deps)")
    bs, _, out = build(lab, tree)
    if bs is None:
        return 1
    obj = os.path.join(out, "obj")
    port = port or free_port()
    first = lab.runs[0]
    initrd = compose_initrd(lab, out, [first])
    con = os.path.join(out, "gdb.console.log")
    qemu = subprocess.Popen([os.path.join(HERE, "run-qemu.sh"), "--kernel", os.path.join(out, "bzImage"),
                             "--initrd", initrd, "--gdb", str(port), "--timeout", "3600",
                             "--console-log", con, "--append",
                             f"mmlocks.mode=run mmlocks.run={first['name']} {GUEST_SETTINGS}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    say(f"QEMU is halted on 127.0.0.1:{port}; its console goes to {rel(con)} (tail -f it); "
        f"the guest runs /labs: {first['cmd']}")
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if qemu.poll() is not None:
                die("QEMU exited before gdb could attach")
            time.sleep(0.2)
    g = ["gdb", "-q", "-iex", f"add-auto-load-safe-path {obj}", os.path.join(obj, "vmlinux"),
         "-ex", f"target remote 127.0.0.1:{port}"]
    if batch:
        g = ["timeout", "-k", "10", "900"] + g[:1] + ["-batch"] + g[1:] + ["-x", batch]
    try:
        rc = subprocess.run(g).returncode
    finally:
        if qemu.poll() is None:
            qemu.terminate()
            try:
                qemu.wait(30)
            except subprocess.TimeoutExpired:
                qemu.kill()
    return rc


def cmd_patch(lab, tree):
    tree = os.path.abspath(tree)
    if not os.path.isdir(os.path.join(tree, ".git")):
        die(f"{rel(tree)} is no git repository: make kernel-tree LAB={lab.num}")
    g = ["git", "-C", tree]
    commits = subprocess.run(g + ["rev-list", "skeleton..HEAD"], capture_output=True, text=True).stdout.split()
    dirty = subprocess.run(g + ["status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    if not commits:
        print(f"{PROG}: nothing committed since `skeleton` in {rel(tree)}." +
              (" Your changes are not committed yet:" if dirty else ""))
        if dirty:
            print(f"    git -C {rel(tree)} commit -as\n"
                  "  with a kernel-style message: a subject 'subsystem: what it does' of at most\n"
                  "  75 characters, a blank line, then why (the problem, then what the change does\n"
                  "  about it), wrapped at 75 columns; -s adds your Signed-off-by.")
        return 1
    if dirty:
        say("note: uncommitted changes are not in the patch (git status shows them)")
    pdir = os.path.join(lab.build_root, "patches")
    shutil.rmtree(pdir, ignore_errors=True)
    r = subprocess.run(g + ["format-patch", "-q", "-o", pdir, "skeleton..HEAD"], capture_output=True, text=True)
    if r.returncode:
        die(f"git format-patch failed: {r.stderr.strip()}")
    patches = sorted(glob.glob(os.path.join(pdir, "*.patch")))
    bad = 0
    for p in patches:
        print(f"== {rel(p)}")
        c = subprocess.run(["perl", os.path.join(tree, "scripts", "checkpatch.pl"), "--strict", "--no-color",
                            "--showfile", p], cwd=tree, capture_output=True, text=True)
        lines = [l for l in c.stdout.split("\n") if l.strip()]
        print("\n".join("   " + l for l in lines[-40:]))
        bad += c.returncode != 0
    print(f"{PROG}: {len(patches)} patch(es) in {rel(pdir)}; checkpatch.pl --strict: "
          f"{'clean' if not bad else f'{bad} with findings (above)'}")
    seed = os.path.join(lab.kdir, "commit.txt")
    if os.path.isfile(seed):
        print(f"\n---- for comparison: the seed's message ({rel(seed)}) ----")
        print(open(seed).read().rstrip())
        print("---- (the handout's \"Kernel part\" section lists what a reviewer would ask)")
    return 1 if bad else 0


# -------------------------------------- proofs: solution, skeleton, mutants

VERDICT_DIR = os.path.join(TOP, "build", "cache", "klab")


def inputs_hash(lab, variant_file=None):
    h = hashlib.sha256()
    files = series_patches() + [os.path.join(HERE, f) for f in
                                ("config.fragment", "config.debug", "init", "klab.py", "run-qemu.sh",
                                 "overlay.sh", "mkinitramfs.sh", "debug-check.sh")]
    files += sorted(glob.glob(os.path.join(HERE, "guest", "*")))
    for d in (lab.kdir, os.path.join(lab.dir, "guest")):
        for root, _, fs in sorted(os.walk(d)):
            files += [os.path.join(root, f) for f in sorted(fs)]
    if variant_file:
        files.append(variant_file)
    for f in files:
        if os.path.isfile(f):
            h.update(rel(f).encode() + b"\0" + open(f, "rb").read())
    h.update(subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.encode())
    return h.hexdigest()[:24]


def cached_verdict(key):
    if os.environ.get("MMLOCKS_NO_VERDICT_CACHE") == "1":
        return None
    try:
        return open(os.path.join(VERDICT_DIR, key)).read()
    except OSError:
        return None


def store_verdict(key, text):
    os.makedirs(VERDICT_DIR, exist_ok=True)
    with open(os.path.join(VERDICT_DIR, key), "w") as f:
        f.write(text)


def check_tree(lab, info):
    """build/klab/NN-slug/check/tree: the solution (the series), remade when the series changed."""
    tree = os.path.join(lab.build_root, "check", "tree")
    if os.path.isdir(tree):
        meta, _ = tree_meta(tree)
        if meta["series"] == info["series"] and meta["cache_tree"] == info["tree"]:
            return tree
        say("the series changed: making the check tree again")
        shutil.rmtree(tree)
    secs, n = make_tree(lab, tree, skeleton=False, git=False)
    say(f"check tree {rel(tree)}: {secs:.0f} s")
    return tree


def restore_solution(info, tree, files):
    """The solution's content for files, with a new mtime, so make rebuilds them."""
    for f in files:
        src = os.path.join(info["tree"], f)
        dst = os.path.join(tree, f)
        data = open(src, "rb").read()
        if os.path.exists(dst) and open(dst, "rb").read() == data:
            continue
        tmp = dst + ".klab-tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, dst)


def apply_patch(tree, patch):
    r = subprocess.run(["patch", "-p1", "-s", "--fuzz=0", "--no-backup-if-mismatch", "-d", tree, "-i", patch],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stdout + r.stderr


def grade_variant(lab, info, tree, patch, label, runs=None):
    files = patch_files(patch) if patch else []
    restore_solution(info, tree, sorted(set(files) | set(patch_files(lab.skeleton)) |
                                        {f for m in lab.mutants() for f in patch_files(m)}))
    if patch:
        ok, msg = apply_patch(tree, patch)
        if not ok:
            return None, msg
    verdicts, times = grade_tree(lab, tree, label=label, quiet=True, runs=runs)
    return verdicts, times


def cmd_check(lab):
    lab.need_solution("kernel-check")
    info = ensure_debug_kernel()
    key = "check-" + lab.slug + "-" + inputs_hash(lab)
    hit = cached_verdict(key)
    if hit:
        print(hit.rstrip() + " (cached)")
        return 0
    tree = check_tree(lab, info)
    lines, bad = [], 0
    say(f"solution (the series as it is): {len(lab.tests)} tests must pass")
    v, _ = grade_variant(lab, info, tree, None, "solution")
    failed = [x["name"] for x in v if not x["pass"]]
    lines.append(f"kernel-check {lab.slug}: solution: {len(v) - len(failed)}/{len(v)} pass" +
                 (f": FAIL ({', '.join(failed)})" if failed else ": ok"))
    bad += bool(failed)
    say("skeleton (labs/%s/kernel/skeleton.patch): exactly the todoN_ tests must fail" % lab.slug)
    v, msg = grade_variant(lab, info, tree, lab.skeleton, "skeleton")
    if v is None:
        lines.append(f"kernel-check {lab.slug}: skeleton does not apply: FAIL\n{msg}")
        bad += 1
    else:
        failed = {x["name"] for x in v if not x["pass"]}
        want = {t["name"] for t in lab.tests if re.match(r"todo\d+_", t["name"])}
        ok = failed == want
        lines.append(f"kernel-check {lab.slug}: skeleton fails {', '.join(sorted(failed)) or 'nothing'}" +
                     (": ok" if ok else f": FAIL (want exactly {', '.join(sorted(want))})"))
        bad += not ok
    restore_solution(info, tree, patch_files(lab.skeleton))
    text = "\n".join(lines)
    print(text)
    if not bad:
        store_verdict(key, text)
    return 1 if bad else 0


def cmd_mutants(lab, only):
    lab.need_solution("kernel-mutants")
    info = ensure_debug_kernel()
    muts = lab.mutants()
    if only:
        muts = [m for m in muts if os.path.basename(m)[:-6] in only.split(",")]
        if not muts:
            die_usage(f"--only {only}: no such mutant in labs/{lab.slug}/kernel/mutants/")
    tree = None
    results, bad = [], 0
    for m in muts:
        name = os.path.basename(m)[:-len(".patch")]
        text = open(m).read()
        want = re.search(r"^caught-by:\s*(\S+)", text, re.M)
        key = "mutant-" + lab.slug + "-" + name + "-" + inputs_hash(lab, m)
        hit = cached_verdict(key)
        if hit:
            results.append(hit.rstrip() + " (cached)")
            print(results[-1], flush=True)
            continue
        if not want:
            results.append(f"mutant {name}: no 'caught-by:' line: FAIL")
            bad += 1
            continue
        if tree is None:
            tree = check_tree(lab, info)
        say(f"mutant {name}: {text.splitlines()[0][len('mutant: '):]}")
        # Only the run that decides the named test boots: the proof is that
        # this test fails, and the other runs would only cost time.
        runs = [r for r in lab.runs if any(t["name"] == want.group(1) for t in r["tests"])]
        if not runs:
            line = f"mutant {name}: its caught-by: names no test of kernel/tests: FAIL"
            results.append(line)
            print(line, flush=True)
            bad += 1
            continue
        v, msg = grade_variant(lab, info, tree, m, f"mutant {name}", runs=runs)
        if v is None:
            line = f"mutant {name}: does not apply: FAIL\n{msg}"
            bad += 1
        elif not msg["built"]:
            line = f"mutant {name}: does not build (a wrong answer must compile): FAIL"
            bad += 1
        else:
            failed = [x["name"] for x in v if not x["pass"]]
            if want.group(1) in failed:
                line = (f"mutant {name}: rejected ({len(failed)}/{len(v)} tests fail: "
                        f"{', '.join(failed)}): ok")
                store_verdict(key, line)
            else:
                line = f"mutant {name}: accepted by {want.group(1)} (failed: {', '.join(failed) or 'none'}): FAIL"
                bad += 1
        results.append(line)
        print(line, flush=True)
    if tree:
        restore_solution(info, tree, sorted({f for m in muts for f in patch_files(m)}))
    n = len(lab.mutants())
    print(f"kernel-mutants {lab.slug}: {len(muts) - bad}/{len(muts)} mutants rejected")
    if n < 5:
        print(f"kernel-mutants {lab.slug}: only {n} mutants, want at least 5: FAIL")
        bad += 1
    return 1 if bad else 0


def cmd_bench(lab):
    lab.need_solution("kernel-bench")
    info = ensure_debug_kernel()
    tree = check_tree(lab, info)
    files = patch_files(lab.skeleton)
    say("warming up: the check tree built once with the skeleton (not timed)")
    restore_solution(info, tree, files)
    ok, msg = apply_patch(tree, lab.skeleton)
    if not ok:
        die(f"skeleton does not apply: {msg}")
    if build(lab, tree, info, quiet=True)[0] is None:
        die("the skeleton does not build")
    say(f"the edit: {', '.join(files)} back to the solution; then build, boot and every test")
    t0 = time.time()
    restore_solution(info, tree, files)
    verdicts, times = grade_tree(lab, tree, label="bench", quiet=True)
    total = time.time() - t0
    print(f"{lab.slug}: bench: edit -> graded result in {total:.0f} s: build {times['build_s']:.0f} s, "
          f"boot {times['boot_s']:.0f} s, tests {times['tests_s']:.0f} s "
          f"(goal: at most 120 s; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")
    return 0 if all(v["pass"] for v in verdicts) else 1


def cmd_lint(labs):
    """Cheap checks for make test: every patch applies to the series, the tests file parses."""
    bad = 0
    prist = cache_info()["pristine"]
    for lab in labs:
        with tempfile.TemporaryDirectory(prefix="klab-lint.") as tmp:
            files = sorted({f for p in series_patches() for f in patch_files(p)} |
                           set(lab.files()) | {f for m in lab.mutants() for f in patch_files(m)})
            base = os.path.join(tmp, "base")
            for f in files:
                if os.path.isfile(os.path.join(prist, f)):
                    os.makedirs(os.path.dirname(os.path.join(base, f)), exist_ok=True)
                    shutil.copy(os.path.join(prist, f), os.path.join(base, f))
            for p in series_patches():
                ok, msg = apply_patch(base, p)
                if not ok:
                    print(f"kernel-lint {lab.slug}: the series does not apply ({os.path.basename(p)}): FAIL")
                    bad += 1
                    break
            names = {t["name"] for t in lab.tests}
            for r in lab.runs:
                for n in r.get("needs", []):
                    Lab(n)      # dies naming the labs that have a kernel part
            if not lab.has_skeleton:
                # A students' copy: the series itself carries the TODO regions.
                txt = "".join(open(os.path.join(base, f)).read() for f in lab.files()
                              if os.path.isfile(os.path.join(base, f)))
                ok = bool(lab.files()) and re.search(r"/\* TODO \d+:", txt) and re.search(r"/\* END TODO \d+ \*/", txt)
                print(f"kernel-lint {lab.slug}: the series' TODO regions in {', '.join(lab.files()) or '(no file)'}: "
                      + ("ok" if ok else "FAIL (none)"))
                bad += not ok
            known = {l.split()[0] for l in open(os.path.join(HERE, "experiments"))
                     if l.strip() and not l.lstrip().startswith("#")}
            for e in kparts.experiments_of(lab.slug, TOP):
                if e not in known:
                    print(f"kernel-lint {lab.slug}: kernel/experiments names {e}, not an experiment of "
                          f"labs/kernel/experiments: FAIL")
                    bad += 1
            for p in ([lab.skeleton] if lab.has_skeleton else []) + lab.mutants():
                w = os.path.join(tmp, os.path.basename(p))
                shutil.copytree(base, w)
                ok, msg = apply_patch(w, p)
                problem = "" if ok else "does not apply"
                if ok and p != lab.skeleton:
                    m = re.search(r"^caught-by:\s*(\S+)", open(p).read(), re.M)
                    if not m or m.group(1) not in names:
                        problem = "its caught-by: names no test of kernel/tests"
                if ok and p == lab.skeleton:
                    txt = "".join(open(os.path.join(w, f)).read() for f in patch_files(p))
                    if not re.search(r"/\* TODO \d+:", txt) or not re.search(r"/\* END TODO \d+ \*/", txt):
                        problem = "it leaves no /* TODO N: */ ... /* END TODO N */ region"
                print(f"kernel-lint {lab.slug}: {rel(p)}: " + (f"FAIL ({problem})\n{msg}" if problem else "ok"))
                bad += bool(problem)
            if lab.has_skeleton and len(lab.mutants()) < 5:
                print(f"kernel-lint {lab.slug}: {len(lab.mutants())} mutants, want at least 5: FAIL")
                bad += 1
            todo = [t for t in lab.tests if re.match(r"todo\d+_", t["name"])]
            if not todo:
                print(f"kernel-lint {lab.slug}: no todoN_ test: the skeleton would pass everything: FAIL")
                bad += 1
    return 1 if bad else 0


# ------------------------------------------------------------------ main

def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage(sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    cmds = ("tree", "build", "grade", "shell", "gdb", "patch", "check", "mutants", "bench", "lint")
    if cmd not in cmds:
        die_usage(f"unknown command '{cmd}'")
    opts = {"--dst": None, "--tree": None, "--json": None, "--port": None, "--batch": None, "--only": None}
    allowed = {"tree": ["--dst"], "build": ["--tree"], "grade": ["--tree", "--json"], "shell": ["--tree"],
               "gdb": ["--tree", "--port", "--batch"], "patch": ["--tree"], "check": [], "mutants": ["--only"],
               "bench": [], "lint": []}[cmd]
    pos = []
    while rest:
        a = rest.pop(0)
        k, eq, v = a.partition("=")
        if k in allowed:
            if not eq:
                if not rest:
                    die_usage(f"{k} needs a value")
                v = rest.pop(0)
            opts[k] = v
        elif a.startswith("-"):
            die_usage(f"{cmd}: unknown option '{a}'")
        else:
            pos.append(a)
    if cmd == "lint":
        if len(pos) > 1:
            die_usage("lint takes at most one LAB")
        labs = [Lab(pos[0])] if pos else [Lab(os.path.basename(os.path.dirname(d)))
                                          for d in sorted(glob.glob(os.path.join(TOP, "labs", "*", "kernel")))]
        return cmd_lint(labs)
    if len(pos) != 1:
        die_usage(f"{cmd} needs one LAB (NN or NN-slug)")
    lab = Lab(pos[0])
    tree = opts["--tree"] or lab.default_tree
    if opts["--port"] is not None and not (opts["--port"].isdigit() and 0 < int(opts["--port"]) < 65536):
        die_usage(f"--port must be a TCP port, got '{opts['--port']}'")
    if cmd == "tree":
        dst = os.path.abspath(opts["--dst"] or lab.default_tree)
        secs, n = make_tree(lab, dst)
        say(f"wrote {rel(dst)} in {secs:.1f} s: the series" +
            (f" + labs/{lab.slug}/kernel/skeleton.patch; " if lab.has_skeleton else " (it carries the skeleton); ") +
            f"git tracks {n} files (the directories the series touches), first commit tagged `skeleton`")
        say(f"next: write the TODO regions of {', '.join(lab.files())} "
            f"(git -C {rel(dst)} grep -n 'TODO [0-9]'), then make kernel-grade LAB={lab.num}")
        return 0
    if cmd == "build":
        return 0 if build(lab, tree)[0] is not None else 1
    if cmd == "grade":
        verdicts, _ = grade_tree(lab, tree, opts["--json"])
        return 0 if all(v["pass"] for v in verdicts) else 1
    if cmd == "shell":
        return cmd_shell(lab, tree)
    if cmd == "gdb":
        return cmd_gdb(lab, tree, int(opts["--port"]) if opts["--port"] else None, opts["--batch"])
    if cmd == "patch":
        return cmd_patch(lab, tree)
    if cmd == "check":
        return cmd_check(lab)
    if cmd == "mutants":
        return cmd_mutants(lab, opts["--only"])
    if cmd == "bench":
        return cmd_bench(lab)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
