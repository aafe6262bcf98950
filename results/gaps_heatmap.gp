set terminal pngcairo size 1100,700 font 'sans,10' noenhanced
set output 'gaps_heatmap.png'
set label 99 'collkit 5dbf684699a6, 2026-12-07 03:35 UTC, vm' at screen 0.99, screen 0.01 right font 'sans,7' textcolor rgb 'gray40'
set terminal pngcairo size 1200,726 font 'sans,9' noenhanced
set output 'gaps_heatmap.png'
set termoption noenhanced
set title "Gap of collkit's best plan (auto) to the lower bound, % (colour capped at 200)"
set cbrange [0:200]
set palette defined (0 '#1a9850', 25 '#fee08b', 100 '#f46d43', 200 '#a50026')
set xtics rotate by 45 right
set ytics nomirror
set yrange [] reverse
set datafile missing 'NaN'
set lmargin 30
set bmargin 9
unset key
plot 'gaps_heatmap.dat' matrix rowheaders columnheaders with image pixels, \
     '' matrix rowheaders columnheaders using 1:2:($3 >= 200 ? '>200' : sprintf('%.0f', $3)) with labels font 'sans,6'
