# cursor.gp: simulated time to full collapse vs trylock failure chance, global vs per-slot cursor.
# usage: gnuplot -e "data='cursor.dat'; out='x.svg'" cursor.gp
set terminal svg size 720,440 dynamic font "sans,12"
set output out
set title "khugepaged model: time to collapse an mm under mmap\\_lock contention"
set xlabel "probability that mmap\\_read\\_trylock() fails"
set ylabel "simulated time to full collapse (s, log scale)"
set logscale y
set format y "%g"
set key top left
set grid
plot data using 1:3 with linespoints pt 7 ps 0.6 title "6.12: global cursor (restart at 0)", \
     data using 1:5 with linespoints pt 7 ps 0.6 title "patch 2: per-slot cursor (resume)"
