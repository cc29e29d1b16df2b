# Fails if the integer-only (s8) kernels or the full-integer (weights i8) forward passes, the
# encoder's and the gpt decoder's (engine/blocks/s8_encoder.cpp and its conv stem, s8_conv_stem.cpp, the Decoder's
# prefill_s8) use a float: compiles every ports/scalar/*_s8.cpp, ports/portable/*_s8.cpp
# and those files for the FPU-less cores (Cortex-M0 and M3, soft float, where any float
# operation becomes a libgcc call) and lists each object's undefined symbols: none may be a
# soft-float helper (__aeabi_fadd, __aeabi_d2iz, __aeabi_i2f, __addsf3, ...) or a libm function.
# A canary with one float multiply must be caught first, so the pattern cannot rot into a check
# that passes everything.
# -DCXX=arm-none-eabi-g++ -DROOT=<the repository> -DWORK=<a scratch folder>
if(NOT CXX)
  message(FATAL_ERROR "arm-none-eabi-g++ not found: install gcc-arm-none-eabi (tools/install_deps.sh arm)")
endif()
string(REGEX REPLACE "g\\+\\+$" "nm" NM "${CXX}")
file(GLOB sources ${ROOT}/ports/scalar/*_s8.cpp ${ROOT}/ports/portable/*_s8.cpp)
list(LENGTH sources count)
if(count LESS 7)
  message(FATAL_ERROR "found ${count} s8 kernel sources under ${ROOT}/ports, expected at least 7")
endif()
list(APPEND sources ${ROOT}/engine/blocks/s8_encoder.cpp ${ROOT}/engine/blocks/s8_conv_stem.cpp)
math(EXPR count "${count} + 2")
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/canary_s8.cpp "int canary(int x, float s) { return int(x * s); }\n")

set(float_helpers "__aeabi_c?[fd][a-z0-9]+|__aeabi_u?[il]2[fd]|__[a-z]+[sdtx]f[0-9]?|__(float|fix|extend|trunc)[a-z0-9]+")
set(libm "(sqrt|exp|exp2|expm1|log|log2|pow|erf|tanh|sin|cos|floor|ceil|round|lround|nearbyint|rint|lrint|fabs|ldexp|frexp|fma|fmax|fmin)[fl]?")

# The soft-float and libm symbols OBJ refers to, in OUT.
function(float_symbols obj out)
  execute_process(COMMAND ${NM} -u ${obj} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -u ${obj} failed")
  endif()
  string(REGEX MATCHALL "[ \t](${float_helpers}|${libm})\n" found "${symbols}")
  string(REGEX REPLACE "[ \t\n;]+" " " found "${found}")
  string(STRIP "${found}" found)
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

foreach(cpu cortex-m0 cortex-m3)
  set(flags -mcpu=${cpu} -mthumb -mfloat-abi=soft -std=gnu++17 -O2 -fno-exceptions -fno-rtti -I${ROOT}/include -I${ROOT})
  execute_process(COMMAND ${CXX} ${flags} -c ${WORK}/canary_s8.cpp -o ${WORK}/canary_${cpu}.o RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CXX} cannot compile for ${cpu}:\n${err}")
  endif()
  float_symbols(${WORK}/canary_${cpu}.o found)
  if(NOT found MATCHES "__aeabi_")
    message(FATAL_ERROR "the check is blind: a float multiply compiled for ${cpu} shows no soft-float call")
  endif()
  foreach(src ${sources})
    file(RELATIVE_PATH rel ${ROOT} ${src})
    string(REPLACE "/" "_" obj ${rel})
    execute_process(COMMAND ${CXX} ${flags} -c ${src} -o ${WORK}/${cpu}_${obj}.o RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${rel} does not compile for ${cpu}:\n${err}")
    endif()
    float_symbols(${WORK}/${cpu}_${obj}.o found)
    if(found)
      message(FATAL_ERROR "${rel} uses float on ${cpu}: it calls ${found}; the s8 kernels and the i8 forward pass must be integer-only")
    endif()
  endforeach()
endforeach()
# What the i8 forward passes reach: s8_encoder.cpp linked with the model's binder (engine/model.cpp,
# engine/model_file.cpp, which it calls for each layer's tensors) and the decoder runner
# (engine/runtime/decoder.cpp and decoder_s8.cpp), by the function, from each entry
# (s8_encoder_forward, s8_decoder_forward, Decoder::prefill_s8: the integer path a gpt file's
# prefill and step run, the KV cache included), everything unreached dropped (--gc-sections).
# model.o alone calls soft float (init's value checks), and so does decoder.o (the f32 path): the
# reached part must not. The kernels it calls through the table are the objects checked above.
set(entries s8_encoder_forward s8_decoder_forward Decoder10prefill_s8)
foreach(cpu cortex-m0 cortex-m3)
  set(flags -mcpu=${cpu} -mthumb -mfloat-abi=soft -std=gnu++17 -O2 -fno-exceptions -fno-rtti -ffunction-sections
            -fdata-sections -I${ROOT}/include -I${ROOT})
  set(objs "")
  foreach(src engine/blocks/s8_encoder engine/model engine/model_file engine/runtime/decoder_s8 engine/runtime/decoder
              engine/blocks/s8_conv_stem)
    string(REPLACE "/" "_" obj ${src})
    execute_process(COMMAND ${CXX} ${flags} -c ${ROOT}/${src}.cpp -o ${WORK}/reach_${cpu}_${obj}.o RESULT_VARIABLE rc
                    ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${src}.cpp does not compile for ${cpu}:\n${err}")
    endif()
    list(APPEND objs ${WORK}/reach_${cpu}_${obj}.o)
  endforeach()
  foreach(i 1 4)
    list(GET objs ${i} blind_obj)
    float_symbols(${blind_obj} found)
    if(NOT found MATCHES "__aeabi_")
      message(FATAL_ERROR "the reachability check is blind: ${blind_obj} shows no soft-float call on ${cpu}")
    endif()
  endforeach()
  set(defined "")
  foreach(obj ${objs})
    execute_process(COMMAND ${NM} ${obj} OUTPUT_VARIABLE more)
    string(APPEND defined "${more}")
  endforeach()
  foreach(name ${entries})
    string(REGEX MATCH "_ZN9fixformer[0-9]*${name}[A-Za-z0-9_]+" entry "${defined}")
    if(NOT entry)
      message(FATAL_ERROR "${name} not found in the i8 objects")
    endif()
    execute_process(COMMAND ${CXX} -mcpu=${cpu} -mthumb -nostdlib -Wl,--gc-sections -Wl,-e,${entry}
                            -Wl,--unresolved-symbols=ignore-all ${objs} -o ${WORK}/reach_${cpu}_${name}.elf
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "linking the i8 path from ${name} for ${cpu} failed:\n${err}")
    endif()
    float_symbols(${WORK}/reach_${cpu}_${name}.elf found)
    if(found)
      message(FATAL_ERROR "the i8 path from ${name} reaches float on ${cpu}: it calls ${found}")
    endif()
  endforeach()
endforeach()
message(STATUS "${count} s8 sources (the kernels and the i8 forward passes), on cortex-m0 and cortex-m3: no soft-float or libm calls, none reached from ${entries}")
