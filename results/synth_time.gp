set terminal pngcairo size 1100,700 font 'sans,10' noenhanced
set output 'synth_time.png'
set label 99 'collkit c07261cf7900, 2026-12-07 03:33 UTC, vm' at screen 0.99, screen 0.01 right font 'sans,7' textcolor rgb 'gray40'
set title 'Synthesis time of coll-plan generate --algo synth (dgx-h100 x N, 1 GiB)'
set logscale xy
set xlabel 'ranks'
set ylabel 'seconds'
set grid
set key top left
plot for [i=0:1] 'synth_time.dat' index i using 1:2 with linespoints lw 2 title columnheader(1), \
     for [i=2:3] 'synth_time.dat' index i using 1:2 with points pt 7 ps 1.5 title columnheader(1)
