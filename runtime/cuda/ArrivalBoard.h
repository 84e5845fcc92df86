//===- ArrivalBoard.h - which ranks reached which collective ----*- C++ -*-===//
//
// NCCL does not say which rank is missing when a collective hangs. Each
// rank of a communicator posts, before issuing a collective, its sequence
// number on a board in POSIX shared memory named from the communicator's
// unique id; a rank whose collective times out reads the board: ranks of
// this host that posted less are missing. Ranks on other hosts never post
// here, so they are reported as unknown, never guessed.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_ARRIVALBOARD_H
#define KILN_RUNTIME_CUDA_ARRIVALBOARD_H

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace kiln {

class ArrivalBoard {
public:
  /// The board of the communicator `id` of `size` ranks; null where shared
  /// memory cannot be had (then missing ranks are unknown).
  static std::unique_ptr<ArrivalBoard> open(std::span<const uint8_t> id, int size);
  ~ArrivalBoard();

  /// `rank` reached `sequence` (0: init).
  void post(int rank, uint64_t sequence);
  /// Who has not reached `sequence`, in words: "rank(s) 1, 3 (at #4, #4)"
  /// for ranks seen on this host; ranks never seen are "not seen on this
  /// host" before `joined` (init completed) and "on another host:
  /// unknown" after.
  std::string missing(uint64_t sequence, bool joined) const;
  const std::string &name() const { return shmName; }

private:
  ArrivalBoard(std::string name, void *mapping, size_t bytes, int size);
  std::string shmName;
  void *mapping;
  size_t bytes;
  int size;
};

} // namespace kiln

#endif
