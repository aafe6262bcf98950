set terminal pngcairo size 1100,700 font 'sans,10' noenhanced
set output 'coll_run_mpi.png'
set label 99 'collkit f63d1027ea07, 2026-12-05 08:49 UTC, vm' at screen 0.99, screen 0.01 right font 'sans,7' textcolor rgb 'gray40'
set title "coll-run's best plan / Open MPI's collective (time ratio, mpirun -np 4; below 1: collkit faster)"
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set ylabel 'time ratio'
set grid
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb 'black'
plot for [i=0:2] 'coll_run_mpi.dat' index i using 1:2 with linespoints lw 2 title columnheader(1)
