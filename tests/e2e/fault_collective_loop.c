/* One collective, called in a loop through Blink's C API until it fails: the rank
 * that fault_injection.sh stops or kills is chosen while the others are inside a
 * call. Files it writes into DIR (so that the script learns what each rank saw):
 *   pid.R     this rank's pid, written at start
 *   ready.R   written after the first call succeeded
 *   result.R  "STATUS SECONDS_SINCE_EPOCH MESSAGE" when a call failed (STATUS: the
 *             blinkResult_t number, 5 for blinkTimeout)
 *   ended.R   how the rank ended where it wrote no result (exit, _exit with the calls
 *             that led there, or a signal)
 * After a failure a rank does not finalize MPI (a peer is gone): it lingers until
 * the script ends the job or every rank has written its result (a failure all ranks
 * met together: exiting at once would let mpirun kill a rank still writing), for at
 * most LINGER seconds, then exits 3.
 * Usage: fault_collective_loop DIR allreduce|broadcast|allgather BYTES LINGER */
#include <blink/blink.h>
#include <execinfo.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void writeFile(const char* dir, const char* what, int rank, const char* text) {
  char path[4096];
  char temporary[sizeof path + 8];
  const int length = snprintf(path, sizeof path, "%s/%s.%d", dir, what, rank);
  if (length < 0 || (size_t)length >= sizeof path) {
    fprintf(stderr, "%s: path too long\n", dir);
    exit(2);
  }
  snprintf(temporary, sizeof temporary, "%s.tmp", path);
  FILE* f = fopen(temporary, "w");
  if (f == NULL) {
    perror(temporary);
    exit(2);
  }
  fputs(text, f);
  fclose(f);
  /* rename: the script never reads half a file. */
  if (rename(temporary, path) != 0) {
    perror(path);
    exit(2);
  }
}

static int everyResultWritten(const char* dir, int ranks) {
  char path[4096];
  for (int r = 0; r < ranks; ++r) {
    snprintf(path, sizeof path, "%s/result.%d", dir, r);
    if (access(path, F_OK) != 0) return 0;
  }
  return 1;
}

/* How a rank ended without a result (a survivor that Open MPI ends itself, over ob1,
 * may lose its FATAL line in mpirun's show_help): ended.R, "exit STATUS" from an
 * atexit handler or "signal N" from a handler, written only while no result is. */
static const char* g_dir = NULL;
static int g_rank = -1;
static volatile sig_atomic_t g_result_written = 0;

static void writeEnded(const char* text) {
  char path[4096];
  if (g_dir == NULL || g_result_written) return;
  snprintf(path, sizeof path, "%s/ended.%d", g_dir, g_rank);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  ssize_t ignored = write(fd, text, strlen(text));
  (void)ignored;
  close(fd);
}

/* Open MPI ends a rank whose ob1 send to a dead peer failed through _exit, which runs
 * no atexit handler. Defined here (and exported: -Wl,--export-dynamic-symbol=_exit),
 * this _exit takes the place of libc's for Open MPI's libraries too, so the record says
 * so, with the calls that led there. */
void _exit(int status) {
  char text[64];
  snprintf(text, sizeof text, "_exit %d from:\n", status);
  writeEnded(text);
  if (g_dir != NULL && !g_result_written) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ended.%d", g_dir, g_rank);
    const int fd = open(path, O_WRONLY | O_APPEND);
    if (fd >= 0) {
      void* frames[32];
      backtrace_symbols_fd(frames, backtrace(frames, 32), fd);
      close(fd);
    }
  }
  syscall(SYS_exit_group, status);
  for (;;) {
  }
}

static void onExit(void) {
  writeEnded("exit during a call\n");
}

static void onSignal(int signal_number) {
  char text[32] = "signal ";
  text[7] = (char)('0' + signal_number / 10);
  text[8] = (char)('0' + signal_number % 10);
  text[9] = '\n';
  writeEnded(text);
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static blinkResult_t callOnce(const char* collective, float* send, float* recv, size_t count,
                              blinkComm_t comm, int ranks) {
  if (strcmp(collective, "allreduce") == 0)
    return blinkAllReduce(send, recv, count, blinkFloat32, blinkSum, comm);
  if (strcmp(collective, "broadcast") == 0)
    return blinkBroadcast(send, recv, count, blinkFloat32, 0, comm);
  return blinkAllGather(send, recv, count / (size_t)ranks, blinkFloat32, comm);
}

int main(int argc, char** argv) {
  if (argc != 5 || (strcmp(argv[2], "allreduce") != 0 && strcmp(argv[2], "broadcast") != 0 &&
                    strcmp(argv[2], "allgather") != 0)) {
    fprintf(stderr, "usage: %s DIR allreduce|broadcast|allgather BYTES LINGER\n", argv[0]);
    return 2;
  }
  const char* dir = argv[1];
  const char* collective = argv[2];
  const size_t count = (size_t)strtoull(argv[3], NULL, 10) / sizeof(float);
  const int linger = atoi(argv[4]);
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  char text[8192];
  snprintf(text, sizeof text, "%ld\n", (long)getpid());
  writeFile(dir, "pid", rank, text);
  g_dir = dir;
  g_rank = rank;
  atexit(onExit);
  signal(SIGABRT, onSignal);
  signal(SIGSEGV, onSignal);
  signal(SIGBUS, onSignal);
  signal(SIGTERM, onSignal);

  float* send = malloc(count * sizeof(float));
  float* recv = malloc(count * sizeof(float));
  if (send == NULL || recv == NULL) return 2;
  for (size_t i = 0; i < count; ++i) send[i] = (float)(rank + 1);
  blinkComm_t comm = NULL;
  blinkResult_t rc = blinkCommInitFromMPI(&comm, MPI_COMM_WORLD);
  for (long call = 0; rc == blinkSuccess; ++call) {
    rc = callOnce(collective, send, recv, count, comm, ranks);
    if (rc == blinkSuccess && call == 0) writeFile(dir, "ready", rank, "\n");
  }
  snprintf(text, sizeof text, "%d %.3f %s\n", (int)rc, now(), blinkGetLastError());
  writeFile(dir, "result", rank, text);
  g_result_written = 1;
  fprintf(stderr, "rank %d: %s", rank, text);
  for (int waited = 0; waited < 10 * linger && !everyResultWritten(dir, ranks); ++waited) {
    usleep(100000);
  }
  return 3;
}
