/* MPI_THREAD_MULTIPLE as Horovod uses it: several threads, each with its own
 * duplicate of MPI_COMM_WORLD, run Allreduce and Bcast at the same time and check
 * every result. Rank 0 prints one summary line; exit status 1 on a wrong element,
 * 2 when the MPI library does not provide MPI_THREAD_MULTIPLE. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { kThreads = 3, kIters = 8, kCount = 50021 };

struct job {
  MPI_Comm comm;
  int id;
  int wrong;
};

static void* run(void* arg) {
  struct job* j = (struct job*)arg;
  int rank, size;
  MPI_Comm_rank(j->comm, &rank);
  MPI_Comm_size(j->comm, &size);
  float* in = (float*)malloc(sizeof(float) * kCount);
  float* out = (float*)malloc(sizeof(float) * kCount);
  for (int it = 0; it < kIters; ++it) {
    for (int i = 0; i < kCount; ++i) in[i] = (float)((i + rank + j->id + it) % 11);
    MPI_Allreduce(in, out, kCount, MPI_FLOAT, MPI_SUM, j->comm);
    for (int i = 0; i < kCount; ++i) {
      float want = 0;
      for (int r = 0; r < size; ++r) want += (float)((i + r + j->id + it) % 11);
      j->wrong += out[i] != want;
    }
    int root = (j->id + it) % size;
    for (int i = 0; i < kCount; ++i) out[i] = rank == root ? (float)(i % 13 + j->id) : -1.0f;
    MPI_Bcast(out, kCount, MPI_FLOAT, root, j->comm);
    for (int i = 0; i < kCount; ++i) j->wrong += out[i] != (float)(i % 13 + j->id);
  }
  free(in);
  free(out);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("MPI_THREAD_MULTIPLE not provided\n");
    MPI_Finalize();
    return 2;
  }
  struct job jobs[kThreads];
  pthread_t threads[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
    jobs[t].id = t;
    jobs[t].wrong = 0;
  }
  for (int t = 0; t < kThreads; ++t) pthread_create(&threads[t], NULL, run, &jobs[t]);
  int wrong = 0;
  for (int t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    wrong += jobs[t].wrong;
    MPI_Comm_free(&jobs[t].comm);
  }
  int total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%d threads x %d iterations: %d wrong\n", kThreads, kIters, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
