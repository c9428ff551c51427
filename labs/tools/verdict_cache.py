"""verdict_cache: remember a checker's passing verdicts, keyed by their inputs.

check-mutants and check-skeletons build a grader per mutant or skeleton and
run it: most of `make test`'s time on the labs. Their verdict depends only
on the files they compile and run, so on a built tree with nothing changed
it can be reused, as make reuses an object file. The key is a SHA-256 over:
the checker's name and item, every file under the lab directory (except
guest/, which no grader compiles), code/ (the models the labs link),
labs/tools/, and the compiler's and Criterion's versions. Only passing
verdicts are stored; a failure is always recomputed. A clean clone (CI) has
no cache and checks everything. MMLOCKS_NO_VERDICT_CACHE=1 turns it off.

Stored as build/cache/verdicts/<checker>/<lab>/<item>.<key> holding the line
the checker printed.
"""
import hashlib
import os
import subprocess

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOT = os.path.join(TOP, "build", "cache", "verdicts")
_tree_keys = {}


def enabled():
    return os.environ.get("MMLOCKS_NO_VERDICT_CACHE", "") in ("", "0")


def _hash_tree(h, top, skip=()):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("."))
        for f in sorted(filenames):
            p = os.path.join(dirpath, f)
            h.update(os.path.relpath(p, TOP).encode() + b"\0")
            try:
                with open(p, "rb") as fh:  # follows links: src/ may link into code/
                    h.update(hashlib.sha256(fh.read()).digest())
            except OSError:
                h.update(b"<unreadable>")


def _versions():
    out = []
    for cmd in (["gcc", "--version"], ["pkg-config", "--modversion", "criterion"]):
        try:
            out.append(subprocess.run(cmd, capture_output=True, text=True).stdout)
        except OSError:
            out.append("missing " + cmd[0])
    return "\n".join(out).encode()


def tree_key(labdir):
    """The part of the key shared by every item of one lab."""
    labdir = os.path.abspath(labdir)
    if labdir not in _tree_keys:
        h = hashlib.sha256(_versions())
        _hash_tree(h, labdir, skip=("guest",))
        _hash_tree(h, os.path.join(TOP, "code"))
        _hash_tree(h, os.path.join(TOP, "labs", "tools"), skip=("__pycache__",))
        _tree_keys[labdir] = h.hexdigest()
    return _tree_keys[labdir]


def _path(checker, labdir, item):
    key = hashlib.sha256(f"{checker}\0{item}\0{tree_key(labdir)}".encode()).hexdigest()[:24]
    return os.path.join(ROOT, checker, os.path.basename(os.path.abspath(labdir)), f"{item}.{key}")


def lookup(checker, labdir, item):
    """The stored line of a passing verdict, or None."""
    if not enabled():
        return None
    try:
        with open(_path(checker, labdir, item)) as fh:
            return fh.read().rstrip("\n")
    except OSError:
        return None


def store(checker, labdir, item, line):
    """Remember a passing verdict (written atomically)."""
    if not enabled():
        return
    p = _path(checker, labdir, item)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    for old in os.listdir(os.path.dirname(p)):  # one verdict per item
        if old.startswith(item + "."):
            os.unlink(os.path.join(os.path.dirname(p), old))
    tmp = f"{p}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        fh.write(line + "\n")
    os.replace(tmp, p)
