#!/usr/bin/python3
"""vaddr.py IN OUT: copy a QEMU physical memory dump (dump-guest-memory
without -p: every PT_LOAD at vaddr 0) and give its segments the kernel's
virtual addresses: each PT_LOAD once more at the direct map and, below
KERNEL_IMAGE_SIZE, at the kernel text map (phys_base 0, no KASLR: the lab
kernel's VMCOREINFO says so), so that drgn 0.0.22 can read swapper_pg_dir
("recursive address translation" otherwise). dump-guest-memory -p is no
way out with the debug kernel: KASAN's shadow maps terabytes."""
import shutil, struct, sys
if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
src, dst = sys.argv[1], sys.argv[2]
PAGE_OFFSET, START_KERNEL_MAP, KIMG = 0xffff888000000000, 0xffffffff80000000, 512 << 20
shutil.copyfile(src, dst)
with open(dst, "r+b") as f:
    h = bytearray(f.read(64))
    phoff = struct.unpack_from("<Q", h, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", h, 54)
    f.seek(phoff); ph = [f.read(phentsize) for _ in range(phnum)]
    out = []
    for p in ph:
        typ, flags, off, vaddr, paddr, filesz, memsz, align = struct.unpack("<IIQQQQQQ", p)
        if typ != 1:
            out.append(p); continue
        out.append(struct.pack("<IIQQQQQQ", typ, flags, off, PAGE_OFFSET + paddr, paddr, filesz, memsz, align))
        if paddr < KIMG:
            n = min(filesz, KIMG - paddr)
            out.append(struct.pack("<IIQQQQQQ", typ, flags, off, START_KERNEL_MAP + paddr, paddr, n, n, align))
    f.seek(0, 2); end = f.tell()
    f.write(b"".join(out))
    struct.pack_into("<Q", h, 32, end); struct.pack_into("<H", h, 56, len(out))
    f.seek(0); f.write(h)
print("phdrs", phnum, "->", len(out))
