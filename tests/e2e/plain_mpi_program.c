/* An MPI program that knows nothing of Blink: it checks its own results and
 * prints one line per rank on stdout, so runs with and without the interposer
 * can be compared byte for byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  long local[3] = {rank, 1, (long)rank * rank};
  long sum[3] = {0, 0, 0};
  MPI_Allreduce(local, sum, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  long want0 = (long)size * (size - 1) / 2;
  long want2 = (long)(size - 1) * size * (2 * size - 1) / 6;
  int ok = sum[0] == want0 && sum[1] == size && sum[2] == want2;

  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  /* Rank 0 prints every rank's line: output forwarded by mpirun from several
   * ranks has no defined order, and runs are compared byte for byte. */
  long mine[4] = {sum[0], sum[1], sum[2], ok};
  long* all = rank == 0 ? malloc(sizeof(long) * 4 * (size_t)size) : NULL;
  MPI_Gather(mine, 4, MPI_LONG, all, 4, MPI_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      printf("rank %d of %d: sums %ld %ld %ld %s\n", r, size, all[4 * r], all[4 * r + 1],
             all[4 * r + 2], all[4 * r + 3] ? "ok" : "WRONG");
    }
    free(all);
  }
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
