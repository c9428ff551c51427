# model.gp: the model's writer median wait per steal policy, for both drop modes, one point per reference run.
# usage: gnuplot -e "data='model-points.dat'; out='x.svg'" model.gp
set terminal svg size 720,460 dynamic font "sans,12"
set output out
set title "userspace model (bench\\_rwsem): the writer's median wait in down\\_write()"
set ylabel "writer median wait (µs, log scale)"
set logscale y
set format y "%g"
set yrange [5:60000]
set xrange [0:8]
set xtics ("stock" 1, "nosteal" 2, "writer first" 3, "stock" 5, "nosteal" 6, "writer first" 7) scale 0
set label 1 "reader drops when a writer waits" at 2,25000 center
set label 2 "reader drops every 64 items" at 6,25000 center
set arrow 1 from 0,4000 to 8,4000 nohead dashtype 2 lc rgb "#888888"
set label 3 "handoff timeout (4 ms)" at 0.15,5600 left textcolor rgb "#555555"
set arrow 2 from 4,5 to 4,60000 nohead lc rgb "#bbbbbb"
set grid ytics
unset key
plot data using (strcol(5) eq "STEAL" ? $1 : NaN):2 with points pt 7 ps 1.2 lc rgb "#c0392b" title "stock 6.12 stealing", \
     data using (strcol(5) eq "NOSTEAL" ? $1 : NaN):2 with points pt 5 ps 1.2 lc rgb "#2471a3" title "down\\_read\\_nosteal() at the retake", \
     data using (strcol(5) eq "WRITER_FIRST" ? $1 : NaN):2 with points pt 9 ps 1.3 lc rgb "#1e8449" title "never steal behind a writer"
