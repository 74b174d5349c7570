/* What libblink_mpi.so needs from libblink.so beyond the public C API: why a call
 * failed, Blink's diagnostics and its settings. Internal (not installed): the one
 * header of the library's insides that mpi_glue includes. Every function here is
 * exported with the blink prefix, like the public API.
 *
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef BLINK_RUNTIME_INTERPOSER_SUPPORT_H
#define BLINK_RUNTIME_INTERPOSER_SUPPORT_H

#include "blink/blink.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the last failing Blink call on this thread failed. */
typedef enum {
  blinkFailedMidCall = 0,   /* data may have moved: the communicator is unusable */
  blinkFailedTogether = 1,  /* every rank failed alike before any data moved */
  blinkFailedMemoryType = 2 /* every rank refused alike: some rank's buffer is not host memory */
} blinkFailureKind_t;
blinkFailureKind_t blinkLastFailureKind(void);

/* Diagnostics through Blink's logger (BLINK_DEBUG): levels 1 WARN, 2 INFO, 3 TRACE. */
int blinkLogEnabled(int level);
void blinkLogWrite(int level, const char* message);
void blinkLogSetRank(int rank);

/* Checks every BLINK_* setting (the message of a bad one via blinkGetLastError). */
blinkResult_t blinkValidateEnvironment(void);
/* The documented default of a BLINK_* setting ("" for none or an unknown name). */
const char* blinkEnvDefault(const char* name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BLINK_RUNTIME_INTERPOSER_SUPPORT_H */
