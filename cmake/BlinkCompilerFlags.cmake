# Warnings, warnings-as-errors and sanitizers, applied to every Blink target
# through the interface library blink_build_flags (never to consumers).
add_library(blink_build_flags INTERFACE)
target_compile_options(blink_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<AND:$<COMPILE_LANGUAGE:CXX,C>,$<BOOL:${BLINK_WERROR}>>:-Werror>)

if(BLINK_SANITIZE)
  if(BLINK_SANITIZE STREQUAL "address")
    set(_blink_san_flags -fsanitize=address -fno-omit-frame-pointer)
  elseif(BLINK_SANITIZE STREQUAL "undefined")
    set(_blink_san_flags -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  elseif(BLINK_SANITIZE STREQUAL "thread")
    set(_blink_san_flags -fsanitize=thread)
  else()
    message(FATAL_ERROR "BLINK_SANITIZE must be address, undefined or thread, not '${BLINK_SANITIZE}'")
  endif()
  # Applied globally so GoogleTest, tools and the MPI glue agree on the runtime.
  # One generator expression per flag: a list inside $<...> would be split apart.
  foreach(_flag IN LISTS _blink_san_flags)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:${_flag}>)
  endforeach()
  add_link_options(${_blink_san_flags})
  # GCC's flow analysis misfires on Boost's optional inside instrumented code
  # ("used uninitialized"); those stay warnings there rather than errors.
  target_compile_options(blink_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wno-error=uninitialized -Wno-error=maybe-uninitialized>)
endif()
