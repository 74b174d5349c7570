// Round trips between two ranks (on two hosts: scripts/emulate-hosts.sh run --ranks 1,1)
// through Open MPI's point-to-point and through one plain TCP connection between the
// same two processes, alternated trip by trip (a barrier before each), so both see the
// same load: what a message costs in MPI's matching, queueing and event loop over what
// the kernel's TCP costs (why Blink has a `sockets` transport for the node leaders'
// rounds: src/transport/socket/socket_transport.hpp). The TCP side busy-polls with
// non-blocking recv(2), as Open MPI's progress does.
//
// Usage: tcp_round_trip [--trips N] SIZE...   (exactly 2 ranks)
// Prints CSV: bytes,trips,mpi_median_us,mpi_min_us,tcp_median_us,tcp_min_us
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int ascending(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void fail(const char* what) {
  fprintf(stderr, "tcp_round_trip: %s: %s\n", what, strerror(errno));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void receiveAll(int fd, char* data, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t r = recv(fd, data + got, n - got, MSG_DONTWAIT);
    if (r > 0) {
      got += (size_t)r;
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      fail("recv");
    }
  }
}

static void sendAll(int fd, const char* data, size_t n) {
  for (size_t sent = 0; sent < n;) {
    const ssize_t r = send(fd, data + sent, n - sent, MSG_NOSIGNAL);
    if (r > 0) {
      sent += (size_t)r;
    } else if (r < 0 && errno != EAGAIN && errno != EINTR) {
      fail("send");
    }
  }
}

// Rank 1 listens on its first IPv4 address that is not loopback; rank 0 dials it.
static int connectPair(int rank) {
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  int listener = -1;
  if (rank == 1) {
    struct ifaddrs* list = NULL;
    if (getifaddrs(&list) != 0) fail("getifaddrs");
    for (struct ifaddrs* i = list; i != NULL; i = i->ifa_next) {
      if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
          strncmp(i->ifa_name, "lo", 2) != 0) {
        address = *(struct sockaddr_in*)i->ifa_addr;
        break;
      }
    }
    freeifaddrs(list);
    listener = socket(AF_INET, SOCK_STREAM, 0);
    socklen_t length = sizeof address;
    if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof address) != 0 ||
        listen(listener, 1) != 0 ||
        getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
      fail("listening");
    }
  }
  MPI_Bcast(&address, sizeof address, MPI_BYTE, 1, MPI_COMM_WORLD);
  int fd = -1;
  if (rank == 0) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr*)&address, sizeof address) != 0) fail("connect");
  } else {
    fd = accept(listener, NULL, NULL);
    if (fd < 0) fail("accept");
    close(listener);
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, trips = 2000, first_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    if (rank == 0) printf("Usage: mpirun -np 2 tcp_round_trip [--trips N] SIZE...\n");
    MPI_Finalize();
    return 0;
  }
  if (argc > 2 && strcmp(argv[1], "--trips") == 0) {
    trips = atoi(argv[2]);
    first_size = 3;
  }
  if (size != 2 || trips < 1 || first_size >= argc) {
    if (rank == 0) fprintf(stderr, "tcp_round_trip: 2 ranks, --trips N >= 1 and a SIZE\n");
    MPI_Finalize();
    return 2;
  }
  const int fd = connectPair(rank);
  double* times[2] = {malloc(sizeof(double) * (size_t)trips),
                      malloc(sizeof(double) * (size_t)trips)};
  if (rank == 0) printf("bytes,trips,mpi_median_us,mpi_min_us,tcp_median_us,tcp_min_us\n");
  for (int s = first_size; s < argc; ++s) {
    const int bytes = atoi(argv[s]);
    char* buffer = calloc((size_t)bytes + 1, 1);
    for (int t = -10; t < trips; ++t) {
      for (int way = 0; way < 2; ++way) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        if (way == 0 && rank == 0) {
          MPI_Send(buffer, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
          MPI_Recv(buffer, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (way == 0) {
          MPI_Recv(buffer, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(buffer, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        } else if (rank == 0) {
          sendAll(fd, buffer, (size_t)bytes);
          receiveAll(fd, buffer, (size_t)bytes);
        } else {
          receiveAll(fd, buffer, (size_t)bytes);
          sendAll(fd, buffer, (size_t)bytes);
        }
        if (t >= 0) times[way][t] = (MPI_Wtime() - start) * 1e6;
      }
    }
    if (rank == 0) {
      qsort(times[0], (size_t)trips, sizeof(double), ascending);
      qsort(times[1], (size_t)trips, sizeof(double), ascending);
      printf("%d,%d,%.2f,%.2f,%.2f,%.2f\n", bytes, trips, times[0][trips / 2], times[0][0],
             times[1][trips / 2], times[1][0]);
    }
    free(buffer);
  }
  close(fd);
  free(times[0]);
  free(times[1]);
  MPI_Finalize();
  return 0;
}
