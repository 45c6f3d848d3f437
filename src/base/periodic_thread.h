// base/periodic_thread.h — a thread that runs one function right away and then again `interval_s`
// after each run ends, until stopped. The pollers of the task layer (squeue, the kubelet) run on
// one each.
//
//   PeriodicThread thread;
//   thread.Start(10.0, [this] { PollOnce(); });
//   ...
//   thread.Stop();   // wakes the wait and joins; a run in progress finishes first
//
// Threading: Start and Stop from the owner (one at a time); the body runs on the thread, never
// under this object's lock. Stop is idempotent and the destructor calls it; an owner whose body
// uses its members must Stop before those members go (call it first in the owner's destructor).
#ifndef GPUWARDEN_BASE_PERIODIC_THREAD_H_
#define GPUWARDEN_BASE_PERIODIC_THREAD_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace gw {

class PeriodicThread {
 public:
  PeriodicThread() = default;
  ~PeriodicThread() { Stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Starts the thread; does nothing when it is already running.
  void Start(double interval_s, std::function<void()> body);
  void Stop();

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gw

#endif  // GPUWARDEN_BASE_PERIODIC_THREAD_H_
