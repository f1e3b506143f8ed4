# Writes OUT (a header defining FLEETSIM_GIT_SHA: the checkout's commit, "" outside git),
# touching it only when the commit changed, so a build after a commit names the new one.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SRC}"
                OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
file(WRITE "${OUT}.tmp" "#define FLEETSIM_GIT_SHA \"${sha}\"\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
