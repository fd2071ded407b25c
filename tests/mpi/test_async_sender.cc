// AsyncSender keeps every buffer until MPI is done with it: messages too
// large to go eagerly stay in flight while the receiver is not yet
// receiving, progress() runs over them (with completed sends among them, so
// the survivors are compacted), the freed memory is reused, and the receiver
// still gets every byte as sent.
//
// Usage: test_async_sender, under mpiexec with 2 ranks. All ranks agree on
// the exit code.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "mpi/mpi_test.h"
#include "transport/mpi.h"

using namespace msd;
using test::fail;

namespace {

constexpr int kMessages = 80;  // past AsyncSender's 64 in flight, so send() itself compacts too
constexpr size_t kLarge = 64 << 10;  // above shared memory's eager limit, below malloc's mmap threshold

uint8_t pattern(int message, size_t i) { return static_cast<uint8_t>(message * 37 + i * 11 + 1); }

// Even messages are small (they complete at once, eagerly), odd ones large
// (they wait for the receiver): progress() keeps the large ones at the front.
size_t size_of(int message) { return message % 2 ? kLarge : 16; }

void send_all(MPI_Comm comm) {
  AsyncSender out(comm);
  for (int m = 0; m < kMessages; ++m) {
    std::vector<uint8_t> bytes(size_of(m));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = pattern(m, i);
    out.send(1, 100 + m, std::move(bytes), "sending a test message");
    out.progress();
  }
  if (out.in_flight() == 0) fail("every large send completed before the receiver received: the test proves nothing");
  // Reuse whatever memory was freed: a buffer freed too early now holds this.
  std::vector<std::vector<uint8_t>> noise;
  for (int k = 0; k < kMessages; ++k) noise.emplace_back(kLarge, 0xEE);
  MPI_Barrier(comm);
  out.drain();
}

void receive_all(MPI_Comm comm) {
  MPI_Barrier(comm);  // only now does the receiver take the messages
  for (int m = 0; m < kMessages; ++m) {
    std::vector<uint8_t> bytes(size_of(m));
    MPI_Recv(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, 100 + m, comm, MPI_STATUS_IGNORE);
    size_t wrong = 0;
    for (size_t i = 0; i < bytes.size(); ++i) wrong += bytes[i] != pattern(m, i);
    if (wrong) fail("message ", m, " (", bytes.size(), " bytes) arrived with ", wrong, " wrong bytes");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fail("run with 2 ranks, not ", size);
  } else if (rank == 0) {
    send_all(MPI_COMM_WORLD);
  } else {
    receive_all(MPI_COMM_WORLD);
  }
  return test::finish("async_sender");
}
