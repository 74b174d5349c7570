// The one exception type Blink throws internally. It carries the C API status so
// that the boundary (src/runtime/c_api.cpp, mpi_glue) can translate without guessing.
#pragma once

#include <stdexcept>
#include <string>

#include "blink/blink.h"

namespace blink {

class Error : public std::runtime_error {
 public:
  Error(blinkResult_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}

  blinkResult_t status() const noexcept { return status_; }

 private:
  blinkResult_t status_;
};

// A failure that every rank of a communicator raised together, before any data
// of the call moved (plan building, stream set-up). The caller may recover, e.g.
// the interposer hands the call to the MPI library on every rank alike.
class CollectiveError : public Error {
 public:
  using Error::Error;
  // Why the ranks stopped together (see blinkFailureKind_t in interposer_support.h).
  virtual int kind() const noexcept { return 1; }
};

// Remembers `message` as this thread's last error and returns `status`; `kind` says
// whether every rank failed together before data moved (1, 2) or not (0).
blinkResult_t setLastError(blinkResult_t status, const std::string& message, int kind = 0);
int lastFailureKind();

// Runs `body` and turns any exception into a status plus a last-error message.
template <typename Body>
blinkResult_t guardCApi(Body&& body) noexcept {
  try {
    body();
    return blinkSuccess;
  } catch (const CollectiveError& e) {
    return setLastError(e.status(), e.what(), e.kind());
  } catch (const Error& e) {
    return setLastError(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return setLastError(blinkSystemError, "out of memory");
  } catch (const std::exception& e) {
    return setLastError(blinkInternalError, e.what());
  } catch (...) {
    return setLastError(blinkInternalError, "unknown exception");
  }
}

}  // namespace blink
