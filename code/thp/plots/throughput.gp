# throughput.gp: partial unmaps per second vs threads, 6.12's early check on and off (bench_thp --data).
# usage: gnuplot -e "data='throughput.dat'; out='x.svg'" throughput.gp
set terminal svg size 720,440 dynamic font "sans,12"
set output out
set title "code/thp model: unmaps of large folios, split\\_queue\\_lock per partial unmap or not"
set xlabel "threads (measured on the machine that built this book)"
set ylabel "unmaps per second, all threads (10^6; median, min–max)"
set logscale x 2
set format x "%g"
set format y "%g"
set yrange [0:*]
set key below
set grid
M = 1e6
plot data using 1:($2/M):($3/M):($4/M) with yerrorlines pt 7 ps 0.6 title "6.12: early check (folio\\_test\\_partially\\_mapped)", \
     data using 1:($5/M):($6/M):($7/M) with yerrorlines pt 7 ps 0.6 title "switch off: split\\_queue\\_lock on every partial unmap"
