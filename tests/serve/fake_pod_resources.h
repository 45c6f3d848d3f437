// A PodResourcesApi for the serve tests: answers what the test put in its shared state (the pods,
// the allocatable devices), or fails while `fail` is set. No socket, no thread.
#ifndef GPUWARDEN_TESTS_SERVE_FAKE_POD_RESOURCES_H_
#define GPUWARDEN_TESTS_SERVE_FAKE_POD_RESOURCES_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "k8s/pod_resources.h"

namespace gw::serve::testing {

struct FakeKubelet {
  std::mutex mu;
  std::vector<k8s::PodResources> pods;
  k8s::Allocatable allocatable;
  std::string fail;  // non-empty: every call fails with it
  int lists = 0;
};

class FakePodResourcesApi : public k8s::PodResourcesApi {
 public:
  explicit FakePodResourcesApi(std::shared_ptr<FakeKubelet> kubelet)
      : kubelet_(std::move(kubelet)) {}
  std::string Endpoint() const override { return "fake://kubelet"; }
  Expected<std::vector<k8s::PodResources>> List(double) override {
    std::lock_guard<std::mutex> lock(kubelet_->mu);
    ++kubelet_->lists;
    if (!kubelet_->fail.empty()) return Error{kubelet_->fail};
    return kubelet_->pods;
  }
  Expected<k8s::Allocatable> GetAllocatable(double) override {
    std::lock_guard<std::mutex> lock(kubelet_->mu);
    if (!kubelet_->fail.empty()) return Error{kubelet_->fail};
    return kubelet_->allocatable;
  }

 private:
  std::shared_ptr<FakeKubelet> kubelet_;
};

// One pod: its containers' devices as (container, resource, ids).
struct FakeDevices {
  std::string container, resource;
  std::vector<std::string> ids;
};
inline k8s::PodResources FakePod(std::string ns, std::string name,
                                 const std::vector<FakeDevices>& devices) {
  k8s::PodResources pod;
  pod.ns = std::move(ns);
  pod.name = std::move(name);
  for (const FakeDevices& d : devices) {
    k8s::ContainerResources* c = nullptr;
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

}  // namespace gw::serve::testing

#endif  // GPUWARDEN_TESTS_SERVE_FAKE_POD_RESOURCES_H_
