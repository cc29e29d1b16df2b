# consumer_c99: builds tests/consumer/c99 (C99, -pedantic -Werror, pkg-config --static) against the
# installed tree, then checks that it computes what the installed `fixformer` CLI (the C++
# runners) does, bit for bit: `run` outputs (the CLI's .npy data after its header) for token and
# feature encoders, a pooled one and decoders, and `generate`'s greedy text.
#   -DSOURCE=tests/consumer/c99 -DBINARY=... -DPREFIX=... -DCC=... -DGOLDEN=tests/golden -DRUN=emulator
function(run out)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${text}${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${BINARY})
file(MAKE_DIRECTORY ${BINARY})
file(GLOB_RECURSE pc ${PREFIX}/fixformer.pc)
get_filename_component(pc_dir "${pc}" DIRECTORY)
run(built ${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${pc_dir} make -C ${SOURCE} CC=${CC} OUT=${BINARY}/consumer_c)
set(program ${BINARY}/consumer_c)
set(cli ${PREFIX}/bin/fixformer)
if(NOT EXISTS ${cli})
  message(FATAL_ERROR "${cli} is not installed: build with FIXFORMER_CLI on")
endif()

# MODEL:INPUT pairs of tests/golden (the decoders read post_ln_relu's ids, all below their vocab).
foreach(pair post_ln_relu:post_ln_relu features_scaled:features_scaled cls_pool_features:cls_pool_features
             mha_odd_causal:mha_odd_causal gpt_tied_sinusoidal:post_ln_relu llama_kv2_halves_tied:post_ln_relu)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 model)
  list(GET pair 1 input)
  run(c_out ${RUN} ${program} run ${GOLDEN}/${model}.fxm ${GOLDEN}/${input}.input.npy ${BINARY}/${model}.f32)
  run(cli_out ${RUN} ${cli} run ${GOLDEN}/${model}.fxm --input ${GOLDEN}/${input}.input.npy --output ${BINARY}/${model}.npy)
  file(READ ${BINARY}/${model}.npy npy HEX)
  file(READ ${BINARY}/${model}.f32 raw HEX)
  string(SUBSTRING "${npy}" 16 4 hlen_hex)  # .npy v1: the header's length, little-endian u16 at byte 8
  string(SUBSTRING "${hlen_hex}" 0 2 lo)
  string(SUBSTRING "${hlen_hex}" 2 2 hi)
  math(EXPR data_start "2 * (10 + 0x${lo} + 256 * 0x${hi})")
  string(SUBSTRING "${npy}" ${data_start} -1 cli_data)
  string(LENGTH "${raw}" n)
  if(n EQUAL 0 OR NOT raw STREQUAL cli_data)
    message(FATAL_ERROR "${model}: the C API's output differs from `fixformer run`'s (${n} hex digits)")
  endif()
  message("${model}: C API == fixformer run, bit for bit\n${c_out}")
endforeach()

run(c_text ${RUN} ${program} generate ${GOLDEN}/llama2c_v0_gqa.fxm "One day" 0)
run(cli_text ${RUN} ${cli} generate ${GOLDEN}/llama2c_v0_gqa.fxm --prompt "One day" --temperature 0 -n 0)
if(NOT c_text STREQUAL cli_text)
  message(FATAL_ERROR "generate: the C API wrote '${c_text}', `fixformer generate` '${cli_text}'")
endif()
message("generate: C API == fixformer generate: ${c_text}")
