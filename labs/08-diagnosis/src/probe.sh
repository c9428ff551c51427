# Lab 08: the commands that run in the guest's probe window (sh, busybox and
# the guest tools: perf, trace-cmd). The run prints what they print; every
# *.txt file left in the working directory (/tmp/diag) reaches run.jsonl
# as a file record, which `labs/08-diagnosis/diag.sh show` unpacks.
# Environment: VICTIM=pid, svc1=pid, svc2=pid, svc3=pid (from diagnose).
echo "pids: victim $VICTIM, svc1 $svc1, svc2 $svc2, svc3 $svc3"

# trace-cmd records into an instance of its own (-B): recording into the
# top-level buffer would first turn off every event enabled there, the
# uprobe's among them (a uprobe event that is off is not in the text).

# Which mm is the victim's: the one its own write acquisitions name.
trace-cmd record -q -B diag -e mmap_lock:mmap_lock_acquire_returned -f "common_pid == $VICTIM" \
	-o victim.dat -- sleep 0.5 >/dev/null 2>&1
mm=$(trace-cmd report -i victim.dat 2>/dev/null | sed -n 's/.* mm=\(0x[0-9a-f]*\) .*write=true.*/\1/p' | head -n 1)
echo "victim's mm: $mm"

# Who holds that mm's mmap_lock, and for how long: 2 s of its acquisitions
# and releases, every task's.
trace-cmd record -q -B diag -e mmap_lock:mmap_lock_acquire_returned -f "mm == $mm" \
	-e mmap_lock:mmap_lock_released -f "mm == $mm" -o trace.dat -- sleep 2 >/dev/null 2>&1
trace-cmd report -i trace.dat -t >trace.txt 2>/dev/null
echo "trace.txt: $(wc -l <trace.txt) lines"

# Who waits, and for what: contention by thread, 4 s of the whole guest.
perf lock record -a -o perf.data -- sleep 4 >/dev/null 2>&1
perf lock contention -i perf.data -t -E 12 2>&1

# What each process has open, and which uprobes are defined.
for p in $VICTIM $svc1 $svc2 $svc3; do
	echo "== $p $(cat /proc/$p/comm): $(ls -l /proc/$p/fd 2>/dev/null | sed -n 's/.*-> //p' | grep -v '^/dev' | tr '\n' ' ')"
done
echo "uprobe_events: $(cat /sys/kernel/tracing/uprobe_events)"
