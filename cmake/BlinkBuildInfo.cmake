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

# Configure again when HEAD moves (a commit, a checkout), so that --version names the
# revision built rather than the one configured first. --git-path also finds the
# file of a worktree, whose .git is a file.
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" rev-parse --path-format=absolute --git-path logs/HEAD
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    OUTPUT_VARIABLE _blink_head_log
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET
    RESULT_VARIABLE _blink_head_rc)
  if(_blink_head_rc EQUAL 0 AND EXISTS "${_blink_head_log}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_blink_head_log}")
  endif()
endif()
