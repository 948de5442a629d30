# dccc_add_library(NAME SOURCES prog.toy [TARGET cpu|cuda] [CPU cpu]
#                  [CUDA_ARCH sm_80 sm_90 ...] [FLAGS flag ...])
#
# Compiles prog.toy with dccc::dccc at build time into
# ${CMAKE_CURRENT_BINARY_DIR}/dccc/NAME/NAME.so (with NAME.h and dccrt.h
# beside it) and defines NAME, an imported shared library target whose
# include directory is that folder: link it and `#include "NAME.h"`. The
# library is rebuilt when prog.toy changes, when any file it imports does
# (dccc's -MD dependency file lists every file the compilation read), or
# when dccc itself does. SOURCES takes one file, the program; the files it
# imports are found by dccc (its folder, -I, std/). FLAGS go to dccc as
# they are (`-g`, `-O2`, `-I dir`, `--schedule=...`).
function(dccc_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "TARGET;CPU" "SOURCES;CUDA_ARCH;FLAGS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dccc_add_library(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  list(LENGTH ARG_SOURCES count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "dccc_add_library(${name}): SOURCES takes one .toy file, the program (dccc finds what it imports)")
  endif()
  get_filename_component(source "${ARG_SOURCES}" ABSOLUTE)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/dccc/${name}")
  file(MAKE_DIRECTORY "${dir}")
  set(flags)
  if(ARG_TARGET)
    if(NOT ARG_TARGET MATCHES "^(cpu|cuda)$")
      message(FATAL_ERROR "dccc_add_library(${name}): TARGET is cpu or cuda, not `${ARG_TARGET}`")
    endif()
    list(APPEND flags --target=${ARG_TARGET})
  endif()
  if(ARG_CPU)
    list(APPEND flags --cpu=${ARG_CPU})
  endif()
  if(ARG_CUDA_ARCH)
    list(JOIN ARG_CUDA_ARCH "," archs)
    list(APPEND flags --cuda-arch=${archs})
  endif()
  list(APPEND flags ${ARG_FLAGS})
  add_custom_command(
    OUTPUT "${dir}/${name}.so" "${dir}/${name}.h" "${dir}/dccrt.h"
    COMMAND dccc::dccc "${source}" -o "${dir}/${name}.so" -MD -MF "${dir}/${name}.d" ${flags}
    DEPENDS "${source}" dccc::dccc
    DEPFILE "${dir}/${name}.d"
    COMMENT "dccc: compiling ${ARG_SOURCES} into ${name}.so"
    VERBATIM)
  add_custom_target(${name}_dccc DEPENDS "${dir}/${name}.so" "${dir}/${name}.h")
  add_library(${name} SHARED IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES
    IMPORTED_LOCATION "${dir}/${name}.so"
    IMPORTED_SONAME "${name}.so"
    INTERFACE_INCLUDE_DIRECTORIES "${dir}")
  add_dependencies(${name} ${name}_dccc)
endfunction()
