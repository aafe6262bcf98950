set terminal pngcairo size 1100,700 font 'sans,10' noenhanced
set output 'fidelity.png'
set label 99 'collkit 5352c8371c66, 2026-12-05 17:35 UTC, vm' at screen 0.99, screen 0.01 right font 'sans,7' textcolor rgb 'gray40'
set title 'Predicted against measured time, mpirun -np 4 on this host'
set logscale xy
set xlabel 'measured us'
set ylabel 'predicted us'
set grid
set key top left
set size square
plot 'fidelity.dat' index 0 using 1:2 with points pt 7 ps 0.8 title columnheader(1), \
     '' index 1 using 1:2 with points pt 5 ps 0.8 title columnheader(1), \
     x with lines dt 2 lc rgb 'black' title 'predicted = measured'
