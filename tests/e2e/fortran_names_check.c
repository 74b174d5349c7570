/* libblink_mpi.so's Fortran entry points, called as a Fortran compiler would
 * (every argument by reference, handles as MPI_Fint) from a C program linked
 * with libblink_mpi.so and not with Open MPI's Fortran libraries, so only Blink's
 * definitions can answer. Checks every spelling of the names (mpi_x, mpi_x_,
 * mpi_x__, MPI_X, mpi_x_f08_), an absent ierror, and the MPI_IN_PLACE and
 * MPI_BOTTOM common blocks under all four spellings: this program defines the
 * three that Open MPI built with gfortran lacks, as a build with another Fortran
 * compiler would. Exits 1 on any wrong result. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* The sentinels of other Fortran compilers' builds (libmpi.so has the fourth). */
int mpi_fortran_in_place, mpi_fortran_in_place__, MPI_FORTRAN_IN_PLACE;
int mpi_fortran_bottom, mpi_fortran_bottom__, MPI_FORTRAN_BOTTOM;
extern int mpi_fortran_in_place_, mpi_fortran_bottom_;

typedef void AllreduceFn(void*, void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                         const MPI_Fint*, MPI_Fint*);
typedef void BcastFn(void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                     MPI_Fint*);
AllreduceFn mpi_allreduce, mpi_allreduce_, mpi_allreduce__, MPI_ALLREDUCE, mpi_allreduce_f08_;
BcastFn mpi_bcast, mpi_bcast_, mpi_bcast__, MPI_BCAST, mpi_bcast_f08_;

enum { kCount = 1 << 18 }; /* 1 MiB of float: Blink takes it */

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const MPI_Fint comm = MPI_Comm_c2f(MPI_COMM_WORLD), real = MPI_Type_c2f(MPI_FLOAT),
                 sum = MPI_Op_c2f(MPI_SUM), count = kCount, one = 1, root = size - 1;
  float* buf = malloc(sizeof(float) * kCount);
  float* in = malloc(sizeof(float) * kCount);
  AllreduceFn* const allreduces[] = {mpi_allreduce, mpi_allreduce_, mpi_allreduce__, MPI_ALLREDUCE,
                                     mpi_allreduce_f08_};
  BcastFn* const bcasts[] = {mpi_bcast, mpi_bcast_, mpi_bcast__, MPI_BCAST, mpi_bcast_f08_};
  void* const in_places[] = {&mpi_fortran_in_place, &mpi_fortran_in_place_, &mpi_fortran_in_place__,
                             &MPI_FORTRAN_IN_PLACE};
  void* const bottoms[] = {&mpi_fortran_bottom, &mpi_fortran_bottom_, &mpi_fortran_bottom__,
                           &MPI_FORTRAN_BOTTOM};
  long wrong = 0;
  for (int name = 0; name < 5; ++name) {
    for (int spelling = 0; spelling < 4; ++spelling) {
      /* Allreduce in place, and not (ierror absent on the f08 name). */
      for (int i = 0; i < kCount; ++i) buf[i] = (float)(rank + i % 5);
      MPI_Fint ierror = -1;
      allreduces[name](in_places[spelling], buf, &count, &real, &sum, &comm, &ierror);
      wrong += ierror != MPI_SUCCESS;
      for (int i = 0; i < kCount; ++i) {
        wrong += buf[i] != (float)(size * (size - 1) / 2 + size * (i % 5));
        in[i] = (float)i;
      }
      allreduces[name](in, buf, &count, &real, &sum, &comm, name == 4 ? NULL : &ierror);
      for (int i = 0; i < kCount; ++i) wrong += buf[i] != (float)(size * i);

      /* Bcast from MPI_BOTTOM: a type that holds buf's absolute address. */
      MPI_Aint address = 0;
      MPI_Get_address(buf, &address);
      int block = kCount;
      MPI_Datatype absolute;
      MPI_Type_create_hindexed(1, &block, &address, MPI_FLOAT, &absolute);
      MPI_Type_commit(&absolute);
      const MPI_Fint type = MPI_Type_c2f(absolute);
      for (int i = 0; i < kCount; ++i) buf[i] = rank == root ? (float)(3 * i) : -1.0f;
      ierror = -1;
      bcasts[name](bottoms[spelling], &one, &type, &root, &comm, &ierror);
      wrong += ierror != MPI_SUCCESS;
      for (int i = 0; i < kCount; ++i) wrong += buf[i] != (float)(3 * i);
      MPI_Type_free(&absolute);
    }
  }
  long all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("fortran_names_check: %ld wrong\n", all);
  free(buf);
  free(in);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
