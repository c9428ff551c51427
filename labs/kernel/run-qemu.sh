#!/bin/bash
# Boot the mmlocks kernel + initramfs in QEMU, always under a timeout: KVM if
# a real probe boot works on this host, TCG otherwise; console to a log, the
# guest's results port (ttyS1) to a file; no QEMU left behind on Ctrl-C.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PROG=labs/kernel/run-qemu.sh

usage() {
	cat <<EOF
usage: $PROG [options]

  --kernel FILE        bzImage (default: build/kernel/bzImage)
  --initrd FILE        initramfs (default: build/initramfs.cpio.gz)
  --append 'WORDS'     extra kernel command line words, e.g.
                       'mmlocks.mode=smoke' or 'mmlocks.run=NAME mmlocks.quick=1'
  --timeout SECONDS    kill QEMU after this long (default 600; 1..86400)
  --results FILE       the guest's results port (ttyS1) goes to FILE, and a
                       meta file (guest size, accelerator, kernel release)
                       to FILE.meta.json (FILE minus .jsonl)
  --console-log FILE   keep the console (ttyS0) here (default: a temporary
                       file, shown in part if the boot fails; with
                       --interactive: build/qemu-console.log)
  --interactive        console on this terminal, mode=shell unless --append
                       sets a mode; capped at 4 hours (Ctrl-A X kills QEMU)
  --gdb PORT           QEMU's gdb stub on 127.0.0.1:PORT, CPUs halted until
                       gdb continues them (-gdb tcp:...,-S; make qemu-gdb)
  --monitor SOCKET     QEMU's monitor (HMP) on the unix socket SOCKET, and its
                       vmcoreinfo device, so that dump-guest-memory writes a
                       dump drgn can read (labs/kernel/README.md, "drgn")
  --accel auto|kvm|tcg auto (default): KVM if a probe boot under KVM works
                       on this host (verdict cached in build/), else TCG
  --help               this text

Environment: VCPUS (default 2, 1..64), MEM (default 2G; 1M VMAs need ~2G).
Exit status: 0 guest powered off; 124 timeout; 3 kernel panic; 130 interrupted;
other: QEMU failed.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }
note() { echo "$PROG: $*" >&2; }

KERNEL=$TOP/build/kernel/bzImage
INITRD=$TOP/build/initramfs.cpio.gz
APPEND= TIMEOUT=600 RESULTS= CONLOG= INTERACTIVE=0 ACCEL=auto GDBPORT= MONITOR=
need() { [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--kernel) need "$@"; KERNEL=$2; shift 2 ;;
	--initrd) need "$@"; INITRD=$2; shift 2 ;;
	--append) [ $# -ge 2 ] || die_usage "--append needs words"; APPEND=$2; shift 2 ;;
	--timeout) need "$@"; TIMEOUT=$2; shift 2 ;;
	--results) need "$@"; RESULTS=$2; shift 2 ;;
	--console-log) need "$@"; CONLOG=$2; shift 2 ;;
	--interactive) INTERACTIVE=1; shift ;;
	--accel) need "$@"; ACCEL=$2; shift 2 ;;
	--gdb) need "$@"; GDBPORT=$2; shift 2 ;;
	--monitor) need "$@"; MONITOR=$2; shift 2 ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
case "$TIMEOUT" in ''|*[!0-9]*) die_usage "--timeout must be a number of seconds, got '$TIMEOUT'" ;; esac
{ [ "$TIMEOUT" -ge 1 ] && [ "$TIMEOUT" -le 86400 ]; } || die_usage "--timeout must be 1..86400, got $TIMEOUT"
case "$ACCEL" in auto|kvm|tcg) ;; *) die_usage "--accel must be auto, kvm or tcg, got '$ACCEL'" ;; esac
case "$GDBPORT" in ''|[1-9]|[1-9][0-9]|[1-9][0-9][0-9]|[1-9][0-9][0-9][0-9]|[1-6][0-9][0-9][0-9][0-9]) ;;
*) die_usage "--gdb needs a TCP port number, got '$GDBPORT'" ;; esac
case "$APPEND" in *\"*|*\'*) die_usage "--append: no quotes in kernel command line words" ;; esac

