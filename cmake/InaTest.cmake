# SPDX-License-Identifier: MIT
# ina_add_test(NAME SOURCES a.c [b.c] LIBS x y LABELS l [TIMEOUT s] [SERIAL]):
# one cmocka executable per module, registered with ctest under its labels.
# A source that does not exist stops the configure: a test is never dropped
# silently. The cmocka cases skip through tests/unit/skip.h (INA_SKIP), which
# turns a skip into a failure where INA_REQUIRE_DPDK=1 (CI); a bare cmocka
# skip() in a test source stops the configure too.
function(ina_add_test name)
  cmake_parse_arguments(T "SERIAL" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_SOURCES)
    set(T_SOURCES ${name}.c)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  foreach(src ${T_SOURCES})
    get_filename_component(path ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    if(NOT EXISTS ${path})
      message(FATAL_ERROR "test ${name}: source ${src} does not exist (${path})")
    endif()
    file(STRINGS ${path} bare REGEX "(^|[^_A-Za-z0-9])skip\\(\\)")
    if(bare)
      message(FATAL_ERROR "test ${name}: ${src} calls cmocka's skip(), which CI would "
        "count as a pass; use INA_SKIP(reason) from tests/unit/skip.h")
    endif()
  endforeach()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} PkgConfig::CMOCKA ina_warnings)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  if(T_SERIAL)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  endif()
endfunction()
