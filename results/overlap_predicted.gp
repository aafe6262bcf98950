set terminal pngcairo size 1100,700 font 'sans,10' noenhanced
set output 'overlap_predicted.png'
set label 99 'collkit f63d1027ea07, 2026-12-05 08:55 UTC, vm' at screen 0.99, screen 0.01 right font 'sans,7' textcolor rgb 'gray40'
set terminal pngcairo size 1100,2100 font 'sans,10' noenhanced
set output 'overlap_predicted.png'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set ylabel 'predicted step time, ms'
set grid y
set key outside right
set yrange [0:*]
set multiplot layout 5,1
set title "llama3-70b TP8 SP DP2, 2 x dgx-h100"
plot 'overlap_predicted.dat' index 0 every ::1 using 2:xtic(1) title 'compute', '' index 0 every ::1 using 3 title 'contention slowdown', \
     '' index 0 every ::1 using 4 title 'exposed communication', '' index 0 every ::1 using 5 title 'pipeline bubble'
set title "llama3-8b FSDP8 TP8, 8 x dgx-h100"
plot 'overlap_predicted.dat' index 1 every ::1 using 2:xtic(1) title 'compute', '' index 1 every ::1 using 3 title 'contention slowdown', \
     '' index 1 every ::1 using 4 title 'exposed communication', '' index 1 every ::1 using 5 title 'pipeline bubble'
set title "mixtral-8x7b EP8 DP16, 2 x dgx-h100"
plot 'overlap_predicted.dat' index 2 every ::1 using 2:xtic(1) title 'compute', '' index 2 every ::1 using 3 title 'contention slowdown', \
     '' index 2 every ::1 using 4 title 'exposed communication', '' index 2 every ::1 using 5 title 'pipeline bubble'
set title "llama3-8b TP2+SP, scaled 16x"
plot 'overlap_predicted.dat' index 3 every ::1 using 2:xtic(1) title 'compute', '' index 3 every ::1 using 3 title 'contention slowdown', \
     '' index 3 every ::1 using 4 title 'exposed communication', '' index 3 every ::1 using 5 title 'pipeline bubble'
set title "llama3-8b TP2+SP, scaled 16x (measured)"
plot 'overlap_predicted.dat' index 4 every ::1 using 2:xtic(1) title 'compute', '' index 4 every ::1 using 3 title 'contention slowdown', \
     '' index 4 every ::1 using 4 title 'exposed communication', '' index 4 every ::1 using 5 title 'pipeline bubble'
unset multiplot
