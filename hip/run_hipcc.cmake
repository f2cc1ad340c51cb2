# run_hipcc.cmake: one hipcc --genco compile of the kernels for one gfx target, -Werror, with
# the AMDGPU resource-usage remarks written to REMARKS (read by spill_gate.cmake).
# -DHIPCC -DTARGET -DSRC -DOUT -DREMARKS -DDEVLIB -DINC -DFLAGS
separate_arguments(_flags UNIX_COMMAND "${FLAGS}")
execute_process(
  COMMAND ${HIPCC} --genco --offload-arch=${TARGET} --rocm-device-lib-path=${DEVLIB} -I${INC} ${_flags}
          -Wall -Wextra -Werror -Rpass-analysis=kernel-resource-usage ${SRC} -o ${OUT}
  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
file(WRITE ${REMARKS} "${err}")
if(NOT rc EQUAL 0)
  string(REGEX REPLACE "[^\n]*remark:[^\n]*\n" "" shown "${err}")
  message(FATAL_ERROR "hipcc ${TARGET} failed:\n${out}${shown}")
endif()
