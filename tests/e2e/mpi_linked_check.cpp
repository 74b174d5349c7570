// The same checks as mpi_collectives_check.c, as a C++ program linked with
// -lblink_mpi ahead of the MPI library: interposition by link order, no LD_PRELOAD.
#include "mpi_collectives_check.c"
