//===- ArrivalBoard.cpp - which ranks reached which collective -----------===//
#include "ArrivalBoard.h"

#include "kiln/runtime/common/Sha256.h"

#include <atomic>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {
namespace {
// The board: its rank count, then per rank 1 + the last sequence number it
// posted (0: nothing yet). Lock-free atomics work across processes.
static_assert(std::atomic<uint64_t>::is_always_lock_free);

std::atomic<uint64_t> *slots(void *mapping) {
  return reinterpret_cast<std::atomic<uint64_t> *>(mapping) + 1;
}
} // namespace

std::unique_ptr<ArrivalBoard> ArrivalBoard::open(std::span<const uint8_t> id, int size) {
  if (size <= 0)
    return nullptr;
  std::string digest = Sha256::hex(Sha256::of(
      std::string_view(reinterpret_cast<const char *>(id.data()), id.size())));
  std::string name = "/kiln-nccl-" + digest.substr(0, 32);
  size_t bytes = sizeof(uint64_t) * (1 + static_cast<size_t>(size));
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0)
    return nullptr;
  struct stat st;
  // Every rank sizes it alike; a board of another size is not ours.
  bool usable = fstat(fd, &st) == 0 &&
                (static_cast<size_t>(st.st_size) == bytes ||
                 (st.st_size == 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0));
  void *mapping = usable ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                         : MAP_FAILED;
  close(fd);
  if (mapping == MAP_FAILED)
    return nullptr;
  auto *header = reinterpret_cast<std::atomic<uint64_t> *>(mapping);
  uint64_t expected = 0;
  // The first rank writes the size; a board of another size is not ours.
  if (!header->compare_exchange_strong(expected, static_cast<uint64_t>(size)) &&
      expected != static_cast<uint64_t>(size)) {
    munmap(mapping, bytes);
    return nullptr;
  }
  return std::unique_ptr<ArrivalBoard>(new ArrivalBoard(std::move(name), mapping, bytes, size));
}

ArrivalBoard::ArrivalBoard(std::string name, void *mapping, size_t bytes, int size)
    : shmName(std::move(name)), mapping(mapping), bytes(bytes), size(size) {}

ArrivalBoard::~ArrivalBoard() {
  munmap(mapping, bytes);
  // Ranks that have it mapped keep it; the name goes with the first rank
  // done with the communicator (a rank joining after that would have failed).
  shm_unlink(shmName.c_str());
}

void ArrivalBoard::post(int rank, uint64_t sequence) {
  if (rank >= 0 && rank < size)
    slots(mapping)[rank].store(sequence + 1, std::memory_order_release);
}

std::string ArrivalBoard::missing(uint64_t sequence, bool joined) const {
  std::string behind, where, unseen;
  for (int r = 0; r < size; ++r) {
    uint64_t posted = slots(mapping)[r].load(std::memory_order_acquire);
    if (posted == 0) {
      unseen += (unseen.empty() ? "" : ", ") + std::to_string(r);
    } else if (posted < sequence + 1) {
      behind += (behind.empty() ? "" : ", ") + std::to_string(r);
      where += (where.empty() ? "" : ", ") + std::string("#") + std::to_string(posted - 1);
    }
  }
  std::string text;
  if (!behind.empty())
    text = "missing rank(s) " + behind + " (last at " + where + ")";
  if (!unseen.empty())
    text += (text.empty() ? "" : "; ") +
            (joined ? "rank(s) " + unseen + " on another host: unknown"
                    : "missing rank(s) " + unseen + " (never seen on this host)");
  return text.empty() ? "every rank on this host arrived" : text;
}

} // namespace kiln
