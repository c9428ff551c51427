# Lab 01's first steps in gdb (handout, "gdb: first steps"), as a script:
#   labs/kernel/klab.py gdb 01 --batch labs/01-rwsem-steal/kernel/first-steps.gdb
# klab.py has already loaded vmlinux and attached to QEMU's gdb stub.
set pagination off
set confirm off
break rwsem_down_read_slowpath
continue
print sem->count
print/x sem->count.counter
print sem->count.counter >> 8
print steal
bt 6
delete
detach
