! Fortran 2008 (`use mpi_f08`): the same checks as collectives_f77.F, with
! handles of derived types and ierror left out of some calls.
#define BLINK_USE_MPI_F08
#define COMM_T type(MPI_Comm)
#define TYPE_T type(MPI_Datatype)
#define OP_T type(MPI_Op)
#include "collectives_check.inc"