VCPUS=${VCPUS:-2}
MEM=${MEM:-2G}
case "$VCPUS" in ''|*[!0-9]*) die_usage "VCPUS must be a number, got '$VCPUS'" ;; esac
{ [ "$VCPUS" -ge 1 ] && [ "$VCPUS" -le 64 ]; } || die_usage "VCPUS must be 1..64 (the kernel has NR_CPUS=64), got $VCPUS"
# MEM as QEMU takes it: N (MiB), NM, NG.
case "$MEM" in
*[Gg]) mem_n=${MEM%[Gg]} mem_mult=1024 ;;
*[Mm]) mem_n=${MEM%[Mm]} mem_mult=1 ;;
*) mem_n=$MEM mem_mult=1 ;;
esac
case "$mem_n" in ''|*[!0-9]*) die_usage "MEM must look like 2G or 2048M, got '$MEM'" ;; esac
mem_mib=$(( 10#$mem_n * mem_mult ))
[ "$mem_mib" -ge 256 ] || die_usage "MEM must be at least 256M, got $MEM"
host_total=$(awk '/^MemTotal:/ { print int($2/1024) }' /proc/meminfo)
host_avail=$(awk '/^MemAvailable:/ { print int($2/1024) }' /proc/meminfo)
[ "$mem_mib" -lt "$host_total" ] ||
	die "MEM=$MEM but this host has only $host_total MiB: use a smaller MEM (e.g. MEM=1G; the 1M-VMA experiment needs ~2G)"
[ "$mem_mib" -le "$host_avail" ] ||
	note "warning: MEM=$MEM but only $host_avail MiB are available on the host"

QEMU=${QEMU:-qemu-system-x86_64}
command -v "$QEMU" >/dev/null || die "$QEMU not found: apt-get install qemu-system-x86"
[ -f "$KERNEL" ] || die "kernel $KERNEL missing: run labs/kernel/build.sh (or make kernel)"
[ -f "$INITRD" ] || die "initramfs $INITRD missing: run labs/kernel/mkinitramfs.sh"
mkdir -p "$TOP/build"

# Kernel release: written by build.sh next to the bzImage.
krel=$(cat "$(dirname "$KERNEL")/kernelrelease" 2>/dev/null || echo unknown)
qver=$("$QEMU" --version | head -n1 | sed -n 's/.*version \([0-9][0-9.]*\).*/\1/p')

# Base command line: console on ttyS0, a panic powers the VM off at once
# (-no-reboot turns the reboot into an exit), and warnings reach the console.
BASE_APPEND="console=ttyS0 panic=-1 loglevel=5"

qemu_cmd() {   # $1 accel, $2 cpu, $3 console chardev spec, $4 results spec, $5 append
	QCMD=("$QEMU" -M pc -nodefaults -no-user-config -display none -no-reboot
		-accel "$1" -cpu "$2" -smp "$VCPUS" -m "$mem_mib"
		-kernel "$KERNEL" -initrd "$INITRD" -append "$BASE_APPEND $5"
		-chardev "$3" -serial chardev:con0 -serial "$4")
	[ -z "$GDBPORT" ] || QCMD+=(-gdb "tcp:127.0.0.1:$GDBPORT" -S)
	[ -z "$MONITOR" ] || QCMD+=(-monitor "unix:$MONITOR,server=on,wait=off" -device vmcoreinfo)
}

# ---- accelerator ------------------------------------------------------------
# /dev/kvm can exist and open yet be unable to run this guest (nested KVM
# that aborts on an MSR, or "KVM internal error" mid-boot and a paused VM),
# so the only reliable test is to boot: mode=probe prints a marker and powers
# off at once. The verdict is cached per (QEMU, kernel, host, vCPUs), one
# line per key ("VERDICT KEY"), so experiments that boot with different
# vCPU counts (labs/kernel/experiments) do not probe again in turn.
KVM_DEV=${MMLOCKS_KVM_DEV:-/dev/kvm}   # tests point this elsewhere
probe_kvm() {
	if [ ! -r "$KVM_DEV" ] || [ ! -w "$KVM_DEV" ]; then
		echo tcg; return
	fi
	local key cache=$TOP/build/kvm-probe.cache plog=$TOP/build/kvm-probe.log
	key="qemu=$qver kernel=$(sha256sum "$KERNEL" | cut -c1-16) host=$(uname -r) cpus=$VCPUS"
	local hit
	hit=$(awk -v k="$key" '($1 == "kvm" || $1 == "tcg") && substr($0, length($1) + 2) == k { v = $1 } END { print v }' "$cache" 2>/dev/null)
	if [ -n "$hit" ]; then
		echo "$hit"; return
	fi
	local GDBPORT= MONITOR=   # the probe boot never waits for gdb, has no monitor
	note "probing KVM with a short boot (console: ${plog#$TOP/}, QEMU errors: ${plog%.log}.err)"
	qemu_cmd kvm host "file,id=con0,path=$plog" null "mmlocks.mode=probe"
	timeout -k 5 30 "${QCMD[@]}" </dev/null >"${plog%.log}.err" 2>&1
	local v=tcg
	grep -q 'MMLOCKS-PROBE-OK' "$plog" 2>/dev/null && v=kvm
	# Keep the last 7 other verdicts (older-format lines are dropped).
	{ awk -v k="$key" '($1 == "kvm" || $1 == "tcg") && substr($0, length($1) + 2) != k' "$cache" 2>/dev/null | tail -n 7
	  printf '%s %s\n' "$v" "$key"; } >"$cache.tmp.$$" && mv -f "$cache.tmp.$$" "$cache"
	echo "$v"
}
case "$ACCEL" in
auto) ACCEL=$(probe_kvm)
      [ "$ACCEL" = tcg ] && note "KVM not usable on this host (probe boot failed or no /dev/kvm; see RUNNING.md): using TCG (-accel tcg -cpu max), slower" ;;
kvm) [ -w "$KVM_DEV" ] || die "--accel kvm: $KVM_DEV is not usable" ;;
esac
if [ "$ACCEL" = kvm ]; then
	ACCEL_ARG=kvm CPU=host
