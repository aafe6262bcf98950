set terminal pngcairo size 1100,700 font 'sans,10' noenhanced
set output 'scale.png'
set label 99 'collkit 4441492e8467, 2026-12-05 14:46 UTC, vm' at screen 0.99, screen 0.01 right font 'sans,7' textcolor rgb 'gray40'
set terminal pngcairo size 1100,900 font 'sans,10' noenhanced
set output 'scale.png'
set multiplot layout 2,1
set logscale xy
set xlabel 'ranks (dgx-h100 x N)'
set grid
set key top left
set title 'Wall time per step (one process each, 1 GiB AllReduce)'
set ylabel 'seconds'
plot for [i=0:2] 'scale.dat' index i using 1:2 with linespoints lw 2 title columnheader(1)
set title 'Peak memory (max RSS)'
set ylabel 'MB'
plot for [i=0:2] 'scale.dat' index i using 1:3 with linespoints lw 2 title columnheader(1)
unset multiplot
