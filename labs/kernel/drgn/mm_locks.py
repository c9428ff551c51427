#!/usr/bin/python3
"""mm_locks.py DUMP VMLINUX [COMM]: a guest's mm locks, read by drgn from a memory dump.

DUMP: a QEMU dump (labs/kernel/drgn/dump.sh; physical, with the kernel's
virtual addresses added by vaddr.py); VMLINUX: the kernel with DWARF (the
debug kernel's obj/ directory). Prints, for the process COMM (default
victim, lab 08's; of several, the one with the most VMAs), its mm's
mm_lock_seq and mmap_lock count, and each VMA's vm_lock_seq, found by
walking mm->mm_mt (drgn 0.0.22, Debian 12's, has no maple tree helper).
Needs python3-drgn (Debian: /usr/bin/python3).
"""
import sys, drgn
from drgn import Program, Object
from drgn.helpers.linux.pid import for_each_task
if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip()); sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
prog = Program()
prog.set_core_dump(sys.argv[1])
prog.load_debug_info([sys.argv[2]])
print("release:", prog["init_uts_ns"].name.release.string_().decode())
comm = (sys.argv[3] if len(sys.argv) > 3 else "victim").encode()
# Several processes of that name (a program and the target it forked): the one with the most VMAs.
named = [t for t in for_each_task(prog) if t.comm.string_() == comm and t.pid == t.tgid and t.mm]
victim = max(named, key=lambda t: int(t.mm.map_count))
mm = victim.mm
print("%s pid %d (of %d named so), mm %#x" % (comm.decode(), victim.pid, len(named), mm.value_()))
seq = int(mm.mm_lock_seq.sequence)
print("mm->mm_lock_seq.sequence = %d (%s)" % (seq, "odd: mmap_lock write-locked" if seq & 1 else "even: not write-locked"))
print("mm->mmap_lock.count = %#x, map_count %d" % (mm.mmap_lock.count.counter.value_(), mm.map_count))

def entries(enode):
    """The VMAs of a maple tree: internal nodes (range_64 2, arange_64 3) hold
    child enodes (node | type << 3 | 4), leaves (leaf_64 1) the VMAs."""
    node = Object(prog, "struct maple_node *", value=enode & ~0xff)
    typ = (enode >> 3) & 0xf
    slots = node.ma64.slot if typ == 3 else node.mr64.slot
    for s in slots:
        v = s.value_()
        # Slots past the node's end hold stale values: keep kernel pointers.
        if v < 0xffff888000000000:
            continue
        if typ == 1:
            vma = Object(prog, "struct vm_area_struct *", value=v & ~7)
            try:
                if vma.vm_mm.value_() == mm.value_():
                    yield vma
            except drgn.FaultError:
                pass
        else:
            yield from entries(v)

vmas = list(entries(mm.mm_mt.ma_root.value_() & ~3))
seqs = {}
for vma in vmas:
    seqs[int(vma.vm_lock_seq)] = seqs.get(int(vma.vm_lock_seq), 0) + 1
print("VMAs in mm->mm_mt: %d" % len(vmas))
for vma in vmas[:3] + vmas[-2:]:
    print("  vma %#x-%#x vm_lock_seq %d vm_lock->lock.count %#x" % (
        vma.vm_start, vma.vm_end, vma.vm_lock_seq, vma.vm_lock.lock.count.counter.value_()))
print("vm_lock_seq values (value: VMAs), the last five:", sorted(seqs.items())[-5:])
print("VMAs write-locked now (vm_lock_seq == mm_lock_seq):", seqs.get(seq, 0))
for vma in [v for v in vmas if int(v.vm_lock_seq) == seq][:5]:
    print("  vma %#x-%#x vm_lock_seq %d" % (vma.vm_start, vma.vm_end, vma.vm_lock_seq))
