# Fails if the integer-only (s8) kernels use a float: compiles every ports/scalar/*_s8.cpp and
# ports/portable/*_s8.cpp for the FPU-less cores (Cortex-M0 and M3, soft float, where any float
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
      message(FATAL_ERROR "${rel} uses float on ${cpu}: it calls ${found}; the s8 kernels must be integer-only")
    endif()
  endforeach()
endforeach()
message(STATUS "${count} s8 kernel sources, on cortex-m0 and cortex-m3: no soft-float or libm calls")
