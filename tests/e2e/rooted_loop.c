/* Many small rooted calls back to back through Blink's C API, then the same calls
 * through PMPI_*, compared bit for bit: the pattern that once stalled streams between
 * nodes (a node leaders' Broadcast whose root ran ahead of the other node; see
 * src/transport/ucx/ucx_transport.hpp). Nothing synchronises the ranks between the
 * Blink calls, so a root may run many calls ahead of the ranks of another node.
 * ROUNDS Broadcasts from rank 0 back to back, then ROUNDS Reduces (sum) to rank 0,
 * ROUNDS Broadcasts from the last rank and ROUNDS Reduces to it, of 8 int32 (32
 * bytes) each. Usage: rooted_loop ROUNDS. Prints "rooted_loop: N calls, W wrong" on rank 0;
 * exits 0 when every result matches. */
#include <blink/blink.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kCount = 8, kCallsPerRound = 4 };

static int32_t input(int round, int call, int rank, int i) {
  return (int32_t)(round * 131 + call * 17 + rank * 7 + i);
}

static void check(blinkResult_t result, const char* what, int rank) {
  if (result == blinkSuccess) return;
  fprintf(stderr, "rooted_loop: rank %d: %s failed: %s\n", rank, what, blinkGetLastError());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? atoi(argv[1]) : 1000;
  const int calls = rounds * kCallsPerRound;
  const int roots[kCallsPerRound] = {0, 0, size - 1, size - 1};
  int32_t* blink = calloc((size_t)calls * kCount, sizeof(int32_t));
  int32_t* reference = calloc((size_t)calls * kCount, sizeof(int32_t));
  if (blink == NULL || reference == NULL) return 2;
  blinkComm_t comm;
  check(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), "blinkCommInitFromMPI", rank);
  /* Broadcast in place (the root's input is its buffer), Reduce out of place. */
  for (int pass = 0; pass < 2; ++pass) {
    int32_t* out = pass == 0 ? blink : reference;
    for (int call = 0; call < kCallsPerRound; ++call) {
      for (int round = 0; round < rounds; ++round) {
        int32_t* result = out + ((size_t)round * kCallsPerRound + (size_t)call) * kCount;
        int32_t mine[kCount];
        for (int i = 0; i < kCount; ++i) mine[i] = input(round, call, rank, i);
        const int root = roots[call];
        if (call % 2 == 0) {
          if (rank == root) memcpy(result, mine, sizeof mine);
          if (pass == 0) {
            check(blinkBroadcast(result, result, kCount, blinkInt32, root, comm), "blinkBroadcast",
                  rank);
          } else {
            PMPI_Bcast(result, kCount, MPI_INT32_T, root, MPI_COMM_WORLD);
          }
        } else if (pass == 0) {
          check(blinkReduce(mine, result, kCount, blinkInt32, blinkSum, root, comm), "blinkReduce",
                rank);
        } else {
          PMPI_Reduce(mine, result, kCount, MPI_INT32_T, MPI_SUM, root, MPI_COMM_WORLD);
        }
      }
    }
  }
  long wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int call = 0; call < kCallsPerRound; ++call) {
      if (call % 2 == 1 && rank != roots[call]) continue; /* Reduce: the root's result only */
      const size_t at = ((size_t)round * kCallsPerRound + (size_t)call) * kCount;
      if (memcmp(blink + at, reference + at, kCount * sizeof(int32_t)) != 0) ++wrong;
    }
  }
  long all_wrong = 0;
  PMPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("rooted_loop: %d calls, %ld wrong\n", calls, all_wrong);
  check(blinkCommDestroy(comm), "blinkCommDestroy", rank);
  free(blink);
  free(reference);
  PMPI_Bcast(&all_wrong, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
