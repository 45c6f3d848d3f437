// top/poller.h — the collection side of `gpuwarden top`: a thread that reads a Source every
// refresh interval and publishes immutable frames to the UI.
//
//   Poller poller(&source, 1.0);
//   poller.Start();
//   poll({poller.wake_fd(), POLLIN}, ...);   // readable when a new frame is out
//   poller.DrainWake();
//   auto frame = poller.Latest();             // never blocks on NVML or the network
//
// A failed read (agent unreachable) publishes the previous frame with its error line; the next
// interval tries again. Threading: Latest(), wake_fd() and DrainWake() from any thread; Start and
// Stop from the owner. Stop waits for a read in progress (bounded by the source's timeouts).
#ifndef GPUWARDEN_TOP_POLLER_H_
#define GPUWARDEN_TOP_POLLER_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "top/frame.h"
#include "top/sources.h"

namespace gw::top {

class Poller {
 public:
  // `source` must outlive the poller.
  Poller(Source* source, double interval_s);
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // One read on the caller's thread (for --once); also publishes it.
  std::shared_ptr<const Frame> PollNow();

  void Start();
  void Stop();

  std::shared_ptr<const Frame> Latest() const;  // null before the first poll
  int wake_fd() const { return wake_[0]; }
  void DrainWake();

 private:
  void Loop();
  void Publish(std::shared_ptr<const Frame> frame);

  Source* source_;
  double interval_s_;
  FrameBuilder builder_;
  int wake_[2] = {-1, -1};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::shared_ptr<const Frame> latest_;
  std::thread thread_;
};

}  // namespace gw::top

#endif  // GPUWARDEN_TOP_POLLER_H_
