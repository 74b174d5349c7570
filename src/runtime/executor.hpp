// The Executor runs one rank's steps of a Plan on real bytes. A plan is compiled
// once per rank into a Program (dependency counts, the steps that wait on each
// step, and one lane per (peer, channel, direction) holding that lane's steps in
// list order); each run then drives every lane without blocking: a lane's head
// step moves as soon as its dependencies are done, so all trees and links stay
// busy at once, and a lane whose peer stops answering ends the run with
// blinkTimeout naming that peer.
//
// Transports have weaker timing than the IR's "a Send reads its range when it
// starts": a stream may read the source while it pushes. So a step that writes a
// range also waits until earlier Sends of an overlapping range have been pushed.
//
// On device memory (RunOptions::device) the same schedule runs with the bytes on a
// GPU: Copy steps are queued on the device's stream and complete when their event
// has passed, receive steps reduce on the device chunk by chunk
// (transport::DeviceRecvStream), and a step counts as done only once its device
// work has run, so the host-side dependency rules above order the device work too;
// the host thread only polls events, it never waits for the whole device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/combine.hpp"
#include "plan/plan.hpp"
#include "transport/cuda/device.hpp"
#include "transport/transport.hpp"

namespace blink::runtime {

using transport::PieceSink;
using transport::RecvStream;
using transport::SendStream;
using transport::StreamKey;
using transport::Transport;

struct Lane {
  bool is_send = false;
  int peer = -1;  // a rank of the Blink communicator
  int channel = 0;
  Transport* transport = nullptr;
  std::vector<int> steps;  // in list order
};

struct Program {
  int plan_rank = -1;
  int comm_rank = -1;  // this rank in the Blink communicator (for messages)
  std::vector<plan::Step> steps;
  std::vector<int> dep_count;
  std::vector<std::vector<int>> dependents;
  std::vector<int> lane_of_step;  // -1 for Copy
  std::vector<Lane> lanes;
  // For running with a separate input buffer (out-of-place, without first copying
  // the input into the working buffer): whether each step reads bytes no earlier
  // step wrote (so still the input's), and the ranges no step writes (copied from
  // the input at the end). input_capable is false when some step reads a range that
  // is partly written and partly not; such a plan needs the input copied first.
  std::vector<std::uint8_t> reads_input;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> never_written;  // offset, bytes
  bool input_capable = true;
};

// Picks the transport (and the communicator rank) for a plan rank.
struct PeerRoute {
  int comm_rank = -1;
  Transport* transport = nullptr;
};

// Compiles plan rank `plan_rank`'s steps; `route_of` maps every other plan rank.
Program compileProgram(const plan::Plan& plan, int plan_rank,
                       const std::function<PeerRoute(int plan_rank)>& route_of);

// The keys of the streams `program` needs, per transport, for Transport::ensureStreams.
struct StreamNeeds {
  std::vector<StreamKey> sends, recvs;
};
StreamNeeds streamNeeds(const Program& program, const Transport* transport);

// What a run on device memory needs: the device, a stream of its own for Copy
// steps, a pool of events that grows as needed (kept between runs: events are made
// once), and the reduction (receive steps reduce on the device, not via Combine).
struct DeviceRun {
  device::Device* device = nullptr;
  device::Device::Stream stream = -1;
  std::vector<device::Device::Event>* events = nullptr;
  Reduction reduction;
};

struct RunOptions {
  double timeout_seconds = 300.0;
  std::string what;  // e.g. "allreduce of 4096 bytes", for error messages
  // Not null: `buffer` and `input` are memory of this device, and every stream of
  // the program is a device stream.
  const DeviceRun* device = nullptr;
};

// Runs `program` on `buffer` (the plan's working buffer). With `input` (requires
// program.input_capable), the working buffer starts undefined and the input is
// read from `input` instead, which has the working buffer's layout. Throws
// blink::Error(blinkTimeout) naming the peers it waited for when nothing moves for
// the timeout; the streams are then unusable (the communicator must be destroyed).
void execute(const Program& program, std::byte* buffer, const std::byte* input,
             const Combine& combine, const RunOptions& options);

}  // namespace blink::runtime
