# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# wire.fuzz_smoke: a bounded libFuzzer run of fuzz_wire from the seeds.
# New corpus entries go to a fresh work directory so that every run
# starts from the same seeds; a crash fails the test and leaves the input
# in WORK/artifacts/.
#   cmake -DFUZZER=... -DSEEDS=... -DWORK=... [-DTIME=20] [-DRUNS=..] -P
if(NOT TIME)
  set(TIME 20)
endif()
if(NOT RUNS)
  set(RUNS 5000000)
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
execute_process(
  COMMAND ${FUZZER} -max_total_time=${TIME} -runs=${RUNS} -timeout=10
          -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus ${SEEDS}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz_wire failed (${rc}); inputs in ${WORK}/artifacts")
endif()
