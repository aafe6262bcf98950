set terminal pngcairo size 1100,700 font 'sans,10' noenhanced
set output 'adapt_times.png'
set label 99 'collkit 8e4c6ddab8e6, 2026-12-05 12:08 UTC, vm' at screen 0.99, screen 0.01 right font 'sans,7' textcolor rgb 'gray40'
set title 'Ring AllReduce under injected faults: healthy, degraded, adapted (mpirun -np 4)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'time us (log)'
set xtics rotate by 30 right
set bmargin 8
set grid y
plot 'adapt_times.dat' using 2:xtic(1) title 'healthy', '' using 3 title 'degraded', '' using 4 title 'adapted'
