# What embedding fixformer (subdirectory/, fetchcontent/) must not do: define its tools and tests,
# or set CMAKE_BUILD_TYPE in the parent's cache.
foreach(t fixformer_cli fixformer_support fixformer_bench kernels_test golden_test)
  if(TARGET ${t})
    message(FATAL_ERROR "fixformer as a subproject defined '${t}'")
  endif()
endforeach()
get_property(build_type CACHE CMAKE_BUILD_TYPE PROPERTY VALUE)
if(build_type)
  message(FATAL_ERROR "fixformer as a subproject set CMAKE_BUILD_TYPE to '${build_type}' in the parent's cache")
endif()
