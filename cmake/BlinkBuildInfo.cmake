# Records the git revision at configure time for blinkGetBuildInfo(). A build from
# a tarball (no .git) reports "unknown".
find_package(Git QUIET)
set(BLINK_GIT_HASH "unknown")
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    OUTPUT_VARIABLE _blink_git_hash
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET
    RESULT_VARIABLE _blink_git_rc)
  if(_blink_git_rc EQUAL 0 AND _blink_git_hash)
    set(BLINK_GIT_HASH "${_blink_git_hash}")
  endif()
endif()
