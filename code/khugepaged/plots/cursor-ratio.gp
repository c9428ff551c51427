# cursor-ratio.gp: the model's time ratio (global / per-slot cursor) vs trylock failure chance, for the guest's layout, with the guest's measured points.
# usage: gnuplot -e "data='cursor-guest.dat'; points='points.dat'; out='x.svg'" cursor-ratio.gp
set terminal svg size 720,440 dynamic font "sans,12"
set output out
set title "time to collapse, global / per-slot cursor: model and guest"
set xlabel "fraction of mmap\\_read\\_trylock() calls that fail"
set ylabel "time ratio, global / per-slot (log scale)"
set logscale y
set format y "%g"
set xrange [0:1]
set key top left Left reverse
set grid
plot data using 1:($3/$5) with linespoints pt 7 ps 0.6 title "model: 10000 VMAs, 8 ranges, 100 ms sleep", \
     points using ($3 == 0 ? $1 : NaN):2 with points pt 5 ps 1.2 title "guest reference runs (one point per writer pause)", \
     points using ($3 > 0 ? $1 : NaN):2 with points pt 9 ps 1.2 title "guest, stock runs bounded (ratio is a lower bound)"
