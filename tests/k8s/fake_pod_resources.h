// An in-memory PodResourcesApi for the k8s and serve unit tests and the benchmarks: the test
// changes its answer through a shared state; it can fail, answer UNIMPLEMENTED for
// GetAllocatableResources, or block List until released (a slow kubelet).
#ifndef GPUWARDEN_TESTS_K8S_FAKE_POD_RESOURCES_H_
#define GPUWARDEN_TESTS_K8S_FAKE_POD_RESOURCES_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "k8s/pod_resources.h"

namespace gw::k8s::testing {

struct FakeKubelet {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<PodResources> pods;
  Allocatable allocatable;
  std::string fail;  // non-empty: List fails with this text
  bool allocatable_unimplemented = false;
  std::string allocatable_error;  // non-empty: GetAllocatable fails with this text
  bool block = false;             // List waits while true
  bool in_list = false;           // a List call is waiting on `block`
  int list_delay_ms = 0;          // List sleeps this long before answering
  int list_calls = 0, allocatable_calls = 0;
  double last_allocatable_timeout_s = 0;

  void Set(std::vector<PodResources> p) {
    std::lock_guard<std::mutex> lock(mu);
    pods = std::move(p);
  }
  void Fail(std::string text) {
    std::lock_guard<std::mutex> lock(mu);
    fail = std::move(text);
  }
  void Block(bool b) {
    {
      std::lock_guard<std::mutex> lock(mu);
      block = b;
    }
    cv.notify_all();
  }
  // Waits until a List call is blocked inside the fake.
  void WaitInList() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return in_list; });
  }
};

class FakePodResourcesApi : public PodResourcesApi {
 public:
  explicit FakePodResourcesApi(std::shared_ptr<FakeKubelet> kubelet)
      : kubelet_(std::move(kubelet)) {}
  std::string Endpoint() const override { return "unix:///fake/kubelet.sock"; }
  Expected<std::vector<PodResources>> List(double /*timeout_s*/) override {
    std::unique_lock<std::mutex> lock(kubelet_->mu);
    ++kubelet_->list_calls;
    kubelet_->in_list = true;
    kubelet_->cv.notify_all();
    kubelet_->cv.wait(lock, [this] { return !kubelet_->block; });
    kubelet_->in_list = false;
    if (kubelet_->list_delay_ms > 0) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(kubelet_->list_delay_ms));
      lock.lock();
    }
    if (!kubelet_->fail.empty())
      return Error{"pod-resources " + Endpoint() + ": List: UNAVAILABLE: " + kubelet_->fail};
    return kubelet_->pods;
  }
  Expected<Allocatable> GetAllocatable(double timeout_s) override {
    std::lock_guard<std::mutex> lock(kubelet_->mu);
    ++kubelet_->allocatable_calls;
    kubelet_->last_allocatable_timeout_s = timeout_s;
    if (kubelet_->allocatable_unimplemented)
      return Error{"pod-resources " + Endpoint() +
                   ": GetAllocatableResources: UNIMPLEMENTED: unknown method"};
    if (!kubelet_->allocatable_error.empty())
      return Error{"pod-resources " + Endpoint() +
                   ": GetAllocatableResources: " + kubelet_->allocatable_error};
    return kubelet_->allocatable;
  }

 private:
  std::shared_ptr<FakeKubelet> kubelet_;
};

// One pod from its containers' devices, as (container, resource, ids) triples; devices of one
// container are grouped under it.
struct FakeDevices {
  std::string container, resource;
  std::vector<std::string> ids;
};
inline PodResources FakePod(std::string ns, std::string name,
                            const std::vector<FakeDevices>& devices) {
  PodResources pod;
  pod.ns = std::move(ns);
  pod.name = std::move(name);
  for (const FakeDevices& d : devices) {
    ContainerResources* c = nullptr;
    for (auto& existing : pod.containers)
      if (existing.name == d.container) c = &existing;
    if (!c) {
      pod.containers.push_back({d.container, {}});
      c = &pod.containers.back();
    }
    c->devices.push_back({d.resource, d.ids, {0}});
  }
  return pod;
}

}  // namespace gw::k8s::testing

#endif  // GPUWARDEN_TESTS_K8S_FAKE_POD_RESOURCES_H_
