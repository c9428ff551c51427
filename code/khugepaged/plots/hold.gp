# hold.gp: longest mmap_lock read hold vs number of ineligible VMAs, skip batch off vs 1024.
# usage: gnuplot -e "data='hold.dat'; out='x.svg'" hold.gp
set terminal svg size 720,440 dynamic font "sans,12"
set output out
set title "khugepaged model: longest mmap\\_lock read hold in one walk"
set xlabel "ineligible VMAs in front of the eligible one"
set ylabel "longest read hold (simulated us)"
set logscale xy
set format x "%g"
set format y "%g"
set xrange [500:2e6]
set key top left
set grid
plot data using ($1 > 0 ? $1 : 1/0):2 with linespoints pt 7 ps 0.6 title "6.12: no skip batch", \
     data using ($1 > 0 ? $1 : 1/0):4 with linespoints pt 7 ps 0.6 title "patch 5: retake after 1024 skipped VMAs"
