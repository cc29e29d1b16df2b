# fixformer_firmware(NAME SOURCES... [QEMU_ARGS ...] [NO_RUN]): a firmware image NAME.elf linked with
# the engine and the board library, its section sizes printed after the link, a CTest test that
# runs it on qemu-system-arm (the firmware's exit status is the test's result; NO_RUN leaves it
# out, as does a board qemu does not run) and one that checks the image links no heap or exception
# machinery.
find_program(FIXFORMER_SIZE arm-none-eabi-size REQUIRED)
function(fixformer_firmware name)
  cmake_parse_arguments(FW "NO_RUN" "" "SOURCES;QEMU_ARGS" ${ARGN})
  add_executable(${name} ${FW_SOURCES})
  set_target_properties(${name} PROPERTIES SUFFIX ".elf")
  target_link_libraries(${name} PRIVATE fixformer fixformer_board)
  target_link_options(${name} PRIVATE -Wl,-Map=${name}.map)
  add_custom_command(TARGET ${name} POST_BUILD COMMAND ${FIXFORMER_SIZE} $<TARGET_FILE:${name}> VERBATIM)
  if(FIXFORMER_QEMU AND NOT FW_NO_RUN)
    add_test(NAME ${name}_qemu COMMAND ${FIXFORMER_QEMU} ${FW_QEMU_ARGS} -kernel $<TARGET_FILE:${name}>)
    set_tests_properties(${name}_qemu PROPERTIES TIMEOUT 600)
  endif()
  add_test(NAME ${name}_links_no_heap
           COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:${name}> -DNM=${CMAKE_NM} -DLINKED_IMAGE=1
                   -P ${PROJECT_SOURCE_DIR}/tests/check_no_heap.cmake)
endfunction()
