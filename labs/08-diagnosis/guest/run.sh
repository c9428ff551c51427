#!/bin/sh
# Lab 08's run in the guest (/labs/diag/run.sh, the "diagnosis" line of the
# experiments list that labs/08-diagnosis/diag.sh appends). /labs/diag/
# holds the seed, your answer.txt (its "switch:" line) and your probe.sh.
#   1. /labs/diagnose -s SEED starts the scenario and measures "before";
#   2. when it opens the probe window, probe.sh runs (at most PROBE_S
#      seconds; the pids are in its environment, from /tmp/diagnose.env),
#      its output on the results port as JSON lines (mmlocks-tool), then
#      each file it left in /tmp/diag/ as a gzip'd file record;
#   3. diagnose sets the switch and measures "after".
usage() {
	cat <<EOF
usage: /labs/diag/run.sh [--quick] [--help]
Lab 08's run in the guest (labs/08-diagnosis/diag.sh run boots it): runs
/labs/diagnose with /labs/diag/seed and answer.txt's "switch:", and
/labs/diag/probe.sh in its probe window (at most 90 s); prints their
output and the probe's *.txt files as JSON lines.
  --quick   short phases (diagnose --quick)
Exit: diagnose's status; 2 usage.
EOF
}
for a in "$@"; do
	case "$a" in
	-h|--help) usage; exit 0 ;;
	--quick) ;;
	*) echo "run.sh: unknown argument '$a'" >&2; usage >&2; exit 2 ;;
	esac
done
D=/labs/diag
SEED=$(cat "$D/seed" 2>/dev/null || echo 1)
SW=$(sed -n 's/^[ 	]*switch:[ 	]*\([^ 	#]*\).*/\1/p' "$D/answer.txt" 2>/dev/null | head -n 1)
PROBE_S=90
args="-s $SEED --probe-seconds $((PROBE_S + 30))"
case " $* " in *" --quick "*) args="$args --quick --probe-seconds $((PROBE_S + 30))" ;; esac
[ -n "$SW" ] && args="$args --switch $SW"
echo "run.sh: /labs/diagnose $args" >&2
rm -rf /tmp/diag /tmp/diagnose.probing /tmp/diagnose.probed
mkdir -p /tmp/diag
# shellcheck disable=SC2086
/labs/diagnose $args &
dpid=$!
i=0
while [ ! -e /tmp/diagnose.probing ] && kill -0 $dpid 2>/dev/null && [ $i -lt 600 ]; do
	sleep 0.2; i=$((i + 1))
done
if [ -e /tmp/diagnose.probing ] && [ -f "$D/probe.sh" ]; then
	set -a; . /tmp/diagnose.env; set +a
	mmlocks-tool --name probe --cd /tmp/diag -- timeout -s TERM -k 5 $PROBE_S sh "$D/probe.sh"
	for f in /tmp/diag/*.txt; do
		[ -f "$f" ] || continue
		gzip -9 <"$f" >"$f.gz"
		# The base64 text streams out (a shell argument of megabytes would not).
		printf '{"type":"file","tool":"probe","name":"%s.gz","bytes":%s,"lines":%s,"base64":"' \
			"${f##*/}" "$(wc -c <"$f.gz" | tr -d ' ')" "$(wc -l <"$f" | tr -d ' ')"
		base64 -w 0 "$f.gz"
		printf '"}\n'
	done
fi
touch /tmp/diagnose.probed
wait $dpid
