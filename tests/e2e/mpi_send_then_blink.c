/* A Blink call while this rank still owes MPI a message: the pattern that stalled
 * Reduce.EveryRootAndOp over UCX across hosts (README, "Between nodes"). Open MPI
 * moves a message between hosts (TCP) only inside MPI calls of the sender: the rest
 * of a large MPI_Isend after the receiver's answer (rendezvous), or bytes a full
 * socket did not take. Rank 1 starts an MPI_Isend of 1 MiB to rank 0 and, before
 * waiting for it, calls blinkAllReduce; rank 0 receives that message (MPI_Recv) and
 * only then calls blinkAllReduce. With MPI as the interposer's users call it, this is
 * MPI_Isend; MPI_Allreduce; MPI_Wait against MPI_Recv; MPI_Allreduce: a correct MPI
 * program. A Blink wait that never lets MPI progress leaves rank 0 in MPI_Recv and
 * rank 1 waiting for it until BLINK_TIMEOUT_S, every time; one that does completes.
 * Usage: mpi_send_then_blink ROUNDS. Prints "mpi_send_then_blink: N rounds, W wrong" on
 * rank 0; exits 0 when every result is right. Needs 2 or more ranks; ranks other
 * than 0 and 1 take part in the AllReduces only. */
#include <blink/blink.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { kAllReduceCount = 16384, kMessageCount = 1 << 18 }; /* 64 KiB, 1 MiB of int32 */

static void check(blinkResult_t result, const char* what, int rank) {
  if (result == blinkSuccess) return;
  fprintf(stderr, "mpi_send_then_blink: rank %d: %s failed: %s\n", rank, what, blinkGetLastError());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static int32_t value(int round, int rank, int i) {
  return (int32_t)(round * 1000 + rank * 10 + i % 7);
}

/* One AllReduce (sum) of kAllReduceCount int32; returns how many elements are wrong. */
static long allReduce(blinkComm_t comm, int round, int rank, int size, int32_t* in, int32_t* out) {
  for (int i = 0; i < kAllReduceCount; ++i) in[i] = value(round, rank, i);
  check(blinkAllReduce(in, out, kAllReduceCount, blinkInt32, blinkSum, comm), "blinkAllReduce",
        rank);
  long wrong = 0;
  for (int i = 0; i < kAllReduceCount; ++i) {
    int32_t expected = 0;
    for (int r = 0; r < size; ++r) expected += value(round, r, i);
    if (out[i] != expected) ++wrong;
  }
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "mpi_send_then_blink: needs 2 or more ranks\n");
    MPI_Finalize();
    return 2;
  }
  const int rounds = argc > 1 ? atoi(argv[1]) : 20;
  int32_t* in = malloc(kAllReduceCount * sizeof(int32_t));
  int32_t* out = malloc(kAllReduceCount * sizeof(int32_t));
  int32_t* message = malloc((size_t)kMessageCount * sizeof(int32_t));
  if (in == NULL || out == NULL || message == NULL) return 2;
  blinkComm_t comm;
  check(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), "blinkCommInitFromMPI", rank);
  /* The first call of a size agrees on its plan over MPI, which lets MPI progress by
   * itself: the rounds after it are the calls that must. */
  long wrong = allReduce(comm, -1, rank, size, in, out);
  long message_wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    if (rank == 1) {
      for (int i = 0; i < kMessageCount; ++i) message[i] = value(round, 1, i);
      MPI_Request request;
      MPI_Isend(message, kMessageCount, MPI_INT32_T, 0, round, MPI_COMM_WORLD, &request);
      wrong += allReduce(comm, round, rank, size, in, out);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else {
      if (rank == 0) {
        MPI_Recv(message, kMessageCount, MPI_INT32_T, 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < kMessageCount; ++i) message_wrong += message[i] != value(round, 1, i);
      }
      wrong += allReduce(comm, round, rank, size, in, out);
    }
  }
  long mine = wrong + message_wrong, all_wrong = 0;
  MPI_Reduce(&mine, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_send_then_blink: %d rounds, %ld wrong\n", rounds, all_wrong);
  check(blinkCommDestroy(comm), "blinkCommDestroy", rank);
  free(in);
  free(out);
  free(message);
  MPI_Bcast(&all_wrong, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
