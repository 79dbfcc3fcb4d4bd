# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# bench/report's plot: gnuplot -e "dat='sweep.dat'; png='bench.png'; machine='...'" plot.gp
# Columns of dat: size viw_bw viw_lat siw_bw siw_lat tcp_bw tcp_lat.
set terminal pngcairo size 1000,420 font ",10"
set output png
set datafile missing "NaN"
set multiplot layout 1,2 title "viw, siw and TCP side by side in one boot: ".machine
set logscale x 2
set format x "%.0b%B"
set xlabel "message size (bytes)"
set grid
set key top left

set title "bandwidth (ib\\_write\\_bw -R; TCP: iperf3 -l SIZE, one stream)"
set ylabel "MiB/s"
set logscale y
plot dat using 1:2 with linespoints lw 2 title "viw", \
     dat using 1:4 with linespoints lw 2 title "siw", \
     dat using 1:6 with linespoints lw 2 title "TCP"

set title "latency (ib\\_write\\_lat -R; TCP: spinning ping-pong, RTT/2)"
set ylabel "us"
plot dat using 1:3 with linespoints lw 2 title "viw", \
     dat using 1:5 with linespoints lw 2 title "siw", \
     dat using 1:7 with linespoints lw 2 title "TCP"
unset multiplot