else
	ACCEL_ARG=tcg,thread=multi CPU=max
	# Under TCG the guest's RDTSC returns the host's TSC, so the TSC is the
	# guest's best clock. The clocksource watchdog, however, compares it
	# with the emulated HPET across emulator stalls, declares it unstable
	# ("skewed 21 ms over 459 ms") and switches to the HPET: from then on
	# every clock read is an emulated MMIO access, and khugepaged's stock
	# 1M-VMA walk took 385 ms instead of 215 ms in our runs. tsc=reliable
	# keeps the TSC (RUNNING.md, "Clocks under TCG").
	case " $APPEND " in *" tsc="*) ;; *) BASE_APPEND="$BASE_APPEND tsc=reliable" ;; esac
fi

# ---- files ------------------------------------------------------------------
TMPLOG=
if [ -z "$CONLOG" ] && [ "$INTERACTIVE" = 1 ]; then
	CONLOG=$TOP/build/qemu-console.log
elif [ -z "$CONLOG" ]; then
	TMPLOG=$(mktemp "$TOP/build/.console.XXXXXX")
	CONLOG=$TMPLOG
fi
mkdir -p "$(dirname "$CONLOG")"
: >"$CONLOG" || die "cannot write $CONLOG"
RES_SPEC=null META=
if [ -n "$RESULTS" ]; then
	mkdir -p "$(dirname "$RESULTS")"
	: >"$RESULTS" || die "cannot write $RESULTS"
	RES_SPEC=file:$RESULTS
	META=${RESULTS%.jsonl}.meta.json
fi

