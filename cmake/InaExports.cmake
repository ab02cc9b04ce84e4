# SPDX-License-Identifier: MIT
# ina_write_version_script(HEADER OUT_FILE): writes a linker version script
# that keeps global only the functions HEADER declares INA_API (a line
# starting with INA_API names its function before the first '(') and makes
# every other symbol local. -fvisibility=hidden already hides the rest; the
# script also hides what it cannot: gcc 12 gives the ifunc dispatchers of
# target_clones functions (common/src/encode.c) default visibility whatever
# the flags say. tests/unit/test_exports.sh checks the result.
function(ina_write_version_script header out_file)
  file(STRINGS "${header}" lines REGEX "^INA_API")
  set(names "")
  foreach(l IN LISTS lines)
    if(l MATCHES "^INA_API[^(]*[^A-Za-z0-9_(]([A-Za-z_][A-Za-z0-9_]*)[ \t]*\\(")
      list(APPEND names ${CMAKE_MATCH_1})
    else()
      message(FATAL_ERROR "${header}: '${l}': write an INA_API declaration as "
        "'INA_API type name(' on one line, so that the export list has it")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  list(LENGTH names n)
  if(n LESS 10)
    message(FATAL_ERROR "${header}: only ${n} INA_API declarations found")
  endif()
  list(SORT names)
  list(JOIN names ";\n    " body)
  file(CONFIGURE OUTPUT "${out_file}" CONTENT
    "/* Generated from ${header} by cmake/InaExports.cmake. */\n{\n  global:\n    ${body};\n  local:\n    *;\n};\n")
  # A change of the header re-runs the configure (new functions, new version).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${header}")
endfunction()
