#!/bin/bash
# Boot the debug kernel with QEMU's monitor, run one guest command, and when
# the console shows a given text, dump the guest's memory for drgn.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
K=$(cd "$HERE/.." && pwd)
TOP=$(cd "$K/../.." && pwd)
PROG=labs/kernel/drgn/dump.sh
usage() {
	cat <<EOF2
usage: $PROG [--out FILE] [--wait TEXT] [--after S] [--timeout S] -- COMMAND [ARGS...]

Boots build/kernel-debug (DWARF in its vmlinux, VMCOREINFO: config.debug's
PROC_KCORE and FW_CFG_SYSFS) under run-qemu.sh --monitor, runs COMMAND in the
guest (an experiments line), waits for TEXT on the console (default: the
'probe window' line of lab 08's diagnose) and S seconds more (default 0),
writes a physical dump with QEMU's dump-guest-memory, gives it virtual
addresses (vaddr.py) and stops the guest.
Then: labs/kernel/drgn/mm_locks.py FILE VMLINUX [COMM].
Default FILE build/drgn/dump.elf (MEM=1G: a 1 GiB file). Exit 0 written.
Example: $PROG -- /labs/diagnose -s 6 --seconds 2 --probe-seconds 150 --vmas 2000
EOF2
}
OUT=$TOP/build/drgn/dump.elf WAIT="probe window" AFTER=0 TMO=400
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--out) OUT=$2; shift 2 ;;
	--wait) WAIT=$2; shift 2 ;;
	--after) AFTER=$2; shift 2 ;;
	--timeout) TMO=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "$PROG: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
[ $# -ge 1 ] || { echo "$PROG: no COMMAND" >&2; usage >&2; exit 2; }
D=$(dirname "$OUT"); mkdir -p "$D"
W=$(mktemp -d "$D/.drgn.XXXXXX"); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/ov/etc/mmlocks"
{ cat "$K/experiments"; echo "drgn $*"; } >"$W/ov/etc/mmlocks/experiments"
"$K/overlay.sh" "$TOP/build/initramfs.cpio.gz" "$W/initrd.gz" "$W/ov" || exit 1
rm -f "$OUT" "$OUT.phys"
MEM=${MEM:-1G} flock -w 3600 /tmp/mmlocks-qemu.lock "$K/run-qemu.sh" --kernel "$TOP/build/kernel-debug/bzImage" \
	--initrd "$W/initrd.gz" --timeout "$TMO" --append "mmlocks.run=drgn mmlocks.timeout=$((TMO - 30))" \
	--monitor "$W/mon.sock" --console-log "$W/console.log" &
qpid=$!
for i in $(seq 1 "$TMO"); do grep -q "$WAIT" "$W/console.log" 2>/dev/null && break; sleep 1; done
sleep "$AFTER"
python3 - "$W/mon.sock" "$OUT.phys" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
def cmd(c):
    s.sendall((c + "\n").encode()); time.sleep(1)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except socket.timeout:
        pass
    return out.decode(errors="replace")
cmd("dump-guest-memory " + sys.argv[2])
for _ in range(600):
    if "completed" in cmd("info dump"):
        break
cmd("quit")
PY
wait $qpid
[ -s "$OUT.phys" ] || { echo "$PROG: no dump written" >&2; exit 1; }
python3 "$HERE/vaddr.py" "$OUT.phys" "$OUT" && rm -f "$OUT.phys"
echo "$PROG: wrote $OUT"
