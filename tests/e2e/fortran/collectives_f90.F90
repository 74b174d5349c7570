! Fortran 90 (`use mpi`): the same checks as collectives_f77.F.
#define BLINK_USE_MPI
#define COMM_T integer
#define TYPE_T integer
#define OP_T integer
#include "collectives_check.inc"
