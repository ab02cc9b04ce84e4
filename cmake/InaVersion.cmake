# SPDX-License-Identifier: MIT
# ina_read_version(HEADER OUT): sets OUT to "MAJOR.MINOR.PATCH" from the
# INA_VERSION_MAJOR/MINOR/PATCH macros of HEADER (host/include/ina.h), and
# fails the configure when one is missing or INA_VERSION_STRING disagrees
# with them. The project's VERSION and the library's SOVERSION come from here.
function(ina_read_version header out)
  file(STRINGS "${header}" lines REGEX "^#define INA_VERSION_(MAJOR|MINOR|PATCH|STRING)[ \t]")
  foreach(part MAJOR MINOR PATCH)
    set(v "")
    foreach(l IN LISTS lines)
      if(l MATCHES "^#define INA_VERSION_${part}[ \t]+([0-9]+)[ \t]*$")
        set(v ${CMAKE_MATCH_1})
      endif()
    endforeach()
    if(v STREQUAL "")
      message(FATAL_ERROR "${header}: no '#define INA_VERSION_${part} <number>'")
    endif()
    set(${part} ${v})
  endforeach()
  set(str "")
  foreach(l IN LISTS lines)
    if(l MATCHES "^#define INA_VERSION_STRING[ \t]+\"([^\"]*)\"")
      set(str ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(NOT str STREQUAL "${MAJOR}.${MINOR}.${PATCH}")
    message(FATAL_ERROR "${header}: INA_VERSION_STRING \"${str}\" is not "
      "INA_VERSION_MAJOR.MINOR.PATCH (${MAJOR}.${MINOR}.${PATCH})")
  endif()
  set(${out} "${MAJOR}.${MINOR}.${PATCH}" PARENT_SCOPE)
endfunction()
