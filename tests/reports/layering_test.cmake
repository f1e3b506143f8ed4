# reports/ formats the records the app layer (sim/app/) returns; it never loads a scenario
# or runs a simulation. Fails naming every line under reports/ that includes the
# simulator's run headers, names its run entry points, or loads a scenario.
#   cmake -DSRC=<source dir> -P tests/reports/layering_test.cmake
if(NOT SRC)
  message(FATAL_ERROR "pass -DSRC=<source dir>")
endif()
set(forbidden
    "#include \"sim/simulation\\.h\""
    "#include \"sim/fleet/fleet_sim\\.h\""
    "run_fleet"
    "FleetSimulation"
    "Simulation sim"
    "run_in_own_process"
    "scenario::load"
    "load_scenario"
    "load_file_with_overrides")
file(GLOB files "${SRC}/reports/*.cpp" "${SRC}/reports/*.h")
if(NOT files)
  message(FATAL_ERROR "no files under ${SRC}/reports")
endif()
set(found "")
foreach(f ${files})
  file(STRINGS "${f}" lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    foreach(pattern ${forbidden})
      if(line MATCHES "${pattern}")
        file(RELATIVE_PATH rel "${SRC}" "${f}")
        string(APPEND found "  ${rel}:${n}: ${line}\n")
        break()
      endif()
    endforeach()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR
          "reports/ must only format result records (loading and running belong in sim/app/):\n"
          "${found}")
endif()
list(LENGTH files count)
message(STATUS "layering: ${count} files under reports/ load and run nothing")