write_meta() {   # $1 status, $2 qemu status, $3 seconds
	[ -n "$META" ] || return 0
	python3 - "$META" "$1" "$2" "$3" "$ACCEL" "$CPU" "$VCPUS" "$mem_mib" "$krel" "$qver" \
		"$BASE_APPEND $APPEND" "$START_UTC" <<'EOF'
import json, os, platform, sys
(meta, status, rc, secs, accel, cpu, vcpus, mem, krel, qver, append, start) = sys.argv[1:]
host_cpu = ""
try:
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"):
            host_cpu = l.split(":", 1)[1].strip(); break
except OSError:
    pass
d = {"status": status, "qemu_rc": int(rc), "seconds": float(secs),
     "accel": accel, "cpu": cpu, "vcpus": int(vcpus), "mem_mib": int(mem),
     "kernel_release": krel, "qemu": qver, "append": append, "started": start,
     "host": {"kernel": platform.release(), "cpu": host_cpu, "cpus": os.cpu_count()}}
tmp = meta + ".tmp"
with open(tmp, "w") as f:
    json.dump(d, f, indent=1); f.write("\n")
os.replace(tmp, meta)
EOF
}

show_tail() {
	echo "---- last 50 console lines ($CONLOG) ----" >&2
	tail -n 50 "$CONLOG" | tr -d '\r' >&2
	echo "----" >&2
}

START_UTC=$(date -u +%Y-%m-%dT%H:%M:%SZ)
T0=$(date +%s.%N)
secs() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# ---- interactive ------------------------------------------------------------
if [ "$INTERACTIVE" = 1 ]; then
	case " $APPEND " in *" mmlocks.mode="*) ;; *) APPEND="mmlocks.mode=shell $APPEND" ;; esac
	qemu_cmd "$ACCEL_ARG" "$CPU" "stdio,id=con0,mux=on,signal=off,logfile=$CONLOG" "$RES_SPEC" "$APPEND"
	QCMD+=(-mon chardev=con0,mode=readline)
	note "booting Linux $krel ($ACCEL, $VCPUS vCPUs, $mem_mib MiB); 'exit' in the guest powers off, Ctrl-A X kills QEMU"
	timeout --foreground -k 10 14400 "${QCMD[@]}"
	rc=$?
	status=ok
	[ $rc = 124 ] && status=timeout
	grep -q 'Kernel panic' "$CONLOG" && status=panic
	write_meta "$status" "$rc" "$(secs)"
	[ -n "$TMPLOG" ] && rm -f "$TMPLOG"
	case $status in timeout) exit 124 ;; panic) exit 3 ;; esac
	exit $rc
fi

# ---- batch ------------------------------------------------------------------
qemu_cmd "$ACCEL_ARG" "$CPU" "file,id=con0,path=$CONLOG" "$RES_SPEC" "$APPEND"
QPID=
cleanup() {
	if [ -n "$QPID" ] && kill -0 "$QPID" 2>/dev/null; then
		kill -TERM "$QPID" 2>/dev/null   # timeout(1) passes it on to QEMU
		wait "$QPID" 2>/dev/null
	fi
}
on_signal() {
	note "interrupted: stopping QEMU"
	cleanup
	write_meta interrupted 130 "$(secs)"
	[ -n "$TMPLOG" ] && rm -f "$TMPLOG"
	exit 130
}
trap on_signal INT TERM HUP
# timeout(1) runs QEMU in its own process group, so a Ctrl-C reaches only
# this script, whose trap stops QEMU.
timeout -k 10 "$TIMEOUT" "${QCMD[@]}" </dev/null 2>"$TOP/build/.qemu-stderr.$$" &
QPID=$!
wait "$QPID"
rc=$?
QPID=
trap - INT TERM HUP
qerr=$(cat "$TOP/build/.qemu-stderr.$$" 2>/dev/null); rm -f "$TOP/build/.qemu-stderr.$$"

status=ok
if [ $rc = 124 ] || [ $rc = 137 ]; then
	status=timeout
elif grep -q 'Kernel panic' "$CONLOG"; then
	status=panic
elif [ $rc != 0 ]; then
	status=qemu-error
fi
write_meta "$status" "$rc" "$(secs)"
case $status in
ok) [ -n "$TMPLOG" ] && rm -f "$TMPLOG"; exit 0 ;;
timeout) note "timed out after $TIMEOUT s (Linux $krel, $ACCEL)"; show_tail; exit 124 ;;
panic) note "kernel panic (Linux $krel, $ACCEL)"; show_tail; exit 3 ;;
*) note "QEMU exited with status $rc: $qerr"; show_tail; exit $rc ;;
esac
