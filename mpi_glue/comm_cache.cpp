#include "comm_cache.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

namespace blink::glue {
namespace {

struct Entry {
  std::optional<BlinkComm> comm;  // empty: Blink is unavailable here
  std::string unavailable;        // why, when comm is empty
  ~Entry() {
    if (comm) blinkCommDestroy(comm->handle());
  }
};

std::mutex entries_mutex;

// What this thread looked up last, valid while the generation is unchanged.
std::atomic<std::uint64_t> generation{1};
// Constant-initialised and initial-exec (the library is preloaded or linked, never
// dlopened late), so that reaching it costs no call.
struct LastUsed {
  MPI_Comm comm{};
  std::uint64_t generation = 0;
  Entry* entry = nullptr;
};
[[gnu::tls_model("initial-exec")]] thread_local constinit LastUsed last_used;

BlinkComm* blinkOf(Entry* entry) {
  return entry->comm ? &*entry->comm : nullptr;
}

std::set<Entry*>& liveEntries() {
  static auto* entries = new std::set<Entry*>();  // never destroyed: used at exit
  return *entries;
}

int deleteEntry(MPI_Comm, int, void* value, void*) {
  auto* entry = static_cast<Entry*>(value);
  {
    std::lock_guard lock(entries_mutex);
    liveEntries().erase(entry);
    generation.fetch_add(1, std::memory_order_acq_rel);
  }
  delete entry;
  return MPI_SUCCESS;
}

int keyval() {
  static int key = [] {
    int k = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, deleteEntry, &k, nullptr) != MPI_SUCCESS) {
      throw Error(blinkSystemError, "MPI_Comm_create_keyval failed");
    }
    return k;
  }();
  return key;
}

}  // namespace

bool isLastUsed(MPI_Comm comm) {
  return last_used.entry != nullptr && last_used.comm == comm &&
         last_used.generation == generation.load(std::memory_order_acquire);
}

BlinkComm* communicatorFor(MPI_Comm comm) {
  if (isLastUsed(comm)) return blinkOf(last_used.entry);
  const std::uint64_t now = generation.load(std::memory_order_acquire);
  const int key = keyval();
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, key, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) {
    auto* entry = static_cast<Entry*>(value);
    last_used = {comm, now, entry};
    return blinkOf(entry);
  }
  auto entry = std::make_unique<Entry>();
  blinkComm_t made = nullptr;
  if (blinkCommInitFromMPI(&made, comm) == blinkSuccess) {
    entry->comm.emplace(made);
  } else {
    // Communicator creation agrees across ranks: every rank lands here together.
    entry->unavailable = blinkGetLastError();
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if (rank == 0) {
      log::write(log::Level::Warn,
                 "Blink is unavailable on this communicator, which stays on "
                 "the MPI library: " +
                     entry->unavailable);
    }
  }
  Entry* raw = entry.release();
  {
    std::lock_guard lock(entries_mutex);
    liveEntries().insert(raw);
  }
  PMPI_Comm_set_attr(comm, key, raw);
  last_used = {comm, now, raw};
  return blinkOf(raw);
}

void releaseAll() {
  std::lock_guard lock(entries_mutex);
  generation.fetch_add(1, std::memory_order_acq_rel);
  for (Entry* e : liveEntries()) {
    if (e->comm) blinkCommDestroy(e->comm->handle());
    e->comm.reset();
  }
}

}  // namespace blink::glue
