# SPDX-License-Identifier: MIT
# Run by cmake --install (packaging/CMakeLists.txt, install(CODE)): writes
# ina.pc and ina-switch.service for the prefix of this install and installs
# them with /etc/default/ina-switch. The caller sets INA_STAGE (the build's
# stage-1 files), INA_SRC (packaging/), INA_BINDIR_REL, INA_LIBDIR_REL (as
# GNUInstallDirs gave them: relative to the prefix, or absolute) and
# INA_UNIT_DIR_REL. Each install writes into a scratch directory of its own,
# so two installs of one build at once (ctest -j) do not mix their prefixes.
# file(INSTALL) honours DESTDIR (CPack) and records the files in the
# install manifest.
set(INA_PREFIX "${CMAKE_INSTALL_PREFIX}")
foreach(d BINDIR LIBDIR UNIT_DIR)
  if(IS_ABSOLUTE "${INA_${d}_REL}")
    set(INA_${d} "${INA_${d}_REL}")
  else()
    set(INA_${d} "${INA_PREFIX}/${INA_${d}_REL}")
  endif()
endforeach()
# /etc for the system's own prefix, PREFIX/etc for any other.
if(INA_PREFIX STREQUAL "/usr")
  set(INA_SYSCONFDIR /etc)
else()
  set(INA_SYSCONFDIR "${INA_PREFIX}/etc")
endif()
set(INA_DEFAULTS_FILE "${INA_SYSCONFDIR}/default/ina-switch")
string(RANDOM LENGTH 12 tag)
set(scratch "${INA_STAGE}/install-time-${tag}")
configure_file("${INA_STAGE}/ina.pc.stage" "${scratch}/ina.pc" @ONLY)
configure_file("${INA_STAGE}/ina-switch.service.stage" "${scratch}/ina-switch.service" @ONLY)
file(INSTALL DESTINATION "${INA_LIBDIR}/pkgconfig" TYPE FILE FILES "${scratch}/ina.pc")
file(INSTALL DESTINATION "${INA_UNIT_DIR}" TYPE FILE FILES "${scratch}/ina-switch.service")
file(INSTALL DESTINATION "${INA_SYSCONFDIR}/default" TYPE FILE RENAME ina-switch
  FILES "${INA_SRC}/ina-switch.default")
file(REMOVE_RECURSE "${scratch}")
