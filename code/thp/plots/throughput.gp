# throughput.gp: partial unmaps per second vs threads, 6.12's early check on and off (bench_thp --data).
# usage: gnuplot -e "data='throughput.dat'; out='x.svg'" throughput.gp
set terminal svg size 720,440 dynamic font "sans,12"
set output out
set title "code/thp model: partial unmaps of large folios, split\\_queue\\_lock"
set xlabel "threads (this machine; more threads than CPUs share them)"
set ylabel "unmaps per second (all threads; median, min-max)"
set logscale x 2
set format x "%g"
set format y "%.1s×10^{%T}"
set yrange [0:*]
set key top left
set grid
plot data using 1:2:3:4 with yerrorlines pt 7 ps 0.6 title "6.12: early check (folio\\_test\\_partially\\_mapped)", \
     data using 1:5:6:7 with yerrorlines pt 7 ps 0.6 title "switch off: split\\_queue\\_lock on every partial unmap"
